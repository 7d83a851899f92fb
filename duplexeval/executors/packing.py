"""How many servers of a model share one GPU: by the memory a server holds and the GPU time
its step takes, never more than keep real time (docs/runner.md, "Servers per GPU").

A model's cost on a GPU is a figure, measured or declared, never guessed here: the spec's
`launch.gpu_step` (the GPU milliseconds of one step at each width measured, i.e. sessions one
server steps at once; or, for a model that computes only at a turn's end, the servers
measured sharing one GPU in real time; the GPU, where the figure comes from, whether it was
measured, declared or assumed) and `launch.gpu_memory_gb` (a server's memory). Without a
step figure a server is assumed to take its GPU's whole compute: one server per GPU, as before.

The rule, for k servers of one model on one GPU (or one group of `launch.gpus` GPUs):
- their steps share the GPU's time, so k steps must fit in one frame for every session to
  keep real time: k <= frame_ms / step_ms (compute);
- k servers must fit in the GPU's memory: k <= GPU memory / a server's memory (memory);
- realtime clock: k = the smaller of the two, and 0 when one step alone is longer than a
  frame (the model cannot keep real time on that GPU at that width: a realtime session would
  fall behind and end LATE, so the executor refuses to pack it and runs one server, as
  before, and the projection says so);
- lockstep clock: nothing waits on the wall clock, so a GPU's throughput is its compute,
  sessions x frame_ms / step_ms x real time, whatever k; k = the smaller of the two, at least 1;
- never more servers than a measurement saw keep real time (`servers`);
- with several widths measured, the one that gives the most audio per GPU (the realtime
  clock: only widths whose step fits a frame).

A model that runs on CPU (`launch.gpus: 0`, e.g. the cascaded baseline) takes no GPU: its
sessions run side by side on the node's cores, each needing the cores its server was
measured to use per second of audio (`launch.cpu_step`, `CpuCost`, `pack_cpu`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["measured", "declared", "assumed"]


@dataclass(frozen=True)
class StepCost:
    """One server's cost on the GPU(s) it runs on, at each width measured."""

    steps: tuple[tuple[int, float], ...]  # (sessions one server steps together, GPU ms of that step; 0: not known)
    frame_ms: float        # audio one step advances each session by
    memory_gb: float       # GPU memory of one server (0: not known)
    gpus: int = 1          # GPUs one server spans
    kind: Kind = "assumed"
    source: str = "no figure: a server is assumed to take its GPU's whole compute"
    gpu: str = ""          # the GPU the figure comes from
    servers: int | None = None  # servers measured sharing one GPU (group) in real time: never more

    @classmethod
    def of_spec(cls, spec: dict[str, Any]) -> StepCost:
        """A model spec's figures (`launch.gpu_step`, `launch.gpu_memory_gb`, `launch.gpus`,
        `audio.frame_ms`); without `gpu_step`, one session stepping in exactly one frame."""
        launch = spec.get("launch", {})
        frame_ms = float(spec.get("audio", {}).get("frame_ms", 80))
        memory = float(launch.get("gpu_memory_gb", 0) or 0)
        gpus = max(1, int(launch.get("gpus", 1) or 1))
        step = launch.get("gpu_step")
        if not step:
            return cls(steps=((1, frame_ms),), frame_ms=frame_ms, memory_gb=memory, gpus=gpus)
        steps = tuple((int(n), float(ms)) for n, ms in step.get("steps", []))
        if not steps:  # only servers measured: each keeps real time at one session (step 0: not known)
            steps = ((1, 0.0),)
        return cls(steps=steps, frame_ms=frame_ms, memory_gb=float(step.get("memory_gb", memory) or 0),
                   gpus=int(step.get("gpus", gpus)), kind=step["kind"], source=step["source"],
                   gpu=step.get("gpu", ""), servers=step.get("servers"))

    @property
    def has_figure(self) -> bool:
        return not self.source.startswith("no figure")

    def step_at(self, sessions: int) -> float | None:
        """GPU ms of one step at exactly `sessions` sessions, if measured or declared."""
        return dict(self.steps).get(sessions)


