"""`duplexeval export` and `duplexeval.results.load` give the same tidy rows as results.json."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from click.testing import CliRunner
from report_fixture import make_run

from duplexeval.cli import cli
from duplexeval.results import COLUMNS, load, rows


def _expected(run: Path) -> set[tuple]:
    out = set()
    for path in run.glob("**/results.json"):
        data = json.loads(path.read_text())
        model, bench = path.parent.parent.name, path.parent.name
        for name, m in data["metrics"].items():
            if isinstance(m, dict) and "denominator" in m:
                out.add((model, bench, name, "all", m["numerator"], m["denominator"]))
        for key, metrics in (data.get("rounds") or {}).items():
            for name, m in metrics.items():
                out.add((model, bench, name, key, m["numerator"], m["denominator"]))
    return out


def test_load_matches_results_json(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    df = load(run)
    assert list(df.columns) == COLUMNS
    got = {(r.model, r.benchmark, r.metric, r["round"], r.numerator, r.denominator) for _, r in df.iterrows()}
    assert got == _expected(run)
    babbler = df[(df.model == "babbler") & (df.benchmark == "mpe-explicit") & (df.metric == "start")].iloc[0]
    assert (babbler.numerator, babbler.denominator) == (1, 24) and abs(babbler.value - 1 / 24) < 1e-12
    assert len(df[(df.model == "moshi") & (df.metric == "success")]) == 12  # "all" + rounds 1..10 + "1-10"


def test_export_formats_give_the_same_rows(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    runner = CliRunner()
    expected = rows(run)
    res = runner.invoke(cli, ["export", str(run), "--format", "json", "--out", "-"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output) == expected
    res = runner.invoke(cli, ["export", str(run), "--format", "csv"])
    assert res.exit_code == 0, res.output
    csv = pd.read_csv(run / "results.csv", dtype={"round": str})
    assert len(csv) == len(expected)
    assert list(csv["numerator"]) == [r["numerator"] for r in expected]
    assert list(csv["round"]) == [r["round"] for r in expected]
    res = runner.invoke(cli, ["export", str(run), "--format", "markdown", "--out", "-"])
    assert res.exit_code == 0 and res.output.count("\n") == len(expected) + 2
    assert "| babbler | mpe-explicit | explicit | start | all | 0.0417 | 1 | 24 |" in res.output


def test_export_of_an_empty_folder_is_a_clear_error(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["export", str(tmp_path)])
    assert res.exit_code == 2 and "not a run folder" in res.output and "results.json" in res.output


def test_counts_are_written_as_integers(tmp_path) -> None:
    """Issue 28: export wrote counts as floats (`3.0`) once a column held a missing value."""
    from duplexeval.io import atomic_write_json
    from duplexeval.results import load

    run = tmp_path / "run"
    atomic_write_json(run / "m" / "b" / "results.json",
                      {"benchmark": "b", "metrics": {"rate": {"value": 0.5, "numerator": 3, "denominator": 6},
                                                     "mean": {"value": 2.0}}})
    csv = load(run).to_csv(index=False)
    assert ",0.5,3,6," in csv and "3.0" not in csv and "6.0" not in csv
    atomic_write_json(run / "m" / "q" / "results.json",
                      {"benchmark": "q", "metrics": {"score": {"value": 3.17, "numerator": 9.51, "denominator": 3}}})
    csv = load(run).to_csv(index=False)
    assert ",0.5,3,6," in csv and ",9.51,3," in csv


def test_export_verifies_the_run_first_and_allow_damaged_marks_the_table(tmp_path: Path) -> None:
    """Issue 39: an edited results.json was exported as measured (start 1.5/3); verify, report and
    compare refused the same run."""
    from report_fixture import make_run

    run = make_run(tmp_path)
    results = run / "silent" / "mpe-explicit" / "results.json"
    results.write_text(results.read_text().replace('"ok": 24', '"ok": 25'))
    refused = CliRunner().invoke(cli, ["export", str(run), "--format", "json", "--out", "-"])
    assert refused.exit_code == 2 and "damaged" in refused.output and "results.json" in refused.output
    assert not list(run.glob("results.*"))
    marked = CliRunner().invoke(cli, ["export", str(run), "--format", "markdown", "--out", "-", "--allow-damaged"])
    assert marked.exit_code == 0 and "DAMAGED RUN" in marked.output, marked.output
    as_json = CliRunner().invoke(cli, ["export", str(run), "--format", "json", "--out", "-", "--allow-damaged"])
    assert json.loads(as_json.stdout)["damaged"]
