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

A model whose spec says `launch.gpus: 0` (the cascaded baseline) runs on CPU: it is projected
on the cluster's `--cores`, not its GPUs: its sessions run side by side, each needing the
cores its spec's `launch.cpu_step` was measured to use per second of audio
(bench/bench_cpu_model.py) plus the harness's share (`--harness-ms` per frame); wall = audio
seconds / the sessions the cores hold (realtime, each at 1x; executors/packing.py,
`pack_cpu`). What its figure leaves out (`cpu_step.excludes`: the cascade's LLM endpoint) is
printed as an assumption and not costed, like the judges.

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

from duplexeval.benchmarks.base import declared_unit_audio  # noqa: E402
from duplexeval.executors.packing import (  # noqa: E402
    HARNESS_MS_PER_FRAME,
    CpuCost,
    CpuPacking,
    Packing,
    StepCost,
    cpu_share,
    pack,
    pack_cpu,
)
from duplexeval.runfolder.plan import Job, plan_suite  # noqa: E402
from duplexeval.specs.registry import default_registry  # noqa: E402

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
    cpu_cost: CpuCost | None = None  # a CPU-only model (launch.gpus: 0): on the cores, not the GPUs
    cpu: CpuPacking | None = None
    units: int = 0           # data.count: audio_s / units is one unit's audio

    @property
    def frame_ms(self) -> float:
        return self.cost.frame_ms

    def speed_per_gpu(self) -> float:
        """x real time one GPU sustains (executors/packing.py); 0: cannot keep real time."""
        return self.packing.speed_per_gpu

    def wall_s(self, gpus: int) -> float:
        """Playing time on `gpus` GPUs; a CPU-only model's on the cluster's cores, whatever the GPUs."""
        speed = self.cpu.speed if self.cpu is not None else self.speed_per_gpu() * gpus
        return self.audio_s / speed if speed > 0 else math.inf


def unit_audio_s(job: Job, clock: str) -> tuple[int, float]:
    """(units, seconds of audio one unit plays): `data.count`, and the family's own
    `unit_audio_s` (duplexeval/benchmarks/<family>/plugin.py: each an assumption it states),
    which also knows whether a unit replays earlier rounds on this clock."""
    from duplexeval.benchmarks.registry import benchmark_for

    count = int(job.bench.get("data", {}).get("count", 0))
    per_unit = benchmark_for(job.bench).unit_audio_s(
        job.bench, capabilities=tuple(job.model.data.get("capabilities", [])), clock=clock)
    return count, float(per_unit or 0.0)


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
            lockstep_mtr: tuple[str, ...] = (), costs: dict[str, StepCost] | None = None,
            cores: int = 64, harness_ms: float = 0.4) -> list[Projection]:
    """One Projection per job of the paper suites. `step_ms`: model -> measured ms of a
    one-session step; `batch`: model -> (N, measured ms of a width-N step); both replace the
    spec's figure, as `costs` (model -> StepCost) does. `lockstep_mtr`: frame-synchronous
    models whose MTR jobs run lockstep (and fork). A CPU-only model (`launch.gpus: 0`) is
    packed on the cluster's `cores`, each session needing its `launch.cpu_step` share plus
    the harness's (`harness_ms` per frame)."""
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
            count, per_unit = unit_audio_s(job, clock)
            cpu_cost = CpuCost.of_spec(model)
            cpu = (pack_cpu(cpu_cost, cores, clock, harness_ms / cost.frame_ms) if cpu_cost is not None else None)
            rows.append(Projection(job.model.id, suite_id, job.benchmark.id, clock, context, count * per_unit,
                                   cost, pack(cost, gpu_memory_gb, clock), cpu_cost, cpu, count))
    return rows


def figure_label(cost: StepCost, packing: Packing, cpu_cost: CpuCost | None = None) -> str:
    """The step figure in a table cell: kind, the width used and its ms per frame, the GPU;
    for a CPU-only model, its kind and x real time per core."""
    if cpu_cost is not None:
        if not cpu_cost.has_figure:
            return "none: CPU, 1 core per session, 1x"
        return f"{cpu_cost.kind}: CPU, {cpu_cost.x_real_time_per_core:g}x real time per core"
    if not cost.has_figure:
        return "none: 1 session, a whole GPU, 1x"
    gpu = f", {cost.gpu}" if cost.gpu else ""
    gpus = f" on {cost.gpus} GPUs" if cost.gpus > 1 else ""
    step = cost.step_at(packing.sessions) or 0.0
    if step <= 0:
        return f"{cost.kind}: {cost.servers} servers per GPU in real time{gpu}"
    return f"{cost.kind}: {packing.sessions} in {step:g} ms/{cost.frame_ms:g} ms{gpus}{gpu}"


