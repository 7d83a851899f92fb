"""One results envelope (specs/schema/results.schema.json) and one bench-folder scoring loop
for every family (duplexeval.benchmarks.bench_folder)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from duplexeval.benchmarks.bench_folder import (
    RESULTS_SCHEMA_ID,
    ResultsEnvelopeError,
    envelope_problems,
    item_statuses,
    score_bench_folder,
    status_counts,
)
from duplexeval.io import atomic_write_json

ROOT = Path(__file__).resolve().parents[1]


def _docs_example() -> dict:
    text = (ROOT / "docs" / "architecture.md").read_text("utf-8")
    section = text[text.index("## results.json"):]
    return json.loads(re.search(r"```json\n(.*?)\n```", section, re.S).group(1))


def test_the_example_in_docs_architecture_follows_the_schema():
    example = _docs_example()
    assert example["schema"] == RESULTS_SCHEMA_ID
    assert envelope_problems(example) == []


def test_results_without_error_counts_break_the_envelope():
    example = _docs_example()
    del example["items"]["error"]  # the drift issue 27 names: counts only of statuses seen
    assert envelope_problems(example) == ["items: 'error' is a required property"]


def test_a_metric_without_its_denominator_breaks_the_envelope():
    example = _docs_example()
    del example["metrics"]["start"]["denominator"]
    assert envelope_problems(example) == ["metrics.start: 'denominator' is a required property"]


def test_zero_errors_are_written_not_implied():
    assert status_counts([]) == {"error": 0, "ok": 0, "total": 0}
    assert status_counts([(Path("a"), "ok"), (Path("b"), "missing")]) == {"error": 0, "missing": 1, "ok": 1, "total": 2}


def _item(bench: Path, name: str, status: str) -> None:
    folder = bench / "items" / name
    folder.mkdir(parents=True)
    atomic_write_json(folder / "status.json", {"status": status})


def test_a_planned_item_without_a_folder_is_missing_and_an_unplanned_folder_counts_only_when_asked(tmp_path):
    bench = tmp_path / "silent" / "toy"
    (bench / "items" / "extra").mkdir(parents=True)
    statuses = item_statuses(bench, ["gone"])
    assert [(d.name, s) for d, s in statuses] == [("extra", "unfinished"), ("gone", "missing")]
    assert [(d.name, s) for d, s in item_statuses(bench, ["gone"], unplanned_folders=False)] == [("gone", "missing")]


def _aggregate(records, counts):
    n = sum(r["passed"] for r in records)
    return {"benchmark": "toy", "items": counts,
            "metrics": {"pass": {"value": n / len(records) if records else None, "numerator": n,
                                 "denominator": len(records)}}}


def test_the_loop_scores_stamps_the_envelope_and_writes_both_files(tmp_path):
    bench = tmp_path / "silent" / "toy"
    bench.mkdir(parents=True)
    seen = []
    results = score_bench_folder(
        bench, item_statuses(bench, ["a", "b"]),
        score_ok=lambda d: [{"item": d.name, "outcome": "ok", "passed": True}],
        score_not_ok=lambda d, status: [{"item": d.name, "outcome": "error", "passed": False, "status": status}],
        aggregate=_aggregate, progress=lambda n, total, item: seen.append((n, total, item)))
    assert results["schema"] == RESULTS_SCHEMA_ID and results["model"] == "silent"
    assert results["items"] == {"error": 0, "missing": 2, "ok": 0, "total": 2}
    assert results["metrics"]["pass"] == {"value": 0.0, "numerator": 0, "denominator": 2}
    assert seen == [(1, 2, "a"), (2, 2, "b")]
    assert json.loads((bench / "results.json").read_text()) == results
    assert [json.loads(line)["status"] for line in (bench / "records.jsonl").read_text().splitlines()] == ["missing"] * 2


def test_a_family_whose_results_break_the_envelope_writes_nothing(tmp_path):
    bench = tmp_path / "silent" / "toy"
    bench.mkdir(parents=True)
    with pytest.raises(ResultsEnvelopeError, match="metrics.pass: 'numerator' is a required property"):
        score_bench_folder(bench, [], score_ok=lambda d: [], score_not_ok=lambda d, s: [],
                           aggregate=lambda records, counts: {"benchmark": "toy", "items": counts,
                                                              "metrics": {"pass": {"value": None, "denominator": 0}}})
    assert not (bench / "results.json").exists()
