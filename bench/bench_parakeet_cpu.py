"""What the published ASR (parakeet-tdt-0.6b-v2's architecture) costs on this machine's CPU, with random weights.

The weights cannot be fetched here, so the published sizes (duplexeval.judges.tiny_parakeet.
PUBLISHED_SIZE) are built with random weights: the encoder's arithmetic, which dominates,
is the same; the decoder emits what random weights emit. Prints build time, parameters and
x real time of `transcribe` through the project's ASR interface. Run in .venv-parakeet:

    .venv-parakeet/bin/python bench/bench_parakeet_cpu.py [--seconds 20] [--toy]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--toy", action="store_true", help="the test model instead of the published size")
    args = ap.parse_args()
    import torch

    from duplexeval.judges.asr import transcribe
    from duplexeval.judges.tiny_parakeet import PUBLISHED_SIZE, write_tiny_parakeet

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        path = write_tiny_parakeet(Path(tmp) / "m.nemo", **({} if args.toy else PUBLISHED_SIZE))
        built = time.perf_counter() - t0
        import nemo.collections.asr as nemo_asr

        params = sum(p.numel() for p in nemo_asr.models.ASRModel.restore_from(str(path), map_location="cpu").parameters())
        audio = (0.1 * np.random.default_rng(0).standard_normal(int(16000 * args.seconds))).astype(np.float32)
        spec = {"backend": "parakeet-tdt", "model": str(path), "options": {"device": "cpu"}}
        transcribe(audio[:16000], 16000, spec, cache=False)           # load and warm up
        t0 = time.perf_counter()
        transcribe(audio, 16000, spec, cache=False)
        wall = time.perf_counter() - t0
    print(f"parakeet-tdt {'toy' if args.toy else 'published size'} (random weights): {params / 1e6:.1f} M parameters, "
          f"built in {built:.1f} s; {args.seconds:g} s of audio in {wall:.1f} s = {args.seconds / wall:.2f}x real time "
          f"on {torch.get_num_threads()} CPU threads")


if __name__ == "__main__":
    main()
