"""Per-frame speed of moshi-tiny (Moshi's real code path, random tiny weights) over protocol v1.

Starts the model from its spec like every run does (`--backend local` by default: the
shim as a subprocess on one CPU thread; `--backend docker`: the images/moshi container),
then plays seeded audio at the model's own 24 kHz in lockstep, one frame at a time,
timing each round trip (harness -> socket -> Mimi encode -> LM step -> Mimi decode ->
socket -> harness). Also: the teacher-forced path (a second Mimi encode per frame), one
snapshot + restore (fork), and a realtime session's underruns. Not a timed test; the
figures go into docs/models.md. Then batched sessions: for each N in `--sessions`, a server
started with `--max-sessions N` (one LMGen batch of width N) runs N sessions at once
(`duplexeval.runner.batch.run_sessions`, lockstep, window 1 as MPE runs); throughput is
all sessions' audio over the wall time, as a ratio to N = 1 (docs/runner.md, "Batched
sessions"). `--batched-only` skips the single-session figures.

    .venv/bin/python bench/bench_moshi_tiny.py [--seconds 30] [--backend local|docker]
        [--sessions 1,2,4] [--batched-seconds 20] [--batched-only]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from duplexeval.protocol.wire import FrameKind  # noqa: E402
from duplexeval.runner import FileStimulus, load_model_spec  # noqa: E402
from duplexeval.runner.backends import make_backend  # noqa: E402
from duplexeval.runner.batch import run_sessions  # noqa: E402
from duplexeval.runner.client import ProtocolClient  # noqa: E402
from duplexeval.runner.session import run_session  # noqa: E402

FRAME_S = 0.08


def frames_of(seconds: float, n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds / FRAME_S) * n) / 24000
    x = (0.3 * np.sin(2 * np.pi * 220 * t * (1 + t / 8)) + 0.05 * rng.standard_normal(len(t))).astype(np.float32)
    return [x[i * n:(i + 1) * n] for i in range(len(x) // n)]


async def lockstep(endpoint, spec, seconds: float, forced: bool) -> tuple[list[float], float, float]:
    """(per-frame round trips in ms, snapshot ms, restore ms)."""
    client = await ProtocolClient.open(endpoint, spec.step_timeout_s)
    try:
        ready = await client.hello("lockstep", 0, timeout=spec.startup_timeout_s)
        n = ready["out_frame_samples"]
        inputs = frames_of(seconds, ready["in_frame_samples"], 1)
        forced_audio = frames_of(seconds, n, 2) if forced else None
        times = []
        for i, x in enumerate(inputs):
            t0 = time.perf_counter()
            if forced_audio is not None:
                await client.send_audio(FrameKind.FORCED, i, forced_audio[i])
            await client.send_audio(FrameKind.INPUT, i, x)
            await client.recv_output(i, n)
            times.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        await client.send_control({"type": "snapshot", "id": "s"})
        await client.recv_control("snapshot")
        snap_ms = (time.perf_counter() - t0) * 1000
        t0 = time.perf_counter()
        await client.send_control({"type": "restore", "id": "s"})
        await client.recv_control("restore")
        restore_ms = (time.perf_counter() - t0) * 1000
        return times, snap_ms, restore_ms
    finally:
        await client.close()


def summary(times: list[float]) -> str:
    q = statistics.quantiles(times, n=20)
    mean = statistics.fmean(times)
    return (f"{len(times)} frames: median {statistics.median(times):.1f} ms, p95 {q[18]:.1f} ms, "
            f"mean {mean:.1f} ms per 80 ms frame = {80.0 / mean:.2f}x real time")


def batched_throughput(spec, ns: list[int], seconds: float) -> list[tuple[int, float]]:
    """(N, x real time of all N sessions together) per N, each on its own `--max-sessions N` server."""
    out = []
    for n in ns:
        batched = dataclasses.replace(spec, command=spec.command + ("--max-sessions", str(n))) if n > 1 else spec
        backend = make_backend(batched)
        endpoint = backend.start()
        try:
            stimuli = [FileStimulus(np.concatenate(frames_of(seconds, 1920, 10 + k)), 24000) for k in range(n)]
            t0 = time.perf_counter()
            outcomes = asyncio.run(run_sessions(endpoint, batched, stimuli, "lockstep", 24000, list(range(n)),
                                                pipeline_frames=1))
            wall = time.perf_counter() - t0
        finally:
            backend.stop()
        faults = [o.fault for o in outcomes if o.fault is not None]
        if faults:
            raise SystemExit(f"N={n}: {faults[0]}")
        audio_s = sum(o.frames for o in outcomes) * FRAME_S
        out.append((n, audio_s / wall))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=30.0, help="audio per lockstep session")
    parser.add_argument("--model", default="moshi-tiny")
    parser.add_argument("--backend", help="local (default: the spec's) or docker")
    parser.add_argument("--sessions", default="1,2,4", help="batched sessions: the N to measure (comma-separated)")
    parser.add_argument("--batched-seconds", type=float, default=20.0, help="audio per batched session")
    parser.add_argument("--batched-only", action="store_true", help="skip the single-session figures")
    args = parser.parse_args()
    spec = load_model_spec(args.model)
    if args.backend:
        spec = spec.with_backend(args.backend)
    if not args.batched_only:
        single(spec, args)
    ns = [int(x) for x in args.sessions.split(",") if x.strip()]
    if ns:
        rates = batched_throughput(spec, ns, args.batched_seconds)
        base = rates[0][1] if rates[0][0] == 1 else None
        cells = [f"N={n}: {r:.2f}x" + (f" ({r / base:.2f})" if base else "") for n, r in rates]
        print(f"batched sessions ({args.batched_seconds:g} s each, lockstep, window 1; x real time of all "
              f"sessions together, ratio to N=1): " + ", ".join(cells))
        print(f"on {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the end")


def single(spec, args: argparse.Namespace) -> None:
    """The single-session figures: lockstep free and forced, fork, realtime."""
    backend = make_backend(spec)
    t0 = time.perf_counter()
    endpoint = backend.start()
    print(f"{spec.id} ({spec.backend} backend): listening after {time.perf_counter() - t0:.1f} s "
          f"(process start, imports, tiny model build, warm-up)")
    try:
        free, snap_ms, restore_ms = asyncio.run(lockstep(endpoint, spec, args.seconds, forced=False))
        print(f"lockstep, free:            {summary(free)}")
        forced, _, _ = asyncio.run(lockstep(endpoint, spec, args.seconds, forced=True))
        print(f"lockstep, teacher-forced:  {summary(forced)}")
        print(f"fork after {args.seconds:g} s: snapshot {snap_ms:.1f} ms, restore {restore_ms:.1f} ms (round trips)")
        rt = asyncio.run(run_session(endpoint, spec, FileStimulus(np.concatenate(frames_of(10.0, 1920, 3)), 24000),
                                     "realtime", 24000, seed=0))
        if rt.fault is not None:
            raise SystemExit(f"realtime session failed: {rt.fault}")
        print(f"realtime, 10 s:            {rt.frames} frames, {rt.stats['underrun_frames']} underrun "
              f"(frame 0 always is one)")
        print(f"on {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the end")
    finally:
        backend.stop()


if __name__ == "__main__":
    main()
