"""Batched sessions (issue 15, item 3): N sessions at once against one server = N separate runs.

Real agent processes started with `--max-sessions N`, real Unix sockets, the real MPE
scheduler (one per session, each adapting to its own model output). The reference
agents are deterministic, so a batched run must give exactly the outcomes of separate
runs against a one-session server.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import subprocess
import sys
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from runner_helpers import tone

from duplexeval.benchmarks.mpe.plan import mpe_items
from duplexeval.runner import FileStimulus, load_model_spec
from duplexeval.runner.backends import make_backend
from duplexeval.runner.batch import probe_max_sessions, run_sessions
from duplexeval.runner.client import ProtocolClient
from duplexeval.runner.conformance import run_conformance
from duplexeval.runner.errors import ModelFault
from duplexeval.runner.session import SessionOutcome, run_session
from duplexeval.specs import Registry
from duplexeval.specs.modelspec import REPO_ROOT, ModelSpec, model_spec_from

TESTS = Path(__file__).parent
RATE = 16000


def batched(spec: ModelSpec, n: int, *extra: str) -> ModelSpec:
    """The spec's server started with `--max-sessions n` (the harness appends it for a width above 1)."""
    return dataclasses.replace(spec, max_sessions=n, command=spec.command + extra)


@contextmanager
def serving(spec: ModelSpec):
    backend = make_backend(spec)
    try:
        yield backend.start()
    finally:
        backend.stop()


def separately(spec: ModelSpec, factories: list, seeds: list[int]) -> list[SessionOutcome]:
    spec = spec.with_max_sessions(1)  # a one-session server
    with serving(spec) as endpoint:
        return [asyncio.run(run_session(endpoint, spec, make(), "lockstep", RATE, seed)) for make, seed in zip(factories, seeds)]


def together(spec: ModelSpec, endpoint, factories: list, seeds: list[int], **kw) -> list[SessionOutcome]:
    return asyncio.run(run_sessions(endpoint, spec, [make() for make in factories], "lockstep", RATE, seeds, **kw))


def assert_same(a: SessionOutcome, b: SessionOutcome) -> None:
    assert a.fault is None and b.fault is None, (a.fault, b.fault)
    assert a.frames == b.frames > 0
    assert np.array_equal(np.concatenate(a.heard), np.concatenate(b.heard))
    assert np.array_equal(a.said, b.said)
    assert a.events == b.events


@pytest.fixture(scope="module")
def mpe_factories():
    bench = dict(Registry.load().get("benchmark", "mpe-explicit").data)
    bench["data"] = {"source": "embedded", "path": "data/embedded/mpe/scenes"}
    return [make for _, make in mpe_items(bench, limit=2)]


def test_oracle_on_two_mpe_scenes_at_once_equals_two_separate_runs(mpe_factories):
    spec = load_model_spec("oracle")
    seeds = [11, 12]
    alone = separately(spec, mpe_factories, seeds)
    assert all(np.abs(o.said).max() > 0.05 for o in alone)  # the oracle answered: outputs are not trivially equal
    assert alone[0].frames != alone[1].frames  # scenes of different lengths: one session ends while the other runs
    with serving(batched(spec, 4)) as endpoint:
        # each session its own adaptive scheduler, in lockstep with the other
        for a, b in zip(alone, together(spec, endpoint, mpe_factories, seeds)):
            assert_same(a, b)


@pytest.mark.parametrize("window", [1, 6])
def test_babbler_n_1_2_4_at_once_equals_separate_runs(window):
    spec = load_model_spec("babbler")
    factories = [lambda k=k: FileStimulus(tone(1.5 + 0.4 * k, seed=k), RATE, tail_frames=3) for k in range(4)]
    seeds = [1, 2, 3, 4]
    alone = separately(spec, factories, seeds)
    with serving(batched(spec, 4)) as endpoint:
        assert asyncio.run(probe_max_sessions(endpoint, spec)) == 4
        for n in (1, 2, 4):
            outs = together(spec, endpoint, factories[:n], seeds[:n], pipeline_frames=window)
            for a, b in zip(alone, outs):
                assert_same(a, b)


