"""Soak: one model server through N sequential sessions, then one long lockstep session,
with the harness's and the server's resident memory (RSS) sampled.

Prints RSS growth per session (over the sequential sessions, after a few warm-up ones)
and per hour of audio (over the long session), for the harness and the server, plus the
memory the harness holds by design for a session (its recording: what it heard and what
the model said, float32, until the item folder is written) so a leak can be told apart
from that. Runs much faster than real time against `silent`. Not a timed test.

    .venv/bin/python bench/bench_soak.py [--sessions 200] [--session-seconds 2] [--minutes 30] [--model silent]

RSS is read from psutil when installed, else from /proc/<pid>/status (VmRSS).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from duplexeval.runner import FileStimulus, load_model_spec  # noqa: E402
from duplexeval.runner.backends import make_backend  # noqa: E402
from duplexeval.runner.session import run_session  # noqa: E402
from duplexeval.runner.stimulus import Stimulus  # noqa: E402

WARMUP_SESSIONS = 5


def rss_bytes(pid: int) -> int:
    try:
        import psutil

        return psutil.Process(pid).memory_info().rss
    except ImportError:
        pass
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


class Sampler(threading.Thread):
    """Peak RSS of each pid while running (every `period` s)."""

    def __init__(self, pids: dict[str, int], period: float = 0.2):
        super().__init__(daemon=True)
        self.pids, self.period = pids, period
        self.peak = {k: rss_bytes(p) for k, p in pids.items()}
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.wait(self.period):
            for k, p in self.pids.items():
                self.peak[k] = max(self.peak[k], rss_bytes(p))

    def stop(self) -> dict[str, int]:
        self._halt.set()
        self.join()
        return self.peak


class NoiseStream(Stimulus):
    """`seconds` of low noise, made frame by frame (the bench holds no input array)."""

    def __init__(self, seconds: float, rate: int):
        self.seconds, self.src_rate = seconds, rate
        self.rng = np.random.default_rng(0)

    def bind(self, rate: int, frame_samples: int) -> None:
        super().bind(rate, frame_samples)
        self.n_frames = int(self.seconds * rate) // frame_samples

    def next_input(self, frame_idx: int) -> np.ndarray | None:
        if frame_idx >= self.n_frames:
            return None
        return (0.01 * self.rng.standard_normal(self.frame_samples)).astype(np.float32)


def mib(n: float) -> str:
    return f"{n / 2**20:.1f} MiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=200, help="sequential sessions on one server")
    parser.add_argument("--session-seconds", type=float, default=2.0, help="audio per sequential session")
    parser.add_argument("--minutes", type=float, default=30.0, help="audio of the long lockstep session")
    parser.add_argument("--model", default="silent")
    parser.add_argument("--rate", type=int, default=16000)
    args = parser.parse_args()

    spec = load_model_spec(args.model)
    backend = make_backend(spec)
    endpoint = backend.start()
    server_pid = getattr(getattr(backend, "proc", None), "pid", None)
    pids = {"harness": os.getpid(), **({"server": server_pid} if server_pid else {})}
    if not server_pid:
        print(f"(the {spec.backend} backend has no local server process: sampling the harness only)")
    rng = np.random.default_rng(0)
    audio = (0.05 * rng.standard_normal(int(args.session_seconds * args.rate))).astype(np.float32)
    try:
        # ---- N sequential sessions -----------------------------------------------------
        faults = 0
        t0 = time.perf_counter()
        start: dict[str, int] = {}
        for i in range(args.sessions + WARMUP_SESSIONS):
            if i == WARMUP_SESSIONS:
                start = {k: rss_bytes(p) for k, p in pids.items()}
                t0 = time.perf_counter()
            out = asyncio.run(run_session(endpoint, spec, FileStimulus(audio, args.rate), "lockstep", args.rate))
            faults += out.fault is not None
            del out
        took = time.perf_counter() - t0
        end = {k: rss_bytes(p) for k, p in pids.items()}
        print(f"{args.sessions} sequential sessions of {args.session_seconds:g} s ({spec.id}, lockstep) "
              f"in {took:.1f} s, {faults} faults, after {WARMUP_SESSIONS} warm-up sessions:")
        for k in pids:
            growth = end[k] - start[k]
            print(f"  {k:8s} RSS {mib(start[k])} -> {mib(end[k])}: {growth / max(1, args.sessions) / 1024:+.1f} KiB per session")

        # ---- one long lockstep session -------------------------------------------------
        seconds = args.minutes * 60
        before = {k: rss_bytes(p) for k, p in pids.items()}
        sampler = Sampler(pids)
        sampler.start()
        t0 = time.perf_counter()
        out = asyncio.run(run_session(endpoint, spec, NoiseStream(seconds, args.rate), "lockstep", args.rate))
        took = time.perf_counter() - t0
        peak = sampler.stop()
        held = sum(a.nbytes for a in out.heard) + (out.said.nbytes if out.said is not None else 0)
        assert out.ok, out.fault
        del out
        after = {k: rss_bytes(p) for k, p in pids.items()}
        hours = seconds / 3600
        print(f"one lockstep session of {args.minutes:g} min of audio in {took:.1f} s ({seconds / took:.0f}x real time):")
        for k in pids:
            g = peak[k] - before[k]
            print(f"  {k:8s} RSS {mib(before[k])} -> peak {mib(peak[k])} -> after {mib(after[k])}: "
                  f"{mib(g / hours)} per hour of audio (peak - before)")
        print(f"  the session's recording held by the harness until written: {mib(held)} "
              f"({mib(held / hours)} per hour of audio at {args.rate} Hz float32, two channels)")
    finally:
        backend.stop()


if __name__ == "__main__":
    main()