def describe_cpu(model: str, cost: CpuCost, packing: CpuPacking, harness_ms: float, frame_ms: float,
                 spec: dict | None = None) -> list[str]:
    """Assumption lines of a CPU-only model: its figure, what one session needs, what it leaves out."""
    harness = harness_ms / frame_ms
    figure = (f"{cost.x_real_time_per_core:g}x real time per core" if cost.has_figure
              else "no CPU figure (assumed: one core per session at exactly real time)")
    lines = [f"  {model}: CPU only (launch.gpus: 0), no GPU: {figure}; a session needs "
             f"{1 / cost.x_real_time_per_core:.4f} cores + the harness's {harness:.4f}, so {packing.cores} cores "
             f"hold {packing.sessions} sessions side by side ({cost.kind}: {cost.source})"]
    if cost.excludes:
        lines.append(f"  {model}: not in its figure, {cost.excludes}: assumed to serve the chat completions of "
                     f"{packing.sessions} sessions side by side (up to {packing.sessions} at once, one per session) at "
                     "the latency it has alone; its cost is not projected, like the judges'")
    if cost.has_figure and spec is not None:
        share = cpu_share(spec, "realtime")
        lines.append(f"  {model}: the Ray executor reserves {share:g} cores per server of one session on the realtime "
                     f"clock (executors/packing.py, cpu_share), so it places {math.floor(packing.cores / share + 1e-9)} "
                     f"sessions on {packing.cores} cores")
    return lines


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
    parser.add_argument("--cores", type=int, default=64,
                        help="CPU cores of the cluster: scoring's VAD, and the sessions of a CPU-only model (default 64)")
    parser.add_argument("--harness-ms", type=float, default=HARNESS_MS_PER_FRAME,
                        help="harness CPU ms per frame per session (bench/bench_runner.py; default the issue's target, as the Ray executor reserves: executors/packing.py)")
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
    if args.cores < 1:
        parser.error(f"--cores must be >= 1, got {args.cores}")
    rows = project(args.gpu_memory_gb, step_ms, batch, lockstep_mtr, cores=args.cores, harness_ms=args.harness_ms)

    print("Assumptions (every figure with its kind: measured by this harness, declared = measured elsewhere "
          "or published, assumed = borrowed or guessed):")
    print(f"  GPU memory {args.gpu_memory_gb:g} GB (an H200, the GPU of the measured figures); a server's memory "
          "is its spec's launch.gpu_memory_gb (declared by the spec) unless its step figure says otherwise")
    by_name = {r.model: r for r in rows}
    for model, row in sorted(by_name.items()):
        if row.cpu_cost is not None and row.cpu is not None:
            print("\n".join(describe_cpu(model, row.cpu_cost, row.cpu, args.harness_ms, row.frame_ms,
                                         default_registry().get("model", model).data)))
        else:
            print(describe(model, row.cost))
    other = StepCost.of_spec(default_registry().get("model", VLLM_OMNI_MOSHI).data)
    print(describe(f"{VLLM_OMNI_MOSHI} (not a paper model; its figure is the row 'moshi on "
                   f"{VLLM_OMNI_MOSHI}'s figure' below)", other))
    print("  servers per GPU: duplexeval/executors/packing.py (memory and step cost; never more than keep real "
          "time; a step longer than a frame cannot run on the realtime clock)")
    by_seconds: dict[tuple[float, str], set[str]] = {}
    for r in rows:
        if r.units:
            declared = declared_unit_audio(default_registry().get("benchmark", r.benchmark).data)
            figure = (f"{declared['kind']}: {declared['seconds']:g} s per {declared['per']}, {declared['source']}"
                      if declared else "no figure in the spec")
            by_seconds.setdefault((r.audio_s / r.units, figure), set()).add(r.benchmark)
    for (seconds, figure), benches in sorted(by_seconds.items(), reverse=True):
        print(f"  audio per unit, {seconds:g} s (the spec's unit_audio, {figure}): {', '.join(sorted(benches))}")
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
    print(f"| model | suite | clock | runs on | step figure | audio (h) | servers/GPU x sessions | x real time/GPU "
          f"| 1 GPU: playing (h) | {g} GPUs: playing (h) | scoring (h) | total (h) | harness cores "
          f"| {args.target_h:g} h on {g} GPUs? |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    # Moshi again on the figure of its architecture's other server (vLLM-Omni's PersonaPlex
    # path, which replaced the standalone engine's 32 sessions per GPU), for comparison.
    compare = [replace(r, model=f"moshi on {VLLM_OMNI_MOSHI}'s figure") for r in
               project(args.gpu_memory_gb, {}, {}, lockstep_mtr, {"moshi": other}, args.cores, args.harness_ms)
               if r.model == "moshi"]
    for suite_id in SUITES:
        by_model: dict[str, list[Projection]] = {}
        for row in [*rows, *compare]:
            if row.suite == suite_id:
                by_model.setdefault(row.model, []).append(row)
        for model, jobs in by_model.items():
            print(table_row(model, suite_id, jobs, args))


def table_row(model: str, suite_id: str, jobs: list[Projection], args: argparse.Namespace) -> str:
    """One model's row of the table. A CPU-only model runs on the cluster's cores: its GPU
    columns say so, its speed is the cores' and its wall the same on any number of GPUs."""
    g = args.gpus
    audio_s = sum(j.audio_s for j in jobs)
    one = sum(j.wall_s(1) for j in jobs) / 3600
    many = sum(j.wall_s(g) for j in jobs) / 3600
    scoring = scoring_h(jobs, g, args.cores, args.vad_x_per_core, args.asr_x_per_gpu)
    total = many + scoring
    clocks = "/".join(sorted({j.clock for j in jobs}))
    first = jobs[0]
    on_cpu = first.cpu is not None
    if on_cpu:
        runs_on = f"CPU: {args.cores} cores"
        servers = "/".join(sorted({f"{j.cpu.sessions} sessions on {args.cores} cores" for j in jobs if j.cpu}))
        speed = "/".join(sorted({f"{j.cpu.speed:.2f} on {args.cores} cores" for j in jobs if j.cpu}))
        one_cell = "- (no GPU)"
    else:
        runs_on = "GPU"
        servers = "/".join(sorted({f"{j.packing.servers / j.cost.gpus:g} x {j.packing.sessions}" for j in jobs}))
        speed = "/".join(sorted({f"{j.speed_per_gpu():.2f}" for j in jobs}))
        one_cell = f"{one:,.1f}"
    if math.isinf(many):
        cores = 0
        if on_cpu and first.cpu_cost is not None:
            verdict = (f"no: {first.cpu_cost.x_real_time_per_core:g}x real time per core, below 1x: one session "
                       "cannot keep real time on the realtime clock")
        else:
            fastest = min(ms for _, ms in first.cost.steps)
            verdict = ("no: every step measured is longer than a frame on the realtime clock "
                       f"({fastest:g} ms per {first.frame_ms:g} ms at best): it cannot keep real time")
    else:
        frames_per_s = audio_s / (many * 3600) * 1000 / first.frame_ms
        cores = math.ceil(frames_per_s * args.harness_ms / 1000)
        room = max(args.target_h - scoring, 1e-9)
        if on_cpu:
            has_figure = first.cpu_cost is not None and first.cpu_cost.has_figure
            verdict = "yes" if total <= args.target_h else (
                f"no: needs {audio_s / 3600 / room:.1f}x real time on {args.cores} cores, its figures give "
                f"{audio_s / 3600 / many:.2f}x" + ("" if has_figure else " (no CPU figure: bench/bench_cpu_model.py)"))
        else:
            verdict = "yes" if total <= args.target_h else (
                f"no: needs {audio_s / 3600 / (room * g):.1f}x real time per GPU, its figures give "
                f"{audio_s / 3600 / (many * g):.2f}x" + ("" if first.cost.has_figure
                                                         else " (no step figure: measure it on a GPU)"))
    figure = figure_label(first.cost, first.packing, first.cpu_cost)
    return (f"| {model} | {suite_id} | {clocks} | {runs_on} | {figure} | {audio_s / 3600:,.0f} | {servers} | {speed} "
            f"| {one_cell} | {many:,.1f} | {scoring:,.2f} | {total:,.1f} | {cores} | {verdict} |")


if __name__ == "__main__":
    main()
