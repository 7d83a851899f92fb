"""Docker backend vs local backend, side by side in one run: start-up time and per-frame cost.

Start-up: from `backend.start()` to a socket that accepts connections (container create +
start + the server's import time), the median of --starts tries per backend. Per frame:
one lockstep session of --seconds of audio against the same agent in each backend,
alternating, so the ratio is measured under the same machine load. Needs a Docker engine
and the agents image (`duplexeval image base && duplexeval image build silent`).

    .venv/bin/python bench/bench_docker.py [--model silent] [--seconds 120] [--starts 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from duplexeval.runner import FileStimulus, load_model_spec  # noqa: E402
from duplexeval.runner.backends import make_backend  # noqa: E402
from duplexeval.runner.session import run_session  # noqa: E402

BACKENDS = ("local", "docker")


def start_time(spec) -> float:
    backend = make_backend(spec)
    t0 = time.perf_counter()
    try:
        backend.start()
        return time.perf_counter() - t0
    finally:
        backend.stop()


def frame_ms(spec, audio: np.ndarray, rate: int) -> tuple[float, int]:
    backend = make_backend(spec)
    endpoint = backend.start()
    try:
        t0 = time.perf_counter()
        out = asyncio.run(run_session(endpoint, spec, FileStimulus(audio, rate), "lockstep", rate))
        wall = time.perf_counter() - t0
    finally:
        backend.stop()
    if out.fault is not None:
        raise SystemExit(f"{spec.backend}: session failed: {out.fault}")
    return 1000.0 * wall / out.frames, out.frames


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="silent")
    parser.add_argument("--seconds", type=float, default=120.0, help="audio per session")
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--rate", type=int, default=16000)
    args = parser.parse_args()
    specs = {b: load_model_spec(args.model).with_backend(b) for b in BACKENDS}
    starts: dict[str, list[float]] = {b: [] for b in BACKENDS}
    for _ in range(args.starts):
        for b in BACKENDS:
            starts[b].append(start_time(specs[b]))
    audio = (0.1 * np.random.default_rng(0).standard_normal(int(args.seconds * args.rate))).astype(np.float32)
    per_frame: dict[str, list[float]] = {b: [] for b in BACKENDS}
    for _ in range(2):
        for b in BACKENDS:
            ms, frames = frame_ms(specs[b], audio, args.rate)
            per_frame[b].append(ms)
    frame_s = float(specs["local"].audio.get("frame_ms", 80)) / 1000.0
    for b in BACKENDS:
        pf = statistics.median(per_frame[b])
        print(f"{args.model} {b:6}: start-up {statistics.median(starts[b]):.2f} s (median of {args.starts}); "
              f"{pf:.3f} ms per {frame_s * 1000:g} ms frame ({frame_s * 1000 / pf:.0f}x real time, {frames} frames)")
    ratio = statistics.median(per_frame["docker"]) / statistics.median(per_frame["local"])
    print(f"docker/local per-frame ratio: {ratio:.2f}; start-up ratio: "
          f"{statistics.median(starts['docker']) / statistics.median(starts['local']):.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
