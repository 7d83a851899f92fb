"""`duplexeval compare`: a diff table against golden, exit 1 on any cell out of tolerance."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from report_fixture import make_run, metric, sealed

from duplexeval.cli import cli
from duplexeval.io import atomic_write_json
from duplexeval.reports.compare import AMBIGUOUS, MISSING, OK, OUT, DiffRow, compare_run, failed, summary
from duplexeval.reports.golden import golden_dir, load_golden
from duplexeval.runfolder.run_dir import load_run


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return make_run(tmp_path)


def invoke(*args: str):
    return CliRunner().invoke(cli, ["compare", *args])


def edited_golden(tmp_path: Path, source: Path, cell_id: str, new_value: float) -> Path:
    data = yaml.safe_load(source.read_text(encoding="utf-8"))
    (cell,) = [c for c in data["cells"] if c["id"] == cell_id]
    cell["value"] = new_value
    path = tmp_path / source.name
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def partial(*args: str):
    """compare on a fixture run that holds some of the golden file's cells: the rest are allowed missing."""
    return invoke(*args, "--allow-missing")


def test_embedded_golden_passes_on_a_matching_run(run: Path) -> None:
    result = partial(str(run), "--golden", str(golden_dir() / "embedded.yaml"))
    assert result.exit_code == 0, result.output
    assert "22 ok" in result.output
    whole = invoke(str(run), "--golden", str(golden_dir() / "embedded.yaml"))  # the fixture holds MPE cells only
    assert whole.exit_code == 1 and "120 missing, 22 ok -> FAIL" in whole.output, whole.output


def test_one_value_edited_0_01_beyond_its_tolerance_fails_with_exit_1(run: Path, tmp_path: Path) -> None:
    source = golden_dir() / "embedded.yaml"
    cell = load_golden(source)["embedded.silent.explicit.shush"]
    path = edited_golden(tmp_path, source, cell.id, cell.value + cell.tolerance + 0.01)
    result = invoke(str(run), "--golden", str(path))
    assert result.exit_code == 1, result.output
    assert "out of tolerance" in result.output and cell.id in result.output


def paper_run(tmp_path: Path) -> Path:
    """A run whose MiniCPM-o explicit numbers are exactly the paper's (Tables 3, 9, 15)."""
    run = tmp_path / "paper-run"
    atomic_write_json(run / "minicpm-o-4.5" / "mpe-explicit" / "results.json", {
        "v": 1, "benchmark": "mpe-explicit", "condition": "explicit",
        "metrics": {"start": {**metric(1900, 2000), "outcomes": {"fresh": 1900, "already_speaking": 9, "miss": 91}},
                    "presence": metric(1909, 2000), "answer": metric(903, 1909),
                    "shush": metric(18817, 20360), "stop": {**metric(974, 1633), "n4_events": 1911}}})
    return sealed(run)


def test_paper_values_within_tolerance_pass_and_edits_beyond_it_fail(tmp_path: Path) -> None:
    run = paper_run(tmp_path)
    source = golden_dir() / "duplex-mpe.yaml"
    ok = partial(str(run), "--golden", str(source))
    assert ok.exit_code == 0, ok.output
    cell = load_golden(source)["mpe.t3.minicpm-o.explicit.stop"]
    for sign in (+1, -1):
        path = edited_golden(tmp_path, source, cell.id, cell.value + sign * (cell.tolerance + 0.01))
        bad = partial(str(run), "--golden", str(path))
        assert bad.exit_code == 1, bad.output
    inside = edited_golden(tmp_path, source, cell.id, round(974 / 1633, 6) + cell.tolerance * 0.5)
    assert partial(str(run), "--golden", str(inside)).exit_code == 0


def test_cells_the_run_lacks_are_listed_missing_and_fail_unless_allowed(tmp_path: Path) -> None:
    """Issue 39: a run without a golden cell is no reproduction of it; --allow-missing lists it only."""
    run = paper_run(tmp_path)
    rows = compare_run(load_run(run), load_golden(golden_dir() / "duplex-mpe.yaml"))
    statuses = {r.cell_id: r.status for r in rows}
    assert statuses["mpe.t3.minicpm-o.explicit.start"] == OK
    assert statuses["mpe.t3.voila.explicit.stop"] == MISSING
    n_missing = sum(1 for r in rows if r.status == MISSING)
    plain = invoke(str(run), "--golden", str(golden_dir() / "duplex-mpe.yaml"))
    assert plain.exit_code == 1 and f"{n_missing} missing" in plain.output and "-> FAIL" in plain.output
    allowed = invoke(str(run), "--golden", str(golden_dir() / "duplex-mpe.yaml"), "--allow-missing")
    assert f"{n_missing} missing" in allowed.output
    assert allowed.exit_code == (1 if failed(rows, allow_missing=True) else 0), allowed.output
    strict = invoke(str(run), "--golden", str(golden_dir() / "duplex-mpe.yaml"), "--strict")
    assert strict.exit_code == 1
    both = invoke(str(run), "--golden", str(golden_dir() / "duplex-mpe.yaml"), "--strict", "--allow-missing")
    assert both.exit_code == 2 and "--allow-missing" in both.output


def test_a_diff_with_no_row_or_one_missing_row_fails() -> None:
    row = dict(cell_id="c", golden="g", table="t", row="r", column="c", expected="1", got=None, delta=None,
               within_tolerance=None, tolerance="± 0", source="")
    assert failed([]) and failed([DiffRow(**row, status=MISSING)])
    assert not failed([DiffRow(**row, status=MISSING)], allow_missing=True)
    assert not failed([DiffRow(**{**row, "got": 1.0, "delta": 0.0, "within_tolerance": True}, status=OK)])
    assert summary([]) == "no cell compared" and summary([DiffRow(**row, status=MISSING)]) == "1 missing"


