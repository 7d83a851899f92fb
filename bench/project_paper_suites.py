"""Projected wall time of the full paper suites, per model, on 1 GPU and on an N-GPU Ray cluster.

No GPU has run a paper model through this harness yet, so the model's own step cost is an
assumption, stated on every line of the output and replaceable by a measurement
(`--step-ms moshi=41` from `bench/gpu_check_moshi.py` on a GPU machine). Everything else
comes from the specs: which models run which benchmarks (specs/suites/paper-*.yaml), each
benchmark's data size (`data.count`), rounds and context mode (fork or replay, from the
model's capabilities and the suite's clock), each model's frame length and GPU memory.

The projection, per job:
  audio seconds  = units x seconds of audio per unit (replay plays round k's history again)
  speed per GPU  = lockstep: N x frame_ms / step_ms(N) for a server stepping N sessions
                   in one batch (`--batch MODEL=N:MS`; N = 1 without batching);
                   realtime: sessions at exactly 1x each, as many as the GPU's compute
                   (a batch of N within a frame, or frame_ms / step_ms servers) and memory
                   (GPU GB / the spec's launch.gpu_memory_gb per server) allow
  wall           = audio seconds / (speed per GPU x GPUs)

The clock per model (issue 26, item 3): the paper suite runs MTR-DuplexBench on the
realtime clock, which cannot fork, so round k replays rounds 1..k-1. A model spec's
`latency_clock` says which clock reproduces its published timing (docs/runner.md, "The
clock per model"): a frame-synchronous model (the Moshi family, `latency_clock: lockstep`)
gives in lockstep the onsets a real-time listener hears, one frame earlier, as long as one
step fits in a frame, and lockstep can fork, so its MTR jobs are projected on lockstep +
fork; every other model keeps the suite's realtime clock and replays the history.
`--lockstep-mtr MODEL` overrides the specs ('none': the suite's clock everywhere).

Plus the harness: its CPU cost per frame (bench/bench_runner.py) gives the cores the
driver side needs to keep that many sessions fed. And scoring (issue 26, item 5), which
can run beside the playing of later units: Silero VAD over both channels on CPU cores
(batched, `--vad-x-per-core`, measured by bench/bench_scoring.py) and the ASR over the
model channel on the GPUs (`--asr-x-per-gpu`, assumed until measured on a GPU). The LLM
judges are API calls and not projected.

    .venv/bin/python bench/project_paper_suites.py [--gpus 8] [--gpu-memory-gb 80] [--step-ms MODEL=MS ...]
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from duplexeval.runfolder.plan import Job, plan_suite  # noqa: E402
from duplexeval.specs.registry import default_registry  # noqa: E402

# Seconds of audio per unit where no spec says (each is an assumption, printed).
ASSUMED_UNIT_S = {
    "mpe": 100.0 + 32.0,        # Duplex-MPE: ~100 s conversation + the 32 s preamble (§3.3, App. A3.1)
    "mtr-round": 12.0,           # MTR-DuplexBench: one round, user turn + response window (ours)
    "mtr-quality": 120.0,        # Candor clips of 120 s (paper)
    "mtr-query": 15.0,           # one spoken query (Llama Questions, AdvBench) + response window (ours)
}
SUITES = ("paper-mpe", "paper-mtr")
# Batched step costs (model -> (sessions per batch, ms per step)); no GPU has measured them
# through this harness yet (bench/gpu_check_moshi.py will): the public PersonaPlex server's
# figure, for the Moshi architecture it shares.
ASSUMED_BATCH = {"moshi": (32, 70.0), "personaplex": (32, 70.0)}
# Scoring. Silero over many streams at once, x real time per core (bench/bench_scoring.py,
# batches of 32, onnxruntime on one thread, measured on the project's 2-core machine).
MEASURED_VAD_X_PER_CORE = 351.0
# Qwen3-ASR-1.7B batched on one GPU, x real time of audio transcribed: no GPU has measured
# it here; an assumption of this projection, to be replaced by bench_scoring.py --device cuda.
ASSUMED_ASR_X_PER_GPU = 300.0


@dataclass
class Projection:
    model: str
    suite: str
    benchmark: str
    clock: str
    context: str
    audio_s: float
    frame_ms: float
    step_ms: float
    sessions_per_gpu: int
    batch: int = 1  # sessions stepped together in one step of step_ms

    def speed_per_gpu(self) -> float:
        """x real time one GPU sustains: lockstep steps a batch as fast as the GPU allows;
        realtime sessions each run at exactly 1x, as many at once as the GPU holds."""
        if self.clock == "realtime":
            return float(self.sessions_per_gpu)
        return self.batch * self.frame_ms / self.step_ms

    def wall_s(self, gpus: int) -> float:
        return self.audio_s / (self.speed_per_gpu() * gpus)


def unit_audio_s(job: Job, context: str) -> tuple[int, float]:
    bench = job.bench
    count = int(bench.get("data", {}).get("count", 0))
    dimension = bench["dimension"]
    if dimension == "mpe":
        return count, ASSUMED_UNIT_S["mpe"]
    if dimension == "mtr-quality":
        return count, ASSUMED_UNIT_S["mtr-quality"]
    if dimension in ("mtr-instruction", "mtr-safety"):
        return count, ASSUMED_UNIT_S["mtr-query"]
    rounds = int(bench.get("rounds", 10))
    played_rounds = rounds if context == "fork" else rounds * (rounds + 1) / 2  # replay: round k plays k rounds
    return count, played_rounds * ASSUMED_UNIT_S["mtr-round"]


def context_of(job: Job, clock: str) -> str:
    from duplexeval.benchmarks.mtr.items import context_mode

    if not job.bench["dimension"].startswith("mtr-"):
        return "-"
    return context_mode(job.bench, list(job.model.data.get("capabilities", [])), clock)


def lockstep_models() -> tuple[str, ...]:
    """Models of the paper suites whose spec says `latency_clock: lockstep`."""
    registry = default_registry()
    return tuple(sorted({job.model.id for suite_id in SUITES for job in plan_suite(registry, suite_id)
                         if job.model.data.get("latency_clock") == "lockstep"}))


def project(gpu_memory_gb: float, step_ms: dict[str, float], batch: dict[str, tuple[int, float]] | None = None,
            lockstep_mtr: tuple[str, ...] = ()) -> list[Projection]:
    """One Projection per job of the paper suites. `batch`: model -> (N, ms of one width-N step);
    `lockstep_mtr`: frame-synchronous models whose MTR jobs run lockstep (and fork)."""
    registry = default_registry()
    batch = batch or {}
    rows = []
    for suite_id in SUITES:
        suite_clock = registry.get("suite", suite_id).data["clock"]
        for job in plan_suite(registry, suite_id):
            model = job.model.data
            if suite_id == "paper-mtr":  # per-model in the suite; --lockstep-mtr may override the specs
                clock = "lockstep" if job.model.id in lockstep_mtr else "realtime"
            else:
                clock = job.clock or suite_clock
            frame_ms = float(model.get("audio", {}).get("frame_ms", 80))
            width, step = batch.get(job.model.id, (1, step_ms.get(job.model.id, frame_ms)))  # default: 1x real time
            context = context_of(job, clock)
            if context == "skip":
                continue
            count, per_unit = unit_audio_s(job, context)
            mem = float(model.get("launch", {}).get("gpu_memory_gb", gpu_memory_gb))
            by_memory = max(1, int(gpu_memory_gb // mem)) if mem else 1  # servers per GPU
            if width > 1:  # one batched server; its batch must fit in a frame to be real time
                sessions = width if step <= frame_ms else 1
            else:
                by_compute = max(1, int(frame_ms // step))  # real-time sessions one GPU can step
                sessions = min(by_memory, by_compute) if clock == "realtime" else 1
            rows.append(Projection(job.model.id, suite_id, job.benchmark.id, clock, context, count * per_unit,
                                   frame_ms, step, sessions if clock == "realtime" else width, width))
    return rows


def scoring_h(jobs: list[Projection], gpus: int, cores: int, vad_x_per_core: float, asr_x_per_gpu: float) -> float:
    """Hours to score what `jobs` recorded: VAD over both channels on the cores, the ASR over
    the model channel on the GPUs (all of it: an upper bound, the MPE scorer transcribes
    only windows with speech), whichever takes longer (they run on different hardware)."""
    audio_s = sum(j.audio_s for j in jobs)
    vad_s = 2 * audio_s / (vad_x_per_core * cores)
    asr_s = audio_s / (asr_x_per_gpu * gpus)
    return max(vad_s, asr_s) / 3600


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gpus", type=int, default=8, help="GPUs of the Ray cluster (default 8)")
    parser.add_argument("--gpu-memory-gb", type=float, default=80.0, help="memory of one GPU (default 80, an H100)")
    parser.add_argument("--step-ms", action="append", default=[], metavar="MODEL=MS",
                        help="measured GPU step cost per frame of one session (default: the frame length, 1x real time)")
    parser.add_argument("--batch", action="append", default=None, metavar="MODEL=N:MS",
                        help="a server of MODEL steps N sessions in one step of MS ms (default, assumed: "
                             + ", ".join(f"{m}={n}:{ms:g}" for m, (n, ms) in ASSUMED_BATCH.items()) + ")")
    parser.add_argument("--lockstep-mtr", action="append", default=None, metavar="MODEL",
                        help="a frame-synchronous model whose MTR jobs run lockstep + fork (default: the models "
                             "whose spec says latency_clock: lockstep); 'none' for the suite's clock everywhere")
    parser.add_argument("--vad-x-per-core", type=float, default=MEASURED_VAD_X_PER_CORE,
                        help="batched Silero VAD, x real time per CPU core (default: measured by bench_scoring.py)")
    parser.add_argument("--asr-x-per-gpu", type=float, default=ASSUMED_ASR_X_PER_GPU,
                        help="batched ASR, x real time per GPU (default: assumed, not measured)")
    parser.add_argument("--cores", type=int, default=64, help="CPU cores of the cluster for scoring's VAD (default 64)")
    parser.add_argument("--harness-ms", type=float, default=0.4,
                        help="harness CPU ms per frame per session (bench/bench_runner.py; default the issue's target)")
    args = parser.parse_args(argv)
    step_ms = {}
    for item in args.step_ms:
        name, _, value = item.partition("=")
        try:
            step_ms[name] = float(value)
        except ValueError:
            parser.error(f"--step-ms {item!r}: expected MODEL=MILLISECONDS")
    # An explicit --batch wins; a measured one-session --step-ms replaces the assumed batch.
    batch = {m: v for m, v in ASSUMED_BATCH.items() if m not in step_ms} if args.batch is None else {}
    for item in args.batch or []:
        name, _, value = item.partition("=")
        try:
            n, ms = value.split(":")
            batch[name] = (int(n), float(ms))
        except ValueError:
            parser.error(f"--batch {item!r}: expected MODEL=N:MILLISECONDS")
    lockstep_mtr = (lockstep_models() if args.lockstep_mtr is None
                    else tuple(m for m in args.lockstep_mtr if m != "none"))
    rows = project(args.gpu_memory_gb, step_ms, batch, lockstep_mtr)

    print("Assumptions:")
    print(f"  GPU memory {args.gpu_memory_gb:g} GB; a session's memory is its spec's launch.gpu_memory_gb")
    print("  step cost per frame: " + (", ".join(f"{k} {v:g} ms (measured)" for k, v in step_ms.items()) or "none measured")
          + "; every other model steps exactly in real time (step = frame length)")
    for key, seconds in ASSUMED_UNIT_S.items():
        print(f"  audio per unit, {key}: {seconds:g} s")
    for name, (n, ms) in batch.items():
        source = "assumed: the public PersonaPlex server's 32 lockstep sessions per GPU at 70 ms per 80 ms tick " \
                 "(same architecture); not measured here" if args.batch is None else "as given"
        print(f"  batched sessions, {name}: {n} sessions per server stepped in {ms:g} ms ({source})")
    source = "the specs' latency_clock" if args.lockstep_mtr is None else "as given"
    print("  MTR clock: " + (", ".join(lockstep_mtr) + f" lockstep + fork ({source}: frame-synchronous, one output "
                              "frame per input frame, a step within a frame); " if lockstep_mtr else "")
          + "every other model as the suite says (realtime, replayed history)")
    print(f"  scoring: Silero VAD on both channels at {args.vad_x_per_core:g}x real time per core, batched "
          f"(measured, bench/bench_scoring.py) on {args.cores} cores; ASR on the model channel at "
          f"{args.asr_x_per_gpu:g}x real time per GPU, batched ("
          + ("assumed: not measured on a GPU" if args.asr_x_per_gpu == ASSUMED_ASR_X_PER_GPU else "as given")
          + "); LLM judges (API calls) not included")
    print("  units are independent and spread evenly over GPUs; start-up not included; playing and scoring "
          "are added (scoring could overlap the playing of later units)")
    print()
    print(f"| model | suite | audio (h) | sessions/GPU | 1 GPU: playing (h) | {args.gpus} GPUs: playing (h) "
          f"| scoring (h) | total (h) | harness cores |")
    print("|---|---|---|---|---|---|---|---|---|")
    for suite_id in SUITES:
        by_model: dict[str, list[Projection]] = {}
        for row in rows:
            if row.suite == suite_id:
                by_model.setdefault(row.model, []).append(row)
        for model, jobs in by_model.items():
            audio_h = sum(j.audio_s for j in jobs) / 3600
            one = sum(j.wall_s(1) for j in jobs) / 3600
            many = sum(j.wall_s(args.gpus) for j in jobs) / 3600
            sessions = max(j.sessions_per_gpu for j in jobs)
            # harness CPU: frames per wall second over the cluster x cost per frame
            frames_per_s = sum(j.audio_s for j in jobs) / (many * 3600) * 1000 / jobs[0].frame_ms
            cores = math.ceil(frames_per_s * args.harness_ms / 1000)
            scoring = scoring_h(jobs, args.gpus, args.cores, args.vad_x_per_core, args.asr_x_per_gpu)
            print(f"| {model} | {suite_id} | {audio_h:,.0f} | {sessions} | {one:,.1f} | {many:,.1f} | {scoring:,.2f} "
                  f"| {many + scoring:,.1f} | {cores} |")


if __name__ == "__main__":
    main()