@dataclass(frozen=True)
class Packing:
    """Servers on one GPU group (`cost.gpus` GPUs), their width, and what that gives per GPU."""

    servers: int            # servers on one group of `cost.gpus` GPUs (0: cannot keep real time)
    sessions: int           # sessions each server steps at once (the width chosen)
    limited_by: str         # "compute", "memory", "measured servers", "real time" (no width fits a frame)
    sessions_per_gpu: float
    speed_per_gpu: float    # x real time of recorded audio one GPU sustains

    def gpu_fraction(self, gpus: int) -> float:
        """The share of a GPU (Ray's num_gpus) one server reserves: `gpus` / servers."""
        return gpus / self.servers if self.servers > 1 and gpus == 1 else float(gpus)


def _servers(cost: StepCost, step_ms: float, gpu_memory_gb: float) -> tuple[int, str]:
    """Servers of one width on one GPU group, and what limits them."""
    by_step = math.floor(cost.frame_ms / step_ms) if step_ms > 0 else None
    by_compute = (by_step if cost.servers is None else cost.servers if by_step is None
                  else min(cost.servers, by_step))
    if by_compute is None:
        by_compute = 1
    by_memory = (math.floor(cost.gpus * gpu_memory_gb / cost.memory_gb) if cost.memory_gb > 0 and gpu_memory_gb > 0
                 else by_compute)
    if by_memory < by_compute:
        return by_memory, "memory"
    return by_compute, "measured servers" if cost.servers is not None and by_compute == cost.servers else "compute"


def pack(cost: StepCost, gpu_memory_gb: float, clock: str, sessions: int | None = None) -> Packing:
    """Servers of one model per GPU (group) under the rule of the module docstring, at the width
    `sessions` (it must be one of the figure's), or at the width that gives the most."""
    if clock not in ("lockstep", "realtime"):
        raise ValueError(f"unknown clock {clock!r}; use 'lockstep' or 'realtime'")
    widths = [(n, ms) for n, ms in cost.steps if sessions is None or n == sessions]
    if not widths:
        raise ValueError(f"no step figure at {sessions} sessions; the figure has "
                         + ", ".join(str(n) for n, _ in cost.steps))
    options = []
    for n, ms in widths:
        servers, limited = _servers(cost, ms, gpu_memory_gb)
        if clock == "realtime":
            if ms > cost.frame_ms:
                options.append(Packing(0, n, "real time", 0.0, 0.0))
                continue
            per_gpu = servers * n / cost.gpus
            options.append(Packing(servers, n, limited, per_gpu, per_gpu))  # each session at exactly 1x
        else:
            servers = max(1, servers)  # lockstep: nothing waits on the wall clock
            # without a step time, what was measured: the servers, each at real time
            speed = n * cost.frame_ms / ms / cost.gpus if ms > 0 else servers * n / cost.gpus
            options.append(Packing(servers, n, limited, servers * n / cost.gpus, speed))
    return max(options, key=lambda p: (p.speed_per_gpu, -p.sessions))


@dataclass(frozen=True)
class CpuCost:
    """A CPU-only model's cost (`launch.gpus: 0`): the seconds of audio one core serves per
    second, i.e. 1 / (CPU seconds its server spends per second of audio), from the spec's
    `launch.cpu_step` (bench/bench_cpu_model.py measures it), and what the figure leaves
    out (`excludes`: a service outside the server, such as an LLM endpoint)."""

    x_real_time_per_core: float
    kind: Kind = "assumed"
    source: str = "no figure: a session is assumed to take one core at exactly real time"
    excludes: str = ""

    @classmethod
    def of_spec(cls, spec: dict[str, Any]) -> CpuCost | None:
        """The figure of a model whose spec says `launch.gpus: 0`; None for a GPU model."""
        launch = spec.get("launch", {})
        if "gpus" not in launch or int(launch["gpus"] or 0) != 0:
            return None
        step = launch.get("cpu_step")
        if not step:
            return cls(1.0)
        return cls(float(step["x_real_time_per_core"]), step["kind"], step["source"], step.get("excludes", ""))

    @property
    def has_figure(self) -> bool:
        return not self.source.startswith("no figure")

    def cores_per_session(self, harness_cores: float = 0.0) -> float:
        """Cores one session needs to keep real time: its server's share plus the harness's."""
        return 1.0 / self.x_real_time_per_core + harness_cores


@dataclass(frozen=True)
class CpuPacking:
    """Sessions of a CPU-only model side by side on a set of cores, and the speed they give."""

    cores: int
    sessions: int          # sessions the cores hold at once (0: one session cannot keep real time)
    cores_per_session: float
    speed: float           # x real time of recorded audio the cores sustain, all sessions together