def test_more_stimuli_than_sessions_queue_for_a_slot():
    spec = load_model_spec("silent")
    factories = [lambda k=k: FileStimulus(tone(0.4, seed=k), RATE) for k in range(5)]
    with serving(batched(spec, 2)) as endpoint:
        outs = together(spec, endpoint, factories, list(range(5)))  # max_sessions from ready: 2
    assert [o.fault for o in outs] == [None] * 5 and [o.frames for o in outs] == [5] * 5


def probe_spec(n: int, wait_ms: float) -> ModelSpec:
    return model_spec_from({
        "id": "batch-probe", "capabilities": ["text_events"], "clocks": ["lockstep"],
        "launch": {"backend": "local", "command": ["{python}", str(TESTS / "batch_probe_agent.py"), "--socket", "{socket}",
                                                   "--max-sessions", str(n), "--batch-wait-ms", str(wait_ms)],
                   "env": {"PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(TESTS)])}},
        "audio": {"in_rate": 16000, "out_rate": 16000, "frame_ms": 80}})


def test_the_server_steps_the_waiting_sessions_in_one_batch():
    spec = probe_spec(4, wait_ms=2000)  # wait for every streaming session: batches are full
    factories = [lambda k=k: FileStimulus(tone(2.0, seed=k), RATE) for k in range(4)]
    with serving(spec) as endpoint:
        outs = together(spec, endpoint, factories, [0, 1, 2, 3])
    sizes = Counter(int(e["text"].split("=")[1]) for o in outs for e in o.events if e["type"] == "model_text")
    assert max(sizes) == 4
    # Sessions join one by one at the start; after that every frame of every session is in a batch of 4.
    assert sizes[4] >= 0.75 * sum(sizes.values()), sizes


def test_session_n_plus_1_is_busy_and_names_the_limit():
    spec = batched(load_model_spec("silent"), 2)

    async def three(endpoint) -> str:
        held = [await ProtocolClient.open(endpoint, 5.0) for _ in range(2)]
        try:
            for c in held:
                assert (await c.hello("lockstep", 0))["max_sessions"] == 2
            third = await ProtocolClient.open(endpoint, 5.0)
            try:
                with pytest.raises(ModelFault) as exc:
                    await third.hello("lockstep", 0)
                return f"{exc.value.code}: {exc.value.reason}"
            finally:
                await third.close()
        finally:
            for c in held:
                await c.close()

    with serving(spec) as endpoint:
        msg = asyncio.run(three(endpoint))
    assert msg.startswith("BUSY") and "all 2 sessions of this server are in use" in msg


@pytest.mark.parametrize("agent, n, limit", [("silent", 65, 64), ("faulty", 2, 1)])
def test_more_sessions_than_an_agent_keeps_apart_is_a_start_error(agent, n, limit):
    argv = [sys.executable, "-m", f"duplexeval.agents.{agent}", "--socket", "/tmp/unused.sock", "--max-sessions", str(n)]
    if agent == "faulty":
        argv += ["--mode", "none"]
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=REPO_ROOT, timeout=60)
    assert proc.returncode == 2
    assert f"--max-sessions {n} is outside 1..{limit}" in proc.stderr


@pytest.mark.parametrize("n", [1, 3])
def test_conformance_checks_batched_sessions(n):
    spec = load_model_spec("oracle")
    results = {r.name: r for r in run_conformance(batched(spec, n))}
    check = results["batched_sessions"]
    assert check.status == "pass", check.detail
    assert check.detail.startswith(f"max_sessions {n}:")
    assert "BUSY" in check.detail
    failed = {name: r.detail for name, r in results.items() if r.status == "fail"}
    assert not failed  # every other check holds on a batched server too (errors: no BUSY at session 2)
