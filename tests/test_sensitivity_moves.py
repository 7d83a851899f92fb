"""`duplexeval sensitivity` shows where units go (issue 36): each switch row carries the
outcome moves (from -> to, counts), including moves into a category without a metric row
of its own, and readings that need a new run are listed with why.

The timelines are hand-made and scored by the real MTR rules (features.feature_outcome);
the family that writes them into a folder is a stand-in (`StandInFamily`), since the real
one would need recordings, a VAD and an ASR for what is here a question of bookkeeping."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from click.testing import CliRunner

from duplexeval.benchmarks.mtr.features import W, feature_outcome
from duplexeval.benchmarks.mtr.format import Round, Span
from duplexeval.benchmarks.mtr.segments import segments_from
from duplexeval.io import atomic_write_json, atomic_write_jsonl
from duplexeval.runs.sensitivity import outcome_moves, sensitivity, unit_outcomes
from duplexeval.specs import Registry

TURN = Round(1, Span(10.0, 13.0, "the user's question"), None, "smooth")
# Talks through the user's turn in one segment and on past its end (a babbler): per segment it
# spoke during the turn; pooled by midpoint its speech began 2.9 s before the anchor: already speaking.
BABBLE = [[W(f"w{i}", 10.1 + 0.4 * i, 10.4 + 0.4 * i) for i in range(14)]]
ANSWER = [[W("nine", 13.5, 13.9), W("o'clock", 14.0, 14.6), W("every", 14.7, 15.0), W("day", 15.1, 15.5)]]


def rec(item, episodes, p):
    words = [w for e in episodes for w in e]
    vad = [(e[0].start, e[-1].end) for e in episodes]  # one VAD episode per segment
    out = feature_outcome(TURN, words, 20.0, p, vad, segments=segments_from(episodes))
    return {"item": item, "metric": "feature", "outcome": out["outcome"], "passed": out["passed"]}


class StandInFamily:
    """Stand-in for the MTR family's score_dir: two hand-made rounds scored under the spec's readings."""

    def score_dir(self, folder: Path, spec: dict, cache_mode: str, progress=None):
        if spec.get("dimension") != "mtr-features":
            return None
        records = [rec("babble.r01", BABBLE, spec["metrics"]), rec("answer.r01", ANSWER, spec["metrics"])]
        atomic_write_jsonl(folder / "records.jsonl", records)
        n = Counter(r["outcome"] for r in records)
        metrics = {k: {"value": n[k] / 2, "numerator": n[k], "denominator": 2}
                   for k in ("success", "spoke_during_turn", "no_response")}
        atomic_write_json(folder / "results.json", {"metrics": metrics})
        return {"metrics": metrics}


def test_moves_pair_units_by_item_and_metric_and_count_each_from_to():
    base = unit_outcomes([{"item": "a", "metric": "shush", "outcome": "pass"},
                          {"item": "a", "metric": "shush", "outcome": "fail"},
                          {"item": "b", "metric": "shush", "outcome": "fail"}, {"item": "c", "note": "no outcome"}])
    alt = unit_outcomes([{"item": "a", "metric": "shush", "outcome": "pass"},
                         {"item": "a", "metric": "shush", "outcome": "pass"},
                         {"item": "b", "metric": "shush", "outcome": "pass"}, {"item": "d", "metric": "x", "outcome": "y"}])
    assert outcome_moves(base, alt) == [{"unit": "shush", "from": "fail", "to": "pass", "count": 2},
                                        {"unit": "x", "from": "(no unit)", "to": "y", "count": 1}]
    assert outcome_moves(base, base) == []


def make_run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    registry = Registry.load()
    for bench_id in ("mtr-combo-s", "mpe-explicit"):
        folder = run / "stand-in" / bench_id
        (folder / "items").mkdir(parents=True)
        atomic_write_json(folder / "benchmark.json", registry.get("benchmark", bench_id).data)
    return run


def test_sensitivity_rows_carry_moves_into_a_category_without_a_row(tmp_path, monkeypatch):
    import duplexeval.benchmarks as benchmarks

    monkeypatch.setattr(benchmarks, "benchmark_for", lambda spec, path: StandInFamily())
    run = make_run(tmp_path)
    out = sensitivity(run)
    rows = [r for r in out["rows"] if r["reading"] == "metrics.speaking.counting"]
    assert rows and rows[0]["run_value"] == "per-segment-inside" and rows[0]["alternative"] == "pooled-midpoint"
    # spoke_during_turn falls 1 -> 0 and no row rises: the move says where the unit went.
    during = next(r for r in rows if r["metric"] == "spoke_during_turn")
    assert (during["numerator"], during["alt_numerator"]) == (1, 0)
    assert during["moves"] == [{"unit": "feature", "from": "spoke_during_turn", "to": "already_speaking", "count": 1}]
    window = next(r for r in out["rows"] if r["reading"] == "metrics.reply_window" and r["metric"] == "success")
    assert window["moves"] == [] and window["value"] == window["alt_value"] == 0.5
    # A reading that changes what the model hears is listed, never switched, with why.
    fixed = {(f["benchmark"], f["reading"]): f for f in out["not_rescorable"]}
    after_t = fixed[("mpe-explicit", "scheduler.after_t")]
    assert after_t["models"] == ["stand-in"] and "new run" in after_t["why"] and after_t["alternatives"]
    assert not any(r["reading"] == "scheduler.after_t" for r in out["rows"])
    assert json.loads((run / "sensitivity.json").read_text())["not_rescorable"] == out["not_rescorable"]


def test_the_command_prints_each_switch_with_its_moves_and_the_readings_it_cannot_switch(tmp_path, monkeypatch):
    import duplexeval.benchmarks as benchmarks
    from duplexeval.commands.sensitivity import sensitivity as command

    monkeypatch.setattr(benchmarks, "benchmark_for", lambda spec, path: StandInFamily())
    run = make_run(tmp_path)
    result = CliRunner().invoke(command, [str(run), "--allow-damaged"])
    assert result.exit_code == 0, result.output
    assert "metrics.speaking.counting = per-segment-inside -> pooled-midpoint" in result.output
    assert "stand-in: feature: spoke_during_turn -> already_speaking 1" in result.output
    assert "no unit moves" in result.output   # a switch that moves no unit says so once
    assert "scheduler.after_t = " in result.output and "not re-scorable" in result.output
