"""How many servers of a model share one GPU: by the memory a server holds and the GPU time
its step takes, never more than keep real time (docs/runner.md, "Servers per GPU").

A model's cost on a GPU is a figure, measured or declared, never guessed here: the spec's
`launch.gpu_step` (sessions one server steps at once, the GPU milliseconds of that step, the
GPU it was measured on, where the figure comes from, whether it was measured, declared or
assumed) and `launch.gpu_memory_gb` (a server's memory). Without a step figure a server is
assumed to take its GPU's whole compute: one server per GPU, as before.

The rule, for k servers of one model on one GPU (or one group of `launch.gpus` GPUs):
- their steps share the GPU's time, so k steps must fit in one frame for every session to
  keep real time: k <= frame_ms / step_ms (compute);
- k servers must fit in the GPU's memory: k <= GPU memory / a server's memory (memory);
- realtime clock: k = the smaller of the two, and 0 when one step alone is longer than a
  frame (the model cannot keep real time on that GPU at that width: a realtime session would
  fall behind and end LATE, so the executor refuses to pack it and runs one server, as
  before, and the projection says so);
- lockstep clock: nothing waits on the wall clock, so a GPU's throughput is its compute,
  sessions x frame_ms / step_ms x real time, whatever k; k = the smaller of the two, at least 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["measured", "declared", "assumed"]


@dataclass(frozen=True)
class StepCost:
    """One server's cost on the GPU(s) it runs on."""

    sessions: int          # sessions one server steps together (its width)
    step_ms: float         # GPU milliseconds of one such step
    frame_ms: float        # audio one step advances each session by
    memory_gb: float       # GPU memory of one server at that width (0: not known)
    gpus: int = 1          # GPUs one server spans
    kind: Kind = "assumed"
    source: str = "no figure: a server is assumed to take its GPU's whole compute"
    gpu: str = ""          # the GPU the figure comes from

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
            return cls(sessions=1, step_ms=frame_ms, frame_ms=frame_ms, memory_gb=memory, gpus=gpus)
        return cls(sessions=int(step["sessions"]), step_ms=float(step["step_ms"]), frame_ms=frame_ms,
                   memory_gb=float(step.get("memory_gb", memory) or 0), gpus=int(step.get("gpus", gpus)),
                   kind=step["kind"], source=step["source"], gpu=step.get("gpu", ""))

    @property
    def keeps_real_time(self) -> bool:
        return self.step_ms <= self.frame_ms


@dataclass(frozen=True)
class Packing:
    """Servers on one GPU group (`cost.gpus` GPUs) and what that gives per GPU."""

    servers: int            # servers on one group of `cost.gpus` GPUs (0: cannot keep real time)
    limited_by: str         # "compute", "memory", "real time" (a step longer than a frame)
    sessions_per_gpu: float
    speed_per_gpu: float    # x real time of recorded audio one GPU sustains

    def gpu_fraction(self, gpus: int) -> float:
        """The share of a GPU (Ray's num_gpus) one server reserves: `gpus` / servers."""
        return gpus / self.servers if self.servers > 1 and gpus == 1 else float(gpus)


def pack(cost: StepCost, gpu_memory_gb: float, clock: str) -> Packing:
    """Servers of one model per GPU (group) under the rule of the module docstring."""
    if clock not in ("lockstep", "realtime"):
        raise ValueError(f"unknown clock {clock!r}; use 'lockstep' or 'realtime'")
    by_compute = math.floor(cost.frame_ms / cost.step_ms) if cost.step_ms > 0 else 1
    by_memory = (math.floor(cost.gpus * gpu_memory_gb / cost.memory_gb) if cost.memory_gb > 0 and gpu_memory_gb > 0
                 else by_compute)
    if clock == "realtime":
        if by_compute < 1:
            return Packing(0, "real time", 0.0, 0.0)
        servers = min(by_compute, by_memory)
        limited = "memory" if by_memory < by_compute else "compute"
        if servers < 1:
            return Packing(0, "memory", 0.0, 0.0)
        sessions = servers * cost.sessions / cost.gpus
        return Packing(servers, limited, sessions, sessions)  # each session at exactly 1x
    servers = max(1, min(by_compute, by_memory))
    limited = "memory" if by_memory < max(1, by_compute) else "compute"
    speed = cost.sessions * cost.frame_ms / cost.step_ms / cost.gpus
    return Packing(servers, limited, servers * cost.sessions / cost.gpus, speed)


GPU_MEMORY_ENV = "DUPLEXEVAL_GPU_MEMORY_GB"


def gpu_share(spec: dict[str, Any], clock: str, gpu_memory_gb: float | None) -> float:
    """The GPUs one server of `spec` reserves on `clock` (Ray's `num_gpus`): `launch.gpus`,
    or 1/k of a GPU when k servers pack onto one (`pack`). No packing without the GPU's
    memory (`gpu_memory_gb`, from $DUPLEXEVAL_GPU_MEMORY_GB), without a `launch.gpu_step`
    figure, for a server spanning several GPUs, or for a model that cannot keep real time."""
    gpus = int(spec.get("launch", {}).get("gpus", 0) or 0)
    if gpus != 1 or not gpu_memory_gb or not spec.get("launch", {}).get("gpu_step"):
        return float(gpus)
    cost = StepCost.of_spec(spec)
    if cost.gpus != 1:
        return float(gpus)
    packing = pack(cost, gpu_memory_gb, clock)
    return packing.gpu_fraction(1) if packing.servers > 1 else 1.0
