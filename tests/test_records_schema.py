"""records.jsonl's shared fields (specs/schema/records.schema.json), pinned at their edges,
and the families' own declarations (outcome words, directions, turn roles) the core reads
instead of naming a family."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from duplexeval.benchmarks import plugins
from duplexeval.benchmarks.bench_folder import ResultsEnvelopeError, item_statuses, score_bench_folder
from duplexeval.reports import browser, charts
from duplexeval.reports.sections import direction
from duplexeval.runfolder.records import record_problems
from duplexeval.runfolder.verify import check_results


def test_a_record_needs_its_item_and_outcome_and_the_shared_fields_their_one_spelling():
    assert record_problems([{"item": "a", "outcome": "ok"}]) == []
    assert record_problems([{"item": "a", "outcome": "ok", "passed": None, "window": [1.0, 2.5],
                             "speech": [[1.2, 1.9]], "round": 1, "x-family-field": {"any": 1}}]) == []
    assert record_problems([{"item_id": "a", "outcome": "ok"}]) == ["line 1: <record>: 'item' is a required property"]
    assert record_problems([{}, {"item": "a"}])[-1] == "line 2: <record>: 'outcome' is a required property"
    # the spellings the report used to guess: a window as a dict, pass/fail as a word
    assert record_problems([{"item": "a", "outcome": "ok", "window": {"start": 1, "end": 2}}]) == [
        "line 1: window: {'start': 1, 'end': 2} is not of type 'array'"]
    assert record_problems([{"item": "a", "outcome": "ok", "window": [1.0]}])[0].startswith("line 1: window:")
    assert record_problems([{"item": "a", "outcome": "ok", "passed": "yes"}])[0].startswith("line 1: passed:")
    assert record_problems([{"item": "a", "outcome": "ok", "round": 0}])[0].startswith("line 1: round:")


def test_an_outcome_word_outside_the_family_vocabulary_is_named():
    words = frozenset({"ok", "error"})
    assert record_problems([{"item": "a", "outcome": "error"}], words) == []
    assert record_problems([{"item": "a", "outcome": "pass"}], words) == [
        "line 1: outcome: 'pass' is not one of its family's outcomes (error, ok)"]
    assert record_problems([{"item": "a", "outcome": "anything"}], None) == []   # an open vocabulary


def test_each_family_declares_its_words_directions_and_roles():
    fams = plugins()
    mpe, mtr, fdb = fams["duplex-mpe"], fams["mtr-duplexbench"], fams["full-duplex-bench"]
    assert {"fresh", "already_speaking", "miss", "yielded", "error"} <= (mpe.outcomes or set())
    assert fdb.outcomes == {"ok", "error"}
    assert mtr.outcomes is None   # instruction and safety outcomes are the judge's verdicts, verbatim
    assert mpe.turn_roles["T"] == "target" and mpe.turn_roles["N4Q"] == "interrupt"
    assert direction(fdb.higher_is_better, "fdb-pause-candor", "tor") == "lower"
    assert direction(fdb.higher_is_better, "fdb-smooth-turn-taking", "tor") == "higher"
    assert direction(fdb.higher_is_better, "fdb-backchannel", "jsd") == "lower"
    assert direction(mpe.higher_is_better, "mpe-explicit", "start") == "higher"
    assert direction(mpe.higher_is_better, "mpe-explicit", "nonsense") is None


def test_pass_and_fail_come_from_passed_never_from_the_word():
    assert charts.passed({"outcome": "fresh", "passed": True}) is True
    assert charts.passed({"outcome": "fresh", "passed": False}) is False   # a reading can fail a word
    assert charts.passed({"outcome": "fresh"}) is None
    assert charts.passed({"outcome": "fresh", "passed": None}) is None
    assert browser._verdict({"outcome": "ok"}) == "none"                   # a continuous metric's sample
    assert browser._verdict({"outcome": "x", "passed": None}) == "excluded"
    assert browser._verdict({"outcome": "x", "passed": False}) == "fail"


def test_spans_read_only_the_schema_spelling():
    assert charts.span({"window": [1, 2]}) == (1.0, 2.0)
    assert charts.span({"t0": 1, "t1": 2}) is None
    assert charts.span({"window_start": 1, "window_end": 2}) is None
    assert charts.speech_episodes([], [{"speech": [[1, 2]], "episodes": [[3, 4]]}]) == [(1.0, 2.0)]


def test_a_family_whose_records_break_the_schema_writes_nothing(tmp_path):
    bench = tmp_path / "silent" / "toy"
    (bench / "items").mkdir(parents=True)
    aggregate = lambda records, counts: {"benchmark": "toy", "items": counts, "metrics": {}}  # noqa: E731
    with pytest.raises(ResultsEnvelopeError, match=r"records.jsonl: line 1: <record>: 'outcome' is a required"):
        score_bench_folder(bench, item_statuses(bench, ["a"]), score_ok=lambda d: [],
                           score_not_ok=lambda d, s: [{"item": d.name, "passed": False}], aggregate=aggregate)
    assert not (bench / "records.jsonl").exists() and not (bench / "results.json").exists()


def _scored_folder(tmp_path: Path, records: list[dict]) -> Path:
    bench = tmp_path / "m" / "b"
    bench.mkdir(parents=True)
    (bench / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (bench / "results.json").write_text(json.dumps({"benchmark": "b", "items": {}, "metrics": {}}))
    return bench


def test_verify_names_the_records_line_and_field(tmp_path):
    bench = _scored_folder(tmp_path, [{"item": "a", "outcome": "ok"}, {"item": "b", "outcome": "won"}])
    findings, _ = check_results(bench, frozenset({"ok", "error"}))
    assert [f.problem for f in findings] == ["line 2: outcome: 'won' is not one of its family's outcomes (error, ok)"]
    assert all(f.damaged and f.path == bench / "records.jsonl" for f in findings)
    bench = _scored_folder(tmp_path / "x", [{"item": "a", "outcome": "ok", "window": [2]}] * 7)
    problems = [f.problem for f in check_results(bench)[0]]
    assert len(problems) == 6 and problems[-1].startswith("and 2 more departures")
