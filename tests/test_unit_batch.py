"""Batched sessions in runs (issue 26, item 1), the fast part: a worker's batch of units on one
server (runner/unit_batch.py) and how the scheduler fills batches (executors/core.py Batches).

Real agent processes and sockets; the one-session failure comes from a test-only agent
(tests/batch_fault_agent.py, babbler's real output) standing in for a model that fails one
conversation of a batch. End-to-end identity of whole runs at N = 1 and N > 1, and a killed
driver resumed mid-batch: tests/test_executors_e2e.py.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from click.testing import CliRunner
from runner_helpers import tone

from duplexeval.executors.base import Unit
from duplexeval.executors.core import BATCH_DEPTH, Batches
from duplexeval.io import read_jsonl
from duplexeval.runner import FileStimulus, load_model_spec, run_items
from duplexeval.runner.errors import RunConfigMismatch
from duplexeval.runner.items import ModelHost, item_seed, prepare_out_dir
from duplexeval.runner.unit_batch import UnitSession, play_units
from duplexeval.specs.modelspec import REPO_ROOT, model_spec_from

TESTS = Path(__file__).parent
RATE = 16000
SEED = 7


def _items(n: int) -> list:
    return [(f"item-{k}", lambda k=k: FileStimulus(tone(1.2 + 0.3 * k, freq=200.0 + 50 * k, seed=k), RATE,
                                                    tail_frames=2)) for k in range(n)]


def _sessions(out: Path, items: list) -> list[UnitSession]:
    return [UnitSession(out, i, [(i, f)], False, "lockstep", RATE, SEED, None) for i, f in items]


def _files(item_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(item_dir.iterdir())}


def fault_spec(width: int, doomed: list[str]) -> dict:
    seeds = ",".join(str(item_seed(SEED, i)) for i in doomed)
    return {"id": "batch-fault", "clocks": ["lockstep"], "capabilities": ["fork", "teacher_forcing"],
            "launch": {"backend": "local", "max_sessions": width, "batch_exact": True, "startup_timeout_s": 30,
                       "command": ["{python}", str(TESTS / "batch_fault_agent.py"), "--socket", "{socket}"],
                       "env": {"PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(TESTS)]),
                               "BATCH_FAULT_SEEDS": seeds, "BATCH_FAULT_FRAME": "5"}},
            "audio": {"in_rate": 24000, "out_rate": 24000, "frame_ms": 80}}


def test_a_session_failing_inside_a_batch_errors_only_its_own_item(tmp_path):
    items = _items(4)
    # The reference: babbler one item at a time (the fault agent is babbler for every other session).
    alone = run_items(load_model_spec("babbler").with_max_sessions(1), items, tmp_path / "alone", seed=SEED)
    assert [r.status for r in alone] == ["ok"] * 4

    spec = model_spec_from(fault_spec(4, doomed=["item-1"])).with_max_sessions(None)  # as a run starts it
    out = prepare_out_dir(spec, [i for i, _ in items], tmp_path / "batched", "lockstep", RATE, SEED, None)
    host = ModelHost(spec)
    try:
        results = play_units(host, _sessions(out, items))
        assert host.backend is None  # the faulted server was stopped, after its siblings had finished
    finally:
        host.close()
    assert [r.status for rs in results for r in rs] == ["ok", "error", "ok", "ok"]
    failed = results[1][0]
    assert "NaN" in failed.reason and "frame 5" in failed.reason
    assert not (failed.item_dir / "recording.wav").exists()  # nothing to score as silence
    status = read_jsonl(failed.item_dir / "events.jsonl")[-1]
    assert status["type"] == "error" and status["code"] == "INTERNAL"
    for k in (0, 2, 3):  # the siblings played on, on the same server, to the same bytes as alone
        got, want = (_files(d / "items" / f"item-{k}") for d in (out, tmp_path / "alone"))
        assert got.pop("status.json") != want.pop("status.json")  # it names the spec (another id and sha256)
        assert got == want

    # A resume plays nothing again: a model fault is a result, so the error item is finished too.
    again = ModelHost(spec)
    try:
        assert all(r.skipped for rs in play_units(again, _sessions(out, items)) for r in rs)
        assert again.backend is None  # nothing to play: no server started
    finally:
        again.close()


def test_units_of_a_batch_are_stepped_together_on_one_server(tmp_path):
    spec = model_spec_from({
        "id": "batch-probe", "capabilities": ["text_events"], "clocks": ["lockstep"],
        "launch": {"backend": "local", "max_sessions": 3,
                   "command": ["{python}", str(TESTS / "batch_probe_agent.py"), "--socket", "{socket}",
                               "--batch-wait-ms", "2000"],
                   "env": {"PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(TESTS)])}},
        "audio": {"in_rate": 16000, "out_rate": 16000, "frame_ms": 80}}).with_max_sessions(None)
    assert spec.local_argv("/s")[-2:] == ["--max-sessions", "3"]  # the harness starts it at the spec's width
    items = [(f"u{k}", lambda k=k: FileStimulus(tone(1.6, seed=k), RATE)) for k in range(3)]
    out = prepare_out_dir(spec, [i for i, _ in items], tmp_path, "lockstep", RATE, SEED, None)
    host = ModelHost(spec)
    try:
        results = play_units(host, _sessions(out, items))
    finally:
        host.close()
    assert [r.status for rs in results for r in rs] == ["ok"] * 3
    sizes = Counter(int(e["text"].split("=")[1]) for i, _ in items
                    for e in read_jsonl(out / "items" / i / "events.jsonl") if e["type"] == "model_text")
    assert sizes[3] >= 0.75 * sum(sizes.values()), sizes


def test_a_slot_is_refilled_as_soon_as_its_session_ends(tmp_path):
    """A queue longer than the width: the long conversation shares its steps with the short
    ones, because each short one's slot is taken by the next the moment it ends (a batch
    handed out whole would leave the long one alone once the first short one ended)."""
    spec = model_spec_from({
        "id": "batch-probe", "capabilities": ["text_events"], "clocks": ["lockstep"],
        "launch": {"backend": "local", "max_sessions": 2,
                   "command": ["{python}", str(TESTS / "batch_probe_agent.py"), "--socket", "{socket}",
                               "--batch-wait-ms", "2000"],
                   "env": {"PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(TESTS)]), "BATCH_PROBE_STEP_MS": "40"}},
        "audio": {"in_rate": 16000, "out_rate": 16000, "frame_ms": 80}}).with_max_sessions(None)
    built_on: list[str] = []

    def stimulus(seconds: float, seed: int) -> FileStimulus:
        built_on.append(threading.current_thread().name)
        return FileStimulus(tone(seconds, seed=seed), RATE)

    items = [("long", lambda: stimulus(3.2, 9))]
    items += [(f"short{k}", lambda k=k: stimulus(0.8, k)) for k in range(4)]
    out = prepare_out_dir(spec, [i for i, _ in items], tmp_path, "lockstep", RATE, SEED, None)
    host = ModelHost(spec)
    try:
        results = play_units(host, _sessions(out, items))
    finally:
        host.close()
    assert [r.status for rs in results for r in rs] == ["ok"] * 5
    sizes = Counter(int(e["text"].split("=")[1]) for e in read_jsonl(out / "items" / "long" / "events.jsonl")
                    if e["type"] == "model_text")
    # Whole batches ([long, short0], [short1, short2], [short3]) would give it at most one short
    # one's 10 frames of company; refilled, it has company but for the few frames in which the
    # next session connects (hello, a BUSY retry while the server frees the slot).
    assert sizes[2] >= 20, sizes
    # Rendered off the event loop (a stall there would be the other sessions' latency).
    assert len(built_on) == 5 and threading.main_thread().name not in built_on


def test_a_fault_in_a_queue_stops_the_server_once_its_siblings_end_and_the_queue_plays_on(tmp_path):
    items = _items(5)
    run_items(load_model_spec("babbler").with_max_sessions(1), items, tmp_path / "alone", seed=SEED)
    spec = model_spec_from(fault_spec(2, doomed=["item-1"])).with_max_sessions(None)
    out = prepare_out_dir(spec, [i for i, _ in items], tmp_path / "queued", "lockstep", RATE, SEED, None)
    host = ModelHost(spec)
    try:
        host.ensure()
        first = host.backend
        results = play_units(host, _sessions(out, items))
        assert host.backend is not None and host.backend is not first  # stopped after the fault, started afresh
    finally:
        host.close()
    assert [r.status for rs in results for r in rs] == ["ok", "error", "ok", "ok", "ok"]
    assert "NaN" in results[1][0].reason
    for k in (0, 2, 3, 4):  # the one beside it and those queued after it: as alone
        got, want = (_files(d / "items" / f"item-{k}") for d in (out, tmp_path / "alone"))
        got.pop("status.json"), want.pop("status.json")
        assert got == want


def test_the_scheduler_fills_a_worker_up_to_its_servers_width():
    class Plan:  # what Batches reads of a JobPlan: its width
        def __init__(self, width: int):
            self.max_sessions = width

    wide, narrow = Plan(3), Plan(1)
    units = [Unit("m/b", f"u{k}", (f"u{k}",), "m@x:localx3") for k in range(5)]
    solo = Unit("n/b", "v0", ("v0",), "n@y:local")
    workers = iter(["w1", "w2", "w3", "w4"])
    b = Batches()
    for u in units:
        b.add(wide, u, lambda: next(workers))
    b.add(narrow, solo, lambda: next(workers))
    assert not b.room(solo) and b.reserved("w1") and b.reserved("w3") and not b.reserved("w4")
    got = [(w, [u.unit_id for _, u in batch]) for w, batch in b.take()]
    assert got == [("w1", ["u0", "u1", "u2"]), ("w2", ["u3", "u4"]), ("w3", ["v0"])]
    assert b.take() == []


def test_with_no_idle_worker_left_a_batched_servers_queue_deepens():
    class Plan:
        def __init__(self, width: int):
            self.max_sessions = width

    wide, narrow = Plan(2), Plan(1)
    units = [Unit("m/b", f"u{k}", (f"u{k}",), "m@x:localx2") for k in range(2 * 2 * BATCH_DEPTH + 1)]
    idle = ["w1", "w2"]
    b = Batches()
    for u in units[:-1]:
        assert b.room(u) or idle
        b.add(wide, u, lambda: idle.pop(0) if idle else None)
    assert not b.room(units[-1])  # both workers hold width x depth units
    got = {w: [u.unit_id for _, u in batch] for w, batch in b.take()}
    assert got["w1"][:2] == ["u0", "u1"] and got["w2"][:2] == ["u2", "u3"]  # idle workers filled to width first
    assert len(got["w1"]) == len(got["w2"]) == 2 * BATCH_DEPTH  # then the least filled deepens
    solo = [Unit("n/b", f"v{k}", (f"v{k}",), "n@y:local") for k in range(2)]
    b.add(narrow, solo[0], lambda: "w3")
    assert not b.room(solo[1])  # a one-session server never queues


def test_a_width_that_changes_bytes_is_part_of_the_folders_identity(tmp_path):
    base = load_model_spec("babbler")
    inexact = dataclasses.replace(base, max_sessions=4, batch_exact=False)
    prepare_out_dir(inexact, ["a"], tmp_path / "m", "lockstep", RATE, 0, None)
    with pytest.raises(RunConfigMismatch, match="max_sessions changed"):
        prepare_out_dir(inexact.with_max_sessions(2), ["a"], tmp_path / "m", "lockstep", RATE, 0, None)
    # The reference agents are exact: their folders resume at any width.
    assert base.max_sessions == 1 and base.with_max_sessions(None).max_sessions == 4 and base.batch_exact
    prepare_out_dir(base.with_max_sessions(None), ["a"], tmp_path / "r", "lockstep", RATE, 0, None)
    prepare_out_dir(base.with_max_sessions(1), ["a"], tmp_path / "r", "lockstep", RATE, 0, None)
    assert base.with_max_sessions(64).max_sessions == 4  # a cap never raises the spec's width
    assert base.local_argv("/s")[-2:] == ["--socket", "/s"]  # a plain launch (session, conformance): one session


def test_bad_widths_are_named(tmp_path):
    with pytest.raises(ValueError, match="launch.max_sessions must be an integer >= 1, got 0"):
        model_spec_from({**fault_spec(1, []), "launch": {**fault_spec(1, [])["launch"], "max_sessions": 0}})
    from duplexeval.cli import cli

    res = CliRunner().invoke(cli, ["run", "--max-sessions", "0", "--runs-dir", str(tmp_path)])
    assert res.exit_code == 2 and "--max-sessions" in res.output and "Traceback" not in res.output


def test_moshi_tiny_batched_run_agrees_with_one_session_at_a_time_within_the_stated_tolerance(tmp_path):
    """moshi-tiny is not byte-exact across widths (docs/runner.md, "Batched sessions in runs"):
    width 2 and width 1 run other kernels; the recordings agree to within 4 s16 steps."""
    spec = load_model_spec("moshi-tiny")
    items = [(f"m{k}", lambda k=k: FileStimulus(tone(1.6, rate=24000, freq=180.0 + 60 * k, seed=k), 24000,
                                                 tail_frames=2)) for k in range(2)]
    run_items(spec, items, tmp_path / "one", seed=SEED, rate=24000)
    wide = spec.with_max_sessions(2)
    out = prepare_out_dir(wide, [i for i, _ in items], tmp_path / "two", "lockstep", 24000, SEED, None)
    host = ModelHost(wide)
    try:
        results = play_units(host, [UnitSession(out, i, [(i, f)], False, "lockstep", 24000, SEED, None)
                                    for i, f in items])
    finally:
        host.close()
    assert [r.status for rs in results for r in rs] == ["ok", "ok"]
    for i, _ in items:
        a, _ = sf.read(tmp_path / "one" / "items" / i / "recording.wav", dtype="int16")
        b, _ = sf.read(out / "items" / i / "recording.wav", dtype="int16")
        assert a.shape == b.shape and np.array_equal(a[:, 0], b[:, 0])  # what the model heard: the same
        assert np.abs(a[:, 1]).max() > 100  # it speaks: agreement is not of silence
        assert np.abs(a[:, 1].astype(int) - b[:, 1].astype(int)).max() <= 4
    assert json.loads((out / "items" / "m0" / "status.json").read_text())["max_sessions"] == 2
