"""Lockstep harness throughput against `silent`, in x real time (not a timed test).

`silent` does no work, so this measures the harness alone: frame loop, resampling,
WebSocket over a Unix socket, encode/decode and the server base. Model start-up is
excluded (it is paid once per run, not per item).

    .venv/bin/python bench/bench_runner.py [--seconds 600] [--model silent] [--rate 16000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from duplexeval.runner import FileStimulus, load_model_spec  # noqa: E402
from duplexeval.runner.backends import make_backend  # noqa: E402
from duplexeval.runner.session import run_session  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=600.0, help="audio played per session")
    parser.add_argument("--model", default="silent")
    parser.add_argument("--rate", type=int, default=16000, help="harness rate")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    spec = load_model_spec(args.model)
    rng = np.random.default_rng(0)
    audio = (0.1 * rng.standard_normal(int(args.seconds * args.rate))).astype(np.float32)
    backend = make_backend(spec)
    endpoint = backend.start()
    try:
        speeds = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            out = asyncio.run(run_session(endpoint, spec, FileStimulus(audio, args.rate), "lockstep", args.rate))
            wall = time.perf_counter() - t0
            if out.fault is not None:
                raise SystemExit(f"session failed: {out.fault}")
            speeds.append(args.seconds / wall)
            print(f"{out.frames} frames, {args.seconds:g} s of audio in {wall:.2f} s: {args.seconds / wall:.0f}x real time")
        print(f"lockstep throughput against {spec.id} ({spec.audio.get('frame_ms')} ms frames, harness {args.rate} Hz): "
              f"median {sorted(speeds)[len(speeds) // 2]:.0f}x real time on {os.cpu_count()} CPUs")
    finally:
        backend.stop()


if __name__ == "__main__":
    main()
