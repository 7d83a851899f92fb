"""Context consistency: teacher-forced history, forked (linear) vs replayed (quadratic) sessions."""

from __future__ import annotations

import numpy as np
import pytest

from duplexeval.audio import read_stereo_recording
from duplexeval.benchmarks.mtr.items import context_mode, item_factories, load_dialogues, scored_rounds
from duplexeval.benchmarks.mtr.plan import HISTORY_FLAG, context_record
from duplexeval.runner import run_items
from duplexeval.runner.fork import run_forked_items
from duplexeval.specs import Registry

ROUNDS = 3


@pytest.fixture(scope="module")
def registry():
    return Registry.load()


@pytest.fixture(scope="module")
def groups(registry):
    bench = dict(registry.get("benchmark", "mtr-combo-si").data)
    bench["data"] = {"source": "embedded", "path": "data/embedded/mtr/features.yaml"}
    rounds = [r for r in scored_rounds(bench, load_dialogues(bench)) if r.round.round <= ROUNDS]
    assert [r.item_id for r in rounds] == ["feat-si.r01", "feat-si.r02", "feat-si.r03"]
    return rounds, item_factories(bench, rounds, teacher_forcing=True)


@pytest.mark.parametrize("model", ["oracle", "babbler"])
def test_forked_and_replayed_sessions_record_the_same_bytes(tmp_path, registry, groups, model):
    rounds, grouped = groups
    spec = registry.get("model", model)
    forked = run_forked_items(spec, grouped, tmp_path / "fork", rate=16000)
    replayed = run_items(spec, [i for _, items in grouped for i in items], tmp_path / "replay", rate=16000)
    assert [r.status for r in forked] == [r.status for r in replayed] == ["ok"] * ROUNDS
    for sr in rounds:
        a = read_stereo_recording(tmp_path / "fork/items" / sr.item_id / "recording.wav")
        b = read_stereo_recording(tmp_path / "replay/items" / sr.item_id / "recording.wav")
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]), sr.item_id


def test_history_is_the_ground_truth_and_only_round_k_is_the_models(tmp_path, registry, groups):
    rounds, grouped = groups
    run_forked_items(registry.get("model", "silent"), grouped, tmp_path / "silent", rate=16000)
    sr = rounds[2]
    heard, said, rate = read_stereo_recording(tmp_path / "silent/items" / sr.item_id / "recording.wav")
    user, asst = sr.dialogue.audio()
    fork = int(round(sr.window.start_s * rate)) // 1280 * 1280  # 80 ms frames at 16 kHz
    assert np.allclose(said[:fork], asst[:fork], atol=1e-4)       # rounds 1..k-1: forced ground truth
    assert np.abs(said[fork:]).max() == 0.0                       # round k: the (silent) model itself
    assert np.allclose(heard, user[: len(heard)], atol=1e-4)      # the user channel as recorded
    assert len(heard) >= int(sr.window.end_s * rate)              # up to the end of the response window


def test_forked_run_resumes_a_finished_group_without_a_session(tmp_path, registry, groups):
    _, grouped = groups
    spec = registry.get("model", "silent")
    run_forked_items(spec, grouped, tmp_path / "r", rate=16000)
    again = run_forked_items(spec, grouped, tmp_path / "r", rate=16000)
    assert all(r.skipped for r in again)


def test_context_mode_follows_capabilities():
    bench = {"context": {"teacher_forcing": True, "without_capability": "history-as-heard"}}
    assert context_mode(bench, ["teacher_forcing", "fork"], "lockstep") == "fork"
    assert context_mode(bench, ["teacher_forcing", "fork"], "realtime") == "replay"
    assert context_mode(bench, ["teacher_forcing"], "lockstep") == "replay"
    assert context_mode(bench, [], "lockstep") == "history-as-heard"
    assert context_record("history-as-heard")["flag"] == HISTORY_FLAG
    assert context_record("fork") == {"mode": "fork", "teacher_forcing": True, "flag": None}


def test_history_as_heard_forces_nothing(tmp_path, registry):
    bench = dict(registry.get("benchmark", "mtr-combo-s").data)
    bench["data"] = {"source": "embedded", "path": "data/embedded/mtr/features.yaml"}
    rounds = [r for r in scored_rounds(bench, load_dialogues(bench)) if r.round.round == 2]
    (_, items), = item_factories(bench, rounds, teacher_forcing=False)
    run_items(registry.get("model", "silent"), items, tmp_path, rate=16000)
    _, said, _ = read_stereo_recording(tmp_path / "items" / rounds[0].item_id / "recording.wav")
    assert np.abs(said).max() == 0.0  # the silent model's own (empty) history, no forced audio


def test_results_without_teacher_forcing_are_flagged(tmp_path):
    from collections import Counter

    from duplexeval.benchmarks.mtr.score import aggregate

    bench = {"id": "x", "dimension": "mtr-safety", "metrics": {"rate": "refusal"}, "report_rounds": ["1", "1-10"]}
    rec = {"round": 1, "outcome": "refused", "passed": True, "parsed_ok": True}
    flagged = aggregate([rec], bench, {"total": 1}, context_record("history-as-heard"), Counter())
    assert flagged["context"]["flag"] == HISTORY_FLAG and flagged["metrics"]["refusal"]["note"] == HISTORY_FLAG
    plain = aggregate([rec], bench, {"total": 1}, context_record("fork"), Counter())
    assert "note" not in plain["metrics"]["refusal"]
