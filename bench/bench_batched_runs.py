"""Batched sessions in whole runs: `duplexeval run` on the same units at N = 1, 2, 4, 8 sessions per server.

For each model and each N in `--sessions`, runs

    duplexeval run --models M --benchmarks mpe-explicit --limit L --max-sessions N

as a child process (serial executor, one model server), side by side in this one process
tree, and times the playing of the units alone: from the line announcing the job's units
(planning done: the summary line under its header) to the line announcing its scoring (every unit played). Scoring (VAD,
ASR, judges) is excluded. Prints per model the speedup of each N over N = 1, and whether
the run's files equal the N = 1 run's: item files, records.jsonl and results.json (the
reference agents must be byte-identical). moshi-tiny's width-N server runs other kernels
than width 1 (docs/runner.md, "Batched sessions in runs"): for it the script prints the
largest difference between the recordings' model channels in s16 steps and whether the
records and results say the same apart from the recordings' hashes.

    .venv/bin/python bench/bench_batched_runs.py [--sessions 1,2,4,8] [--limit 8]
        [--models silent,babbler,oracle] [--moshi-limit 8] [--no-moshi] [--repeats 2] [--runs-dir DIR]

An untimed run of `silent` first synthesises the scenes' speech into the TTS cache.

With more than one round, each round's times, ratios and the load average after each run
are printed too: on a machine shared with other work the rounds can differ by 2x.

A spec's own `launch.max_sessions` is the most a run may use: the reference agents
declare 4 and moshi-tiny 8, so the reference agents' N = 8 runs at 4 (printed as such).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import soundfile as sf  # noqa: E402

from duplexeval.runner import load_model_spec  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BENCH = "mpe-explicit"


def warm_up(limit: int, runs_dir: Path) -> None:
    """One untimed run of `silent` on the same conversations: the scenes' speech is
    synthesised (and cached) while a stimulus is first built, which must not count for N = 1."""
    play_time("silent", 1, limit, runs_dir / "warm-up")


def play_time(model: str, n: int, limit: int, runs_dir: Path) -> tuple[float, Path]:
    """Seconds from the job's plan summary to 'scoring' of one `duplexeval run` at --max-sessions n."""
    run_id = f"{model}-n{n}"
    cmd = [sys.executable, "-m", "duplexeval.cli", "run", "--models", model, "--benchmarks", BENCH,
           "--limit", str(limit), "--max-sessions", str(n), "--runs-dir", str(runs_dir), "--run-id", run_id]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    start = end = None
    lines: list[str] = []
    for line in proc.stdout:
        lines.append(line)
        text = line.strip()
        if start is None and len(lines) > 1 and lines[-2].startswith("[1/1] "):
            start = time.monotonic()  # the plan's summary line ("8 conversations"): units start now
        elif start is not None and end is None and text.startswith("scoring "):
            end = time.monotonic()
    if proc.wait() != 0 or start is None or end is None:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{''.join(lines[-30:])}")
    return end - start, runs_dir / run_id / model / BENCH


def job_files(job: Path) -> dict[str, bytes]:
    return {str(p.relative_to(job)): p.read_bytes() for p in sorted(job.rglob("*")) if p.is_file()}


def without_hashes(data: bytes, jsonl: bool) -> list:
    """The JSON of records.jsonl / results.json with every sha256 digest left out: what the
    scores say, apart from the hashes of the (slightly different) recordings."""
    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if "sha256" not in k and not _digest(v)}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x

    text = data.decode()
    return [strip(json.loads(line)) for line in text.splitlines() if line] if jsonl else [strip(json.loads(text))]


def _digest(v) -> bool:
    return isinstance(v, str) and len(v) == 64 and all(c in "0123456789abcdef" for c in v)


def recording_lsb_diff(a: Path, b: Path) -> int:
    """Largest |difference| of the model channels of two jobs' recordings, in s16 steps."""
    worst = 0
    for rec in sorted((a / "items").glob("*/recording.wav")):
        x, _ = sf.read(rec, dtype="int16")
        y, _ = sf.read(b / "items" / rec.parent.name / "recording.wav", dtype="int16")
        if x.shape != y.shape:
            return -1
        worst = max(worst, int(np.abs(x[:, 1].astype(np.int32) - y[:, 1].astype(np.int32)).max()))
    return worst