def pack_cpu(cost: CpuCost, cores: int, clock: str, harness_cores: float = 0.0) -> CpuPacking:
    """Sessions of a CPU-only model on `cores` cores. Each session needs 1 / x_real_time_per_core
    cores for its server plus `harness_cores` (the harness's share per session: it runs on the
    same cores), so the cores hold floor(cores / that) sessions.
    - realtime: each session plays at exactly 1x; a server that needs more than one core per
      second of audio (x real time per core < 1) cannot keep real time, as a GPU step longer
      than a frame cannot (its work is a sequence of steps on one thread): 0;
    - lockstep: nothing waits on the wall clock, so the cores give their compute,
      cores / cores_per_session x real time, whatever the number of sessions (at least 1).
    The load is the average: a turn's ASR and TTS come in bursts, so a realtime run packed to
    every core adds queueing to the reply latency it measures (docs/runner.md)."""
    if clock not in ("lockstep", "realtime"):
        raise ValueError(f"unknown clock {clock!r}; use 'lockstep' or 'realtime'")
    if cores < 1:
        raise ValueError(f"cores must be >= 1, got {cores}")
    if cost.x_real_time_per_core <= 0 or harness_cores < 0:
        raise ValueError("x_real_time_per_core must be > 0 and harness_cores >= 0")
    need = cost.cores_per_session(harness_cores)
    fit = math.floor(cores / need + 1e-9)  # 1e-9: a fit exact in decimals (4 cores / 0.4) is not lost to rounding
    if clock == "realtime":
        if cost.x_real_time_per_core < 1.0:
            return CpuPacking(cores, 0, need, 0.0)
        return CpuPacking(cores, fit, need, float(fit))
    return CpuPacking(cores, max(1, fit), need, cores / need)


GPU_MEMORY_ENV = "DUPLEXEVAL_GPU_MEMORY_GB"


def gpu_share(spec: dict[str, Any], clock: str, gpu_memory_gb: float | None, sessions: int = 1) -> float:
    """The GPUs one server of `spec` reserves on `clock` at width `sessions` (Ray's `num_gpus`):
    `launch.gpus`, or 1/k of a GPU when k servers pack onto one (`pack`). No packing without
    the GPU's memory (`gpu_memory_gb`, from $DUPLEXEVAL_GPU_MEMORY_GB), without a
    `launch.gpu_step` figure at that width, for a server spanning several GPUs, or for a
    model that cannot keep real time."""
    gpus = int(spec.get("launch", {}).get("gpus", 0) or 0)
    if gpus != 1 or not gpu_memory_gb or not spec.get("launch", {}).get("gpu_step"):
        return float(gpus)
    cost = StepCost.of_spec(spec)
    if cost.gpus != 1 or cost.step_at(sessions) is None:
        return float(gpus)  # no figure at the width this run plays
    packing = pack(cost, gpu_memory_gb, clock, sessions)
    return packing.gpu_fraction(1) if packing.servers > 1 else 1.0


# The harness's own CPU per session and frame (the runner's step, framing and writing): the
# issue's target for bench/bench_runner.py, which measures it below that on this project's
# machine. The projection (bench/project_paper_suites.py) and `cpu_share` count the same.
HARNESS_MS_PER_FRAME = 0.4


def cpu_share(spec: dict[str, Any], clock: str, sessions: int = 1) -> float:
    """The cores one server of `spec` reserves (Ray's `num_cpus`) while it plays `sessions`
    sessions at once. A CPU-only model (`launch.gpus: 0`) with a `launch.cpu_step` figure on
    the realtime clock reserves what its sessions were measured to need, server and harness
    (`CpuCost.cores_per_session`): the cores then hold the sessions `pack_cpu` counts, not one
    server per core. Otherwise one core: a GPU model's server (its CPU side is the harness and
    the codec), a lockstep server (it steps as fast as its core lets it), a CPU model without
    a figure, or one that cannot keep real time. Ray takes fractions only below one core, so a
    need above one is rounded up to whole cores."""
    cost = CpuCost.of_spec(spec)
    if cost is None or not cost.has_figure or clock != "realtime" or cost.x_real_time_per_core < 1.0:
        return 1.0
    frame_ms = float(spec.get("audio", {}).get("frame_ms", 80) or 80)
    need = max(1, sessions) * cost.cores_per_session(HARNESS_MS_PER_FRAME / frame_ms)
    if need > 1.0:
        return float(math.ceil(need - 1e-9))
    return math.ceil(need * 10_000 - 1e-6) / 10_000  # Ray's resolution: 1/10,000 of a core
