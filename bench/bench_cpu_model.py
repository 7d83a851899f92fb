"""CPU a CPU-only model (`launch.gpus: 0`) spends per second of audio it hears: x real time per core.

The paper-suite projection (bench/project_paper_suites.py) puts a model whose spec says
`launch.gpus: 0` on the cluster's CPU cores, not its GPUs: its sessions run side by side,
each needing the CPU it was measured to use per second of audio. This script measures
that figure: it runs a suite (default `cascaded-baseline`: two embedded Duplex-MPE scenes
and the embedded MTR safety dialogue) through the harness as `duplexeval run` does, with the
real agent process (Silero VAD endpointing, faster-whisper tiny.en int8, flite), and reads
the CPU time (user + system, its reaped children included) of every model server process
from /proc while it runs. Audio is what the sessions played: one `duration_s` per item, or
one session per dialogue where MTR runs history as heard in one pass.

The LLM step goes to a STAND-IN: the small OpenAI-compatible server of the cascade's CI
test (tests/test_cascaded_baseline_run.py, `AssistantLLM`) on 127.0.0.1, in this process,
called by the real `openai` client inside the model process. A real LLM's compute is not
part of the figure (the projection does not cost LLM calls, as it does not cost judges).

Start-up (imports, loading the VAD and ASR) is a fixed cost per server, not per second of
audio: it is measured apart, as the CPU a freshly started server spends before its socket
listens, and subtracted once per server process seen (lazily loaded parts stay counted).

    PYTHONPATH=$PWD .venv/bin/python bench/bench_cpu_model.py --model cascaded-baseline [--clock realtime]

Prints the figure and a `launch.cpu_step` block for the model spec (specs/schema/model.schema.json).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class CpuWatch:
    """Polls /proc for the processes whose command line holds `marker` and keeps each one's
    last CPU time (utime + stime + cutime + cstime), so a server that has exited still counts
    up to its last sample (at most one poll interval is missed per process)."""

    marker: str
    interval_s: float = 0.05
    seen: dict[tuple[int, int], float] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)

    def poll(self) -> None:
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                cmdline = Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                if self.marker not in cmdline or "bench_cpu_model" in cmdline:
                    continue
                stat = Path(entry.path, "stat").read_text()
            except OSError:  # gone between listing and reading
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            # fields[11..14]: utime stime cutime cstime; fields[19]: starttime (proc(5), counted from state)
            cpu = sum(int(x) for x in fields[11:15]) / TICK
            self.seen[(int(entry.name), int(fields[19]))] = cpu

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.poll()
            time.sleep(self.interval_s)

    def start(self) -> CpuWatch:
        threading.Thread(target=self._loop, daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self.poll()

    @property
    def cpu_s(self) -> float:
        return sum(self.seen.values())


def startup_cpu_s(command: list[str], env: dict[str, str]) -> float:
    """CPU seconds a fresh server spends until its socket listens (then it is stopped)."""
    with tempfile.TemporaryDirectory() as tmp:
        sock = Path(tmp, "s.sock")
        argv = [part.replace("{python}", sys.executable).replace("{socket}", str(sock)) for part in command]
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        cpu = 0.0
        try:
            while not sock.exists():
                if proc.poll() is not None:
                    tail = proc.stderr.read().decode(errors="replace")[-400:] if proc.stderr else ""
                    raise SystemExit(f"error: the server exited ({proc.returncode}) before listening: {tail}")
                if time.monotonic() > deadline:
                    raise SystemExit("error: the server did not listen within 120 s")
                time.sleep(0.02)
            fields = Path(f"/proc/{proc.pid}/stat").read_text()
            fields_after = fields[fields.rindex(")") + 2:].split()
            cpu = sum(int(x) for x in fields_after[11:15]) / TICK
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return cpu


def audio_played_s(run_dir: Path) -> dict[str, float]:
    """Seconds of audio the sessions played, per benchmark: each item's `duration_s`, except
    items cut from one history-as-heard session (status.json `one_pass`), once per dialogue."""
    total: dict[str, float] = {}
    one_pass: dict[tuple[str, str], float] = {}
    for status_path in sorted(run_dir.glob("*/*/items/*/status.json")):
        status = json.loads(status_path.read_text())
        if status.get("status") != "ok":
            continue
        frame_s = status["frame_samples"] / status["rate"]
        if "one_pass" in status:
            dialogue = status_path.parent.name.rsplit(".r", 1)[0]
            key = (str(status_path.parents[2]), dialogue)
            one_pass[key] = max(one_pass.get(key, 0.0), status["one_pass"]["session_frames"] * frame_s)
        else:
            bench = status_path.parents[2].name
            total[bench] = total.get(bench, 0.0) + float(status["duration_s"])
    for (bench_dir, _), seconds in one_pass.items():
        total[Path(bench_dir).name] = total.get(Path(bench_dir).name, 0.0) + seconds
    return total


def server_marker(command: list[str]) -> str:
    """What identifies the model's server in a process's command line: its `-m` module, else its program."""
    if "-m" in command[:-1]:
        return command[command.index("-m") + 1]
    return command[1] if command[0] == "{python}" and len(command) > 1 else command[0]


def cpu_models() -> list[str]:
    from duplexeval.specs.registry import default_registry

    return sorted(s.id for s in default_registry().all("model")
                  if int(s.data.get("launch", {}).get("gpus", 1) or 0) == 0
                  and s.data.get("launch", {}).get("backend") == "local")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a model whose spec says launch.gpus: 0 and backend: local")
    parser.add_argument("--suite", default="cascaded-baseline",
                        help="the suite to play (default cascaded-baseline: 2 embedded MPE scenes + the MTR safety dialogue)")
    parser.add_argument("--benchmarks", nargs="*", default=None, help="only these benchmarks of the suite")
    parser.add_argument("--clock", choices=("realtime", "lockstep"), default="realtime",
                        help="the clock (default realtime, the clock paper-mtr runs it on)")
    parser.add_argument("--limit", type=int, default=None, help="units per benchmark (default the suite's)")
    parser.add_argument("--keep", type=Path, default=None, help="keep the run folder under this directory")
    args = parser.parse_args(argv)
    models = cpu_models()
    if args.model not in models:
        parser.error(f"--model {args.model!r}: not a CPU model (launch.gpus: 0, backend: local); "
                     f"those are: {', '.join(models) or 'none'}")
    if args.limit is not None and args.limit < 1:
        parser.error(f"--limit must be >= 1, got {args.limit}")
    from duplexeval.specs.registry import default_registry

    suites = sorted(s.id for s in default_registry().all("suite"))
    if args.suite not in suites:
        parser.error(f"--suite {args.suite!r}: no such suite (specs/suites/); e.g. cascaded-baseline")

    sys.path.insert(0, str(ROOT / "tests"))
    from test_cascaded_baseline_run import KEY, AssistantLLM  # the CI test's LLM stand-in

    from duplexeval.commands.run import run_suite

    spec = default_registry().get("model", args.model).data
    llm = AssistantLLM().start()
    env_vars = {"DUPLEXEVAL_CASCADE_BASE_URL": llm.url + "/v1", "DUPLEXEVAL_CASCADE_MODEL": "stand-in-assistant",
                "DUPLEXEVAL_CASCADE_API_KEY_ENV": "BENCH_CPU_MODEL_KEY", "BENCH_CPU_MODEL_KEY": KEY}
    os.environ.update(env_vars)
    scratch = tempfile.TemporaryDirectory(prefix="bench-cpu-model-")
    try:
        startup = startup_cpu_s(list(spec["launch"]["command"]), dict(os.environ))
        runs = Path(args.keep) if args.keep else Path(scratch.name)
        watch = CpuWatch(marker=server_marker(list(spec["launch"]["command"]))).start()
        wall = time.monotonic()
        run_dir, outcomes = run_suite(args.suite, models=[args.model], benchmarks=args.benchmarks,
                                      run_id=f"bench-cpu-{args.model}-{args.clock}", runs_dir=runs,
                                      limit=args.limit, clock=args.clock)
        wall = time.monotonic() - wall
        watch.stop()
    finally:
        llm.stop()
    try:
        return report(args, run_dir, outcomes, watch, startup, wall, llm.requests)
    finally:
        scratch.cleanup()


def report(args: argparse.Namespace, run_dir: Path, outcomes: list, watch: CpuWatch, startup: float, wall: float,
           requests: list[dict]) -> int:
    """Prints the figure and the spec block; 1 when a job did not finish."""
    bad = [(o.job.key, o.status, o.reason) for o in outcomes if o.status != "scored"]
    if bad:
        print(f"error: jobs did not finish: {bad}", file=sys.stderr)
        return 1
    per_bench = audio_played_s(run_dir)
    audio = sum(per_bench.values())
    if audio <= 0 or not watch.seen:
        print(f"error: nothing to measure: {audio:.1f} s of audio played, {len(watch.seen)} server processes seen "
              f"(marker {watch.marker!r})", file=sys.stderr)
        return 1
    servers = len(watch.seen)
    cpu = watch.cpu_s
    per_audio = max(cpu - startup * servers, 0.0) / audio if audio else float("nan")
    x_per_core = 1.0 / per_audio if per_audio > 0 else float("inf")
    chats = sum(1 for q in requests if q["path"].endswith("/chat/completions"))
    print(f"model {args.model}, suite {args.suite}, clock {args.clock}: {audio:.1f} s of audio played "
          f"({len(outcomes)} jobs, {chats} LLM calls to the 127.0.0.1 stand-in), wall {wall:.1f} s (scoring included)")
    print("  audio per benchmark: " + ", ".join(f"{b} {sec:.1f} s" for b, sec in sorted(per_bench.items())))
    print(f"  model server processes: {servers}; their CPU (children included): {cpu:.2f} s; "
          f"start-up {startup:.2f} s each (measured apart, subtracted)")
    print(f"  with start-up: {cpu / audio:.4f} CPU s per audio s ({audio / cpu:.1f}x real time per core)")
    print(f"  per audio second: {per_audio:.4f} CPU s -> {x_per_core:.1f}x real time per core")
    today = datetime.date.today().isoformat()
    limit = f" --limit {args.limit}" if args.limit else ""
    print("\nlaunch:\n  cpu_step:\n"
          f"    x_real_time_per_core: {x_per_core:.1f}\n    kind: measured\n"
          f"    source: \"bench/bench_cpu_model.py --model {args.model} --clock {args.clock}{limit} on a "
          f"{os.cpu_count()}-core machine, {today}: {audio:.0f} s of audio ({args.suite}), {cpu:.1f} CPU s, start-up excluded\"")
    return 0


if __name__ == "__main__":
    sys.exit(main())