def test_a_withheld_metric_is_compared_on_numerator_over_denominator(run: Path) -> None:
    rows = compare_run(load_run(run), load_golden(golden_dir() / "embedded.yaml"))
    (stop,) = [r for r in rows if r.cell_id == "embedded.oracle.explicit.stop"]
    assert stop.status == OK and stop.got == 1.0
    assert "20/20" in stop.note


def toy_golden(tmp_path: Path, cells: list[dict]) -> Path:
    base = {"paper": "toy", "table": "T", "row": "r", "column": "c", "source": "test"}
    data = {"schema": "duplexeval.golden/1", "paper": {"id": "toy", "title": "toy", "source_file": "x"},
            "cells": [{**base, **c} for c in cells]}
    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def test_percent_cells_compare_against_fractions_in_results(run: Path, tmp_path: Path) -> None:
    path = toy_golden(tmp_path, [{"id": "toy.mean", "value": 90.0, "tolerance": 0.05, "unit": "percent",
                                  "run": {"model": "moshi", "benchmark": "mtr-smooth-turn-taking", "metric": "success", "rounds": "1-10"}},
                                 {"id": "toy.r1", "value": 100, "tolerance": 0, "unit": "percent",
                                  "run": {"model": "moshi", "benchmark": "mtr-smooth-turn-taking", "metric": "success", "rounds": "1"}}])
    rows = compare_run(load_run(run), load_golden(path))
    assert [(r.status, r.got) for r in rows] == [(OK, 90.0), (OK, 100.0)]


def test_a_locator_matching_two_results_is_ambiguous_and_fails(run: Path, tmp_path: Path) -> None:
    path = toy_golden(tmp_path, [{"id": "toy.loose", "value": 0, "tolerance": 0, "run": {"model": "silent", "metric": "start"}}])
    rows = compare_run(load_run(run), load_golden(path))
    assert rows[0].status == AMBIGUOUS
    assert invoke(str(run), "--golden", str(path)).exit_code == 1


def test_alias_maps_golden_ids_to_the_run(run: Path, tmp_path: Path) -> None:
    path = toy_golden(tmp_path, [{"id": "toy.alias", "value": 0, "tolerance": 0,
                                  "run": {"model": "quiet", "benchmark": "mpe-explicit", "metric": "start"}}])
    assert invoke(str(run), "--golden", str(path), "--strict").exit_code == 1
    assert invoke(str(run), "--golden", str(path), "--strict", "--alias", "quiet=silent").exit_code == 0


def test_tolerance_override_widens_every_cell(tmp_path: Path) -> None:
    run = paper_run(tmp_path)
    source = golden_dir() / "duplex-mpe.yaml"
    path = edited_golden(tmp_path, source, "mpe.t3.minicpm-o.explicit.stop", 0.6100)
    assert partial(str(run), "--golden", str(path)).exit_code == 1
    assert partial(str(run), "--golden", str(path), "--tolerance", "0.02").exit_code == 0


def test_an_invalid_golden_file_exits_2_naming_file_and_line(run: Path, tmp_path: Path) -> None:
    path = toy_golden(tmp_path, [{"id": "toy.bad", "value": "high", "tolerance": 0}])
    result = invoke(str(run), "--golden", str(path))
    assert result.exit_code == 2
    assert "toy.yaml:" in result.output and "cells[0].value" in result.output


def test_out_of_tolerance_rows_report_delta(run: Path, tmp_path: Path) -> None:
    path = toy_golden(tmp_path, [{"id": "toy.off", "value": 0.5, "tolerance": 0.01,
                                  "run": {"model": "oracle", "benchmark": "mpe-explicit", "metric": "start"}}])
    (row,) = compare_run(load_run(run), load_golden(path))
    assert row.status == OUT and row.delta == pytest.approx(0.5) and row.within_tolerance is False


def test_start_outcome_counts_are_read_from_the_metric(tmp_path: Path) -> None:
    run = paper_run(tmp_path)
    path = toy_golden(tmp_path, [{"id": "toy.fresh", "value": 1900, "tolerance": 0, "unit": "count",
                                  "run": {"model": "minicpm-o-4.5", "benchmark": "mpe-explicit", "metric": "start",
                                          "field": "outcomes.fresh"}},
                                 {"id": "toy.already", "value": 9, "tolerance": 0, "unit": "count",
                                  "run": {"model": "minicpm-o-4.5", "benchmark": "mpe-explicit", "metric": "start",
                                          "field": "outcomes.already_speaking"}}])
    rows = compare_run(load_run(run), load_golden(path))
    assert [(r.status, r.got) for r in rows] == [(OK, 1900.0), (OK, 9.0)]


def test_a_cell_of_another_judge_is_missing_never_compared(tmp_path: Path) -> None:
    """Table 17 is Gemini's text reference; a run's offline text reference is another measurement."""
    from duplexeval.io import atomic_write_json

    run_dir = tmp_path / "run"
    atomic_write_json(run_dir / "text-reference" / "mpe-explicit" / "results.json",
                      {"model": "text-reference", "benchmark": "mpe-explicit",
                       "judges": {"text_reference": "mpe-text-reference-offline"},
                       "metrics": {"response": {"value": 0.947, "numerator": 1894, "denominator": 2000}}})
    rows = {r.cell_id: r for r in compare_run(load_run(run_dir), load_golden(golden_dir() / "duplex-mpe.yaml"))}
    row = rows["mpe.t17.gemini.explicit.response"]
    assert row.status == MISSING and row.got is None
    assert "judged by mpe-text-reference-offline, the cell by mpe-text-reference-gemini" in row.note