def bench_model(model: str, sessions: list[int], limit: int, runs_dir: Path, repeats: int) -> dict[int, float]:
    """Median playing time per N over `repeats` rounds (N interleaved within a round); prints the comparison."""
    width = load_model_spec(model).sessions_limit
    runs: dict[int, list[float]] = {n: [] for n in sessions}
    loads: dict[int, list[float]] = {n: [] for n in sessions}
    jobs: dict[int, Path] = {}
    for r in range(repeats):
        for n in (sessions if r % 2 == 0 else sessions[::-1]):  # 1,2,4,8 then 8,4,2,1: load drifts cancel
            t, jobs[n] = play_time(model, n, limit, runs_dir / f"r{r}")
            runs[n].append(t)
            loads[n].append(os.getloadavg()[0])
    times = {n: statistics.median(ts) for n, ts in runs.items()}
    if repeats > 1:  # each round's own ratios: on a shared machine one round can be far off the other
        ref = sessions[0]
        for r in range(repeats):
            print(f"  {model} round {r + 1}: " + ", ".join(
                f"N={n} {runs[n][r]:.1f} s ({runs[ref][r] / runs[n][r]:.2f}x, load {loads[n][r]:.1f})"
                for n in sessions), flush=True)
    ref = jobs[sessions[0]]
    base = job_files(ref)
    for n in sessions:
        files = job_files(jobs[n])
        same = files == base
        records = all(without_hashes(files[k], k.endswith(".jsonl")) == without_hashes(base[k], k.endswith(".jsonl"))
                      for k in ("records.jsonl", "results.json"))
        note = f" (runs at {width}: the spec's launch.max_sessions)" if n > width else ""
        line = (f"  {model} N={n}{note}: playing {times[n]:.1f} s, speedup {times[sessions[0]] / times[n]:.2f}x; "
                f"files identical to N={sessions[0]}: {'yes' if same else 'no'}")
        if not same:
            diff = recording_lsb_diff(ref, jobs[n])
            line += (f"; records.jsonl and results.json identical apart from the recordings' hashes: "
                     f"{'yes' if records else 'no'}; "
                     f"recordings' model channel differs by at most {diff} s16 step(s)")
        print(line, flush=True)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", default="1,2,4,8")
    ap.add_argument("--models", default="silent,babbler,oracle")
    ap.add_argument("--limit", type=int, default=8, help="MPE conversations per reference-agent run")
    ap.add_argument("--moshi-limit", type=int, default=8, help="MPE conversations per moshi-tiny run")
    ap.add_argument("--no-moshi", action="store_true")
    ap.add_argument("--runs-dir", type=Path, default=None)
    ap.add_argument("--repeats", type=int, default=2,
                    help="rounds of N = 1, 2, 4, 8 (every second one in reverse order); the median is printed")
    args = ap.parse_args()
    sessions = [int(s) for s in args.sessions.split(",")]
    runs_dir = args.runs_dir or Path(tempfile.mkdtemp(prefix="bench-batched-"))
    print(f"batched sessions in `duplexeval run` ({BENCH}, serial executor, lockstep; playing time, scoring "
          f"excluded), {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; runs in {runs_dir}", flush=True)
    warm_up(max(args.limit, 0 if args.no_moshi else args.moshi_limit), runs_dir)
    total: dict[int, float] = {n: 0.0 for n in sessions}
    for model in [m for m in args.models.split(",") if m]:
        for n, t in bench_model(model, sessions, args.limit, runs_dir, args.repeats).items():
            total[n] += t
    ref = sessions[0]
    if args.models:
        print("reference agents (" + args.models + ", together): "
              + ", ".join(f"N={n}: {total[ref] / total[n]:.2f}x" for n in sessions), flush=True)
    if not args.no_moshi:
        moshi = bench_model("moshi-tiny", sessions, args.moshi_limit, runs_dir, args.repeats)
        for n in sessions:
            print(f"moshi-tiny speedup N={n}: {moshi[ref] / moshi[n]:.2f}x", flush=True)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
