"""Projected wall time of the full paper suites, per model, on 1 GPU and on an N-GPU Ray cluster.

No GPU has run a paper model through this harness yet, so a model's cost on a GPU is a
figure with a source, printed on every line: the model spec's `launch.gpu_step` (sessions
one server steps at once, the GPU ms of that step, the GPU, and whether the figure is
measured by this harness, declared (measured elsewhere or published) or assumed (borrowed
from another model)), or, given here, a measurement (`--step-ms moshi=41`, `--batch
moshi=8:60` from `bench/gpu_check_moshi.py` on a GPU machine). A model without a figure is
assumed to take a whole GPU to step one session in real time. Everything else comes from
the specs: which models run which benchmarks (specs/suites/paper-*.yaml), each benchmark's
data size (`data.count`), rounds and context mode (fork, replay or history as heard, from
the model's capabilities, the suite's clock and the spec's `context.history_as_heard`), each
model's frame length and GPU memory.

The projection, per job:
  audio seconds  = units x seconds of audio per unit (a dialogue plays once when it forks or
                   runs history-as-heard one-pass; replay and history-as-heard per-round
                   play round k's history again: 1 + 2 + ... + R rounds)
  speed per GPU  = the executor's packing (duplexeval/executors/packing.py): servers per GPU
                   by memory and step cost, never more than keep real time;
                   lockstep: sessions x frame_ms / step_ms (the GPU's compute);
                   realtime: the sessions the packed servers hold, each at exactly 1x;
                   0 where one step is longer than a frame (cannot keep real time)
  wall           = audio seconds / (speed per GPU x GPUs)

The clock per model (issue 26, item 3): the paper suite runs MTR-DuplexBench on the
realtime clock, which cannot fork, so a teacher-forced round k replays rounds 1..k-1; a
model without teacher forcing runs history as heard, one session per dialogue (one-pass,
issue 38), linear as a fork. A model spec's `latency_clock` says which clock reproduces
its published timing (docs/runner.md, "The clock per model"): a frame-synchronous model (the Moshi family, `latency_clock: lockstep`)
gives in lockstep the onsets a real-time listener hears, one frame earlier, as long as one
step fits in a frame, and lockstep can fork, so its MTR jobs are projected on lockstep +
fork; every other model keeps the suite's realtime clock (history as heard, one-pass, for
the paper's models without teacher forcing).
`--lockstep-mtr MODEL` overrides the specs ('none': the suite's clock everywhere).

Plus the harness: its CPU cost per frame (bench/bench_runner.py) gives the cores the
driver side needs to keep that many sessions fed. And scoring (issue 26, item 5), which
can run beside the playing of later units: Silero VAD over both channels on CPU cores
(batched, `--vad-x-per-core`, measured by bench/bench_scoring.py) and the ASR over the
model channel on the GPUs (`--asr-x-per-gpu`, assumed until measured on a GPU). The LLM
judges are API calls and not projected.

The table's last column says whether a model makes the target (`--target-h`, default 3 h
on the cluster) under these figures, and if not, the speed per GPU it would need.

    .venv/bin/python bench/project_paper_suites.py [--gpus 8] [--gpu-memory-gb 80] [--step-ms MODEL=MS ...]
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from duplexeval.executors.packing import Packing, StepCost, pack  # noqa: E402
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
# The spec whose figure is vLLM-Omni's PersonaPlex path (same architecture as Moshi).
VLLM_OMNI_MOSHI = "personaplex"
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
    cost: StepCost
    packing: Packing

    @property
    def frame_ms(self) -> float:
        return self.cost.frame_ms

    def speed_per_gpu(self) -> float:
        """x real time one GPU sustains (executors/packing.py); 0: cannot keep real time."""
        return self.packing.speed_per_gpu

    def wall_s(self, gpus: int) -> float:
        speed = self.speed_per_gpu()
        return self.audio_s / (speed * gpus) if speed > 0 else math.inf


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
    from duplexeval.benchmarks.mtr.items import plays_dialogue_once

    rounds = int(bench.get("rounds", 10))
    # fork, history-as-heard one-pass: the dialogue once; replay, history-as-heard per-round: round k plays k rounds
    played_rounds = rounds if plays_dialogue_once(bench, context) else rounds * (rounds + 1) / 2
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
            lockstep_mtr: tuple[str, ...] = (), costs: dict[str, StepCost] | None = None) -> list[Projection]:
    """One Projection per job of the paper suites. `step_ms`: model -> measured ms of a
    one-session step; `batch`: model -> (N, measured ms of a width-N step); both replace the
    spec's figure, as `costs` (model -> StepCost) does. `lockstep_mtr`: frame-synchronous
    models whose MTR jobs run lockstep (and fork)."""
    registry = default_registry()
    batch = batch or {}
    costs = costs or {}
    rows = []
    for suite_id in SUITES:
        suite_clock = registry.get("suite", suite_id).data["clock"]
        for job in plan_suite(registry, suite_id):
            model = job.model.data
            if suite_id == "paper-mtr":  # per-model in the suite; --lockstep-mtr may override the specs
                clock = "lockstep" if job.model.id in lockstep_mtr else "realtime"
            else:
                clock = job.clock or suite_clock
            cost = costs.get(job.model.id) or StepCost.of_spec(model)
            measured = batch.get(job.model.id) or ((1, step_ms[job.model.id]) if job.model.id in step_ms else None)
            if measured is not None:
                cost = replace(cost, steps=(measured,), kind="measured", servers=None,
                               source="given on the command line (bench/gpu_check_*.py)", gpu="")
            context = context_of(job, clock)
            if context == "skip":
                continue
            count, per_unit = unit_audio_s(job, context)
            rows.append(Projection(job.model.id, suite_id, job.benchmark.id, clock, context, count * per_unit,
                                   cost, pack(cost, gpu_memory_gb, clock)))
    return rows


def figure_label(cost: StepCost, packing: Packing) -> str:
    """The step figure in a table cell: kind, the width used and its ms per frame, the GPU."""
    if not cost.has_figure:
        return "none: 1 session, a whole GPU, 1x"
    gpu = f", {cost.gpu}" if cost.gpu else ""
    gpus = f" on {cost.gpus} GPUs" if cost.gpus > 1 else ""
    step = cost.step_at(packing.sessions) or 0.0
    if step <= 0:
        return f"{cost.kind}: {cost.servers} servers per GPU in real time{gpu}"
    return f"{cost.kind}: {packing.sessions} in {step:g} ms/{cost.frame_ms:g} ms{gpus}{gpu}"


def describe(model: str, cost: StepCost) -> str:
    """An assumptions line: every width of the figure, its kind and source."""
    if not cost.has_figure:
        return f"  {model}: no step figure (assumed: one session per server steps in exactly one frame, one server per GPU)"
    steps = ", ".join(f"{n} in {ms:g} ms" for n, ms in cost.steps if ms > 0)
    parts = [f"sessions per step: {steps} per {cost.frame_ms:g} ms frame" if steps else "",
             f"{cost.servers} servers per GPU keep real time" if cost.servers else "",
             f"{cost.memory_gb:g} GB per server" if cost.memory_gb else "",
             f"on {cost.gpus} GPUs" if cost.gpus > 1 else "", cost.gpu]
    return f"  {model}: " + "; ".join(p for p in parts if p) + f" ({cost.kind}: {cost.source})"


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
    parser.add_argument("--gpu-memory-gb", type=float, default=141.0,
                        help="memory of one GPU (default 141, an H200: the GPU the measured figures come from)")
    parser.add_argument("--step-ms", action="append", default=[], metavar="MODEL=MS",
                        help="measured GPU ms of one session's step (replaces the spec's launch.gpu_step)")
    parser.add_argument("--batch", action="append", default=[], metavar="MODEL=N:MS",
                        help="measured: a server of MODEL steps N sessions in one step of MS ms (replaces the spec's)")
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
    parser.add_argument("--target-h", type=float, default=3.0, help="the wall time a suite should fit in (default 3)")
    args = parser.parse_args(argv)
    step_ms = {}
    for item in args.step_ms:
        name, _, value = item.partition("=")
        try:
            step_ms[name] = float(value)
        except ValueError:
            parser.error(f"--step-ms {item!r}: expected MODEL=MILLISECONDS")
    batch = {}
    for item in args.batch:
        name, _, value = item.partition("=")
        try:
            n, ms = value.split(":")
            batch[name] = (int(n), float(ms))
        except ValueError:
            parser.error(f"--batch {item!r}: expected MODEL=N:MILLISECONDS")
    lockstep_mtr = (lockstep_models() if args.lockstep_mtr is None
                    else tuple(m for m in args.lockstep_mtr if m != "none"))
    rows = project(args.gpu_memory_gb, step_ms, batch, lockstep_mtr)

    print("Assumptions (every figure with its kind: measured by this harness, declared = measured elsewhere "
          "or published, assumed = borrowed or guessed):")
    print(f"  GPU memory {args.gpu_memory_gb:g} GB (an H200, the GPU of the measured figures); a server's memory "
          "is its spec's launch.gpu_memory_gb (declared by the spec) unless its step figure says otherwise")
    costs = {r.model: r.cost for r in rows}
    for model, cost in sorted(costs.items()):
        print(describe(model, cost))
    other = StepCost.of_spec(default_registry().get("model", VLLM_OMNI_MOSHI).data)
    print(describe(f"{VLLM_OMNI_MOSHI} (not a paper model; its figure is the row 'moshi on "
                   f"{VLLM_OMNI_MOSHI}'s figure' below)", other))
    print("  servers per GPU: duplexeval/executors/packing.py (memory and step cost; never more than keep real "
          "time; a step longer than a frame cannot run on the realtime clock)")
    for key, seconds in ASSUMED_UNIT_S.items():
        print(f"  audio per unit, {key}: {seconds:g} s (assumed)")
    source = "the specs' latency_clock" if args.lockstep_mtr is None else "as given"
    print("  MTR clock: " + (", ".join(lockstep_mtr) + f" lockstep + fork ({source}: frame-synchronous, one output "
                              "frame per input frame, a step within a frame); " if lockstep_mtr else "")
          + "every other model as the suite says (realtime: history as heard, one session per dialogue "
            "(one-pass), for a model without teacher forcing; a teacher-forced history replayed per round)")
    print(f"  scoring: Silero VAD on both channels at {args.vad_x_per_core:g}x real time per core, batched "
          f"(measured, bench/bench_scoring.py) on {args.cores} cores; ASR on the model channel at "
          f"{args.asr_x_per_gpu:g}x real time per GPU, batched ("
          + ("assumed: not measured on a GPU" if args.asr_x_per_gpu == ASSUMED_ASR_X_PER_GPU else "as given")
          + "); LLM judges (API calls) not included")
    print("  units are independent and spread evenly over GPUs; start-up not included; playing and scoring "
          "are added (scoring could overlap the playing of later units)")
    print()
    g = args.gpus
    print(f"| model | suite | clock | step figure | audio (h) | servers/GPU x sessions | x real time/GPU | 1 GPU: playing (h) "
          f"| {g} GPUs: playing (h) | scoring (h) | total (h) | harness cores | {args.target_h:g} h on {g} GPUs? |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    # Moshi again on the figure of its architecture's other server (vLLM-Omni's PersonaPlex
    # path, which replaced the standalone engine's 32 sessions per GPU), for comparison.
    compare = [replace(r, model=f"moshi on {VLLM_OMNI_MOSHI}'s figure") for r in
               project(args.gpu_memory_gb, {}, {}, lockstep_mtr, {"moshi": other}) if r.model == "moshi"]
    for suite_id in SUITES:
        by_model: dict[str, list[Projection]] = {}
        for row in [*rows, *compare]:
            if row.suite == suite_id:
                by_model.setdefault(row.model, []).append(row)
        for model, jobs in by_model.items():
            audio_s = sum(j.audio_s for j in jobs)
            one = sum(j.wall_s(1) for j in jobs) / 3600
            many = sum(j.wall_s(g) for j in jobs) / 3600
            scoring = scoring_h(jobs, g, args.cores, args.vad_x_per_core, args.asr_x_per_gpu)
            total = many + scoring
            clocks = "/".join(sorted({j.clock for j in jobs}))
            servers = "/".join(sorted({f"{j.packing.servers / j.cost.gpus:g} x {j.packing.sessions}" for j in jobs}))
            speed = "/".join(sorted({f"{j.speed_per_gpu():.2f}" for j in jobs}))
            if math.isinf(many):
                fastest = min(ms for _, ms in jobs[0].cost.steps)
                cores, verdict = 0, ("no: every step measured is longer than a frame on the realtime clock "
                                     f"({fastest:g} ms per {jobs[0].frame_ms:g} ms at best): it cannot keep real time")
            else:
                frames_per_s = audio_s / (many * 3600) * 1000 / jobs[0].frame_ms
                cores = math.ceil(frames_per_s * args.harness_ms / 1000)
                need = audio_s / 3600 / (max(args.target_h - scoring, 1e-9) * g)
                verdict = "yes" if total <= args.target_h else (
                    f"no: needs {need:.1f}x real time per GPU, its figures give "
                    f"{audio_s / 3600 / (many * g):.2f}x" + ("" if jobs[0].cost.has_figure
                                                             else " (no step figure: measure it on a GPU)"))
            print(f"| {model} | {suite_id} | {clocks} | {figure_label(jobs[0].cost, jobs[0].packing)} | {audio_s / 3600:,.0f} "
                  f"| {servers} | {speed} | {one:,.1f} | {many:,.1f} | {scoring:,.2f} | {total:,.1f} | {cores} | {verdict} |")


if __name__ == "__main__":
    main()
