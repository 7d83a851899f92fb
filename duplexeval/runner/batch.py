"""Batched sessions, harness side: several sessions at once against one model server.

A server that declares `max_sessions: N` in `ready` (docs/protocol.md, "Batched
sessions") steps up to N sessions together, so one model process, or one GPU, serves N
conversations at once. Each session here is an ordinary `run_session`: its own socket,
its own stimulus (its own adaptive MPE scheduler), its own seed. They share only the
event loop, so for a model whose sessions are independent the outcomes are those of N
separate runs (tests/test_batched_sessions.py checks it byte for byte).
"""

from __future__ import annotations

import asyncio
from typing import Sequence

from duplexeval.runner.client import Endpoint, ProtocolClient
from duplexeval.runner.errors import ModelFault
from duplexeval.runner.session import SessionOutcome, run_session
from duplexeval.runner.stimulus import Stimulus
from duplexeval.specs.modelspec import ModelSpec

# A server frees a session's slot when it has seen the close, which can be just after
# the next session of the same slot connected: that one gets BUSY and is retried.
BUSY_RETRY_S = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)


async def probe_max_sessions(endpoint: Endpoint, spec: ModelSpec) -> int:
    """`ready.max_sessions` of the server (1 when it does not say): one short session."""
    client = await ProtocolClient.open(endpoint, spec.step_timeout_s)
    try:
        ready = await client.hello("lockstep", 0, timeout=max(spec.startup_timeout_s, spec.step_timeout_s))
    finally:
        await client.close()
    n = ready.get("max_sessions", 1)
    return n if isinstance(n, int) and n >= 1 else 1


async def run_sessions(endpoint: Endpoint, spec: ModelSpec, stimuli: Sequence[Stimulus], clock: str = "lockstep",
                       rate: int = 16000, seeds: Sequence[int] | int = 0, prompt: str | None = None, *,
                       max_sessions: int | None = None, pipeline_frames: int | None = None) -> list[SessionOutcome]:
    """Plays `stimuli[i]` with seed `seeds[i]` as concurrent sessions, at most `max_sessions` at a time.

    `max_sessions` defaults to what the server declares (`probe_max_sessions`); more
    than it declares would only be answered BUSY. Returns the outcomes in the order of
    `stimuli`; a fault is in its outcome, never raised, and does not stop the others.
    """
    seed_list = [seeds] * len(stimuli) if isinstance(seeds, int) else list(seeds)
    if len(seed_list) != len(stimuli):
        raise ValueError(f"run_sessions: {len(stimuli)} stimuli but {len(seed_list)} seeds")
    if not stimuli:
        return []
    if max_sessions is None:
        try:
            max_sessions = await probe_max_sessions(endpoint, spec)
        except ModelFault as fault:
            return [SessionOutcome(rate=rate, fault=fault) for _ in stimuli]
    if max_sessions < 1:
        raise ValueError(f"run_sessions: max_sessions must be >= 1, got {max_sessions}")
    gate = asyncio.Semaphore(max_sessions)

    async def one(stimulus: Stimulus, seed: int) -> SessionOutcome:
        async with gate:
            return await run_session_when_free(endpoint, spec, stimulus, clock, rate, seed, prompt, pipeline_frames)

    return list(await asyncio.gather(*(one(s, seed) for s, seed in zip(stimuli, seed_list))))


def refused_busy(outcomes: Sequence[SessionOutcome]) -> bool:
    """Every outcome a BUSY before `ready`: the server had no free slot yet, nothing was played."""
    return bool(outcomes) and all(o.fault is not None and o.fault.code == "BUSY" and o.ready is None for o in outcomes)


async def run_session_when_free(endpoint: Endpoint, spec: ModelSpec, stimulus: Stimulus, clock: str, rate: int,
                                seed: int, prompt: str | None, pipeline_frames: int | None = None) -> SessionOutcome:
    """`run_session`, retried with a short backoff while the server answers BUSY before `ready`
    (the stimulus was never bound, so it can be played again)."""
    for wait in (*BUSY_RETRY_S, None):
        out = await run_session(endpoint, spec, stimulus, clock, rate, seed, prompt, pipeline_frames)
        if wait is None or not refused_busy([out]):
            return out
        await asyncio.sleep(wait)
    return out  # unreachable: the last wait is None


__all__ = ["probe_max_sessions", "refused_busy", "run_session_when_free", "run_sessions"]
