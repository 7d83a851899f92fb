"""torch's random generators: seed per session, save and restore for a fork snapshot.

Every shim of a sampling model seeds torch's CPU (and CUDA) generators with `hello.seed`
so lockstep is deterministic, and puts their state into a fork snapshot so a restored
session samples the same continuation. torch is imported lazily.
"""

from __future__ import annotations

from typing import Any


def seed_torch(seed: int) -> None:
    import torch

    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def torch_rng_state() -> dict[str, Any]:
    import torch

    state: dict[str, Any] = {"cpu": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_torch_rng_state(state: dict[str, Any]) -> None:
    import torch

    torch.set_rng_state(state["cpu"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
