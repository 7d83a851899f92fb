"""Harness overhead against `silent` and batched-session throughput, in x real time (not a timed test).

1. Overhead: `silent` does no work, so a lockstep session against it measures the
   harness alone (frame loop, resampling, WebSocket over a Unix socket, encode/decode,
   the server base). Printed per pipeline window K (frames in flight, for stimuli that
   do not listen to the model): CPU per 80 ms frame of the harness process plus the
   server process, as "x real time per core" (frame duration / CPU per frame), and
   wall-clock x real time. Model start-up is excluded (paid once per run, not per item).
2. Batched sessions: one server started with `--max-sessions` max(N), N sessions at
   once through `duplexeval.runner.batch.run_sessions`, for N in --batch; throughput
   (audio seconds per wall second, all sessions together) as a ratio to N = 1, in one
   run. The Moshi shim declares max_sessions 1 (docs/runner.md, "Batched sessions"), so
   moshi-tiny is not in the list yet.

    .venv/bin/python bench/bench_runner.py [--seconds 300] [--windows 1,16] [--batch 1,2,4,8]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import inspect
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from duplexeval.runner import FileStimulus, load_model_spec  # noqa: E402
from duplexeval.runner.backends import make_backend  # noqa: E402
from duplexeval.runner.session import run_session  # noqa: E402

HAS_WINDOW = "pipeline_frames" in inspect.signature(run_session).parameters  # False on the pre-issue-15 code
TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


def proc_cpu_s(pid: int) -> float:
    """utime + stime of a process from /proc (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * TICK_S


def noise(seconds: float, rate: int, seed: int) -> np.ndarray:
    return (0.1 * np.random.default_rng(seed).standard_normal(int(seconds * rate))).astype(np.float32)


def session_kwargs(window: int | None) -> dict:
    return {"pipeline_frames": window} if HAS_WINDOW and window is not None else {}


def overhead(args: argparse.Namespace) -> None:
    spec = load_model_spec("silent")
    audio = noise(args.seconds, args.rate, 0)
    windows = [int(w) for w in args.windows.split(",")] if HAS_WINDOW else [None]
    backend = make_backend(spec)
    endpoint = backend.start()
    pid = backend.proc.pid
    rows: dict[int | None, list[tuple[float, float, float]]] = {w: [] for w in windows}
    try:
        for _ in range(args.repeats):
            for w in windows:  # interleaved, so machine load hits every window alike
                c0, s0, t0 = time.process_time(), proc_cpu_s(pid), time.perf_counter()
                out = asyncio.run(run_session(endpoint, spec, FileStimulus(audio, args.rate), "lockstep", args.rate,
                                              **session_kwargs(w)))
                wall, cpu_c, cpu_s = time.perf_counter() - t0, time.process_time() - c0, proc_cpu_s(pid) - s0
                if out.fault is not None:
                    raise SystemExit(f"session failed: {out.fault}")
                rows[w].append((wall / out.frames, cpu_c / out.frames, cpu_s / out.frames))
        frame_s = out.frame_samples / args.rate
        print(f"harness overhead against silent: {out.frames} frames of {frame_s * 1000:g} ms ({args.seconds:g} s), "
              f"median of {args.repeats}, {os.cpu_count()} CPUs")
        for w, r in rows.items():
            wall, cli, srv = (statistics.median(x[i] for x in r) for i in range(3))
            print(f"  window K={w or 1}: CPU {1000 * (cli + srv):.3f} ms/frame (harness {1000 * cli:.3f} + server "
                  f"{1000 * srv:.3f}) = {frame_s / (cli + srv):.0f}x real time per core; wall {1000 * wall:.3f} ms/frame "
                  f"= {frame_s / wall:.0f}x real time")
    finally:
        backend.stop()


def batched(args: argparse.Namespace, model: str) -> None:
    from duplexeval.runner.batch import run_sessions

    ns = [int(n) for n in args.batch.split(",")]
    spec = load_model_spec(model)
    spec = dataclasses.replace(spec, command=spec.command + ("--max-sessions", str(max(ns))))
    backend = make_backend(spec)
    endpoint = backend.start()
    speeds: dict[int, list[float]] = {n: [] for n in ns}
    try:
        for _ in range(args.repeats):
            for n in ns:
                stimuli = [FileStimulus(noise(args.batch_seconds, args.rate, i), args.rate) for i in range(n)]
                t0 = time.perf_counter()
                outs = asyncio.run(run_sessions(endpoint, spec, stimuli, "lockstep", args.rate, list(range(n)),
                                                max_sessions=n, pipeline_frames=args.batch_window))
                wall = time.perf_counter() - t0
                bad = [o.fault for o in outs if o.fault is not None]
                if bad:
                    raise SystemExit(f"{model}: batched session failed: {bad[0]}")
                speeds[n].append(n * args.batch_seconds / wall)
    finally:
        backend.stop()
    base = statistics.median(speeds[ns[0]])
    cells = ", ".join(f"N={n}: {statistics.median(s):.0f}x ({statistics.median(s) / base:.2f})" for n, s in speeds.items())
    print(f"  {model} (window K={args.batch_window}): {cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=300.0, help="audio per overhead session")
    parser.add_argument("--rate", type=int, default=16000, help="harness rate")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--windows", default="1,16", help="pipeline windows K to compare (frames in flight)")
    parser.add_argument("--batch", default="1,2,4,8", help="concurrent sessions N ('' to skip)")
    parser.add_argument("--batch-seconds", type=float, default=60.0, help="audio per batched session")
    parser.add_argument("--batch-window", type=int, default=1,
                        help="window K of batched sessions (1: as the adaptive MPE scheduler runs)")
    parser.add_argument("--batch-models", default="silent,babbler,oracle")
    args = parser.parse_args()
    overhead(args)
    if args.batch and HAS_WINDOW:
        print(f"batched sessions: throughput in x real time (all sessions together), ratio to N={args.batch.split(',')[0]}, "
              f"{args.batch_seconds:g} s per session, median of {args.repeats}")
        for model in args.batch_models.split(","):
            batched(args, model)


if __name__ == "__main__":
    main()
