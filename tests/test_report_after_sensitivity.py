"""Issue 39, case 6: `sensitivity` then `report` on a run whose sensitivity rows come from an
MTR or FDB job exited 3 (the template read `r.error` of a row without one), and a resumed
`run` then exited 0 leaving the earlier report in place as if it were this run's."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from report_fixture import make_run

from duplexeval.cli import cli
from duplexeval.io import atomic_write_json

MOVED = {"model": "oracle", "benchmark": "fdb-backchannel", "metric": "jsd", "reading": "options.backchannel.jsd",
         "run_value": "distance", "alternative": "divergence", "value": 0.4376, "numerator": 0.4376,
         "denominator": 1, "alt_value": 0.1915, "alt_numerator": 0.1915, "alt_denominator": 1, "delta": -0.2461}
UNSCORABLE = {"model": "oracle", "benchmark": "mtr-pause-handling", "metric": None,
              "reading": "options.pause.x", "run_value": "a", "alternative": "b",
              "error": "needs judge verdicts the cache does not hold: q"}


def test_report_renders_moved_rows_without_an_error_field_and_rows_with_one(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    atomic_write_json(run / "sensitivity.json", {"schema": "duplexeval.sensitivity/1", "switches": [],
                                                 "rows": [MOVED, UNSCORABLE]})
    done = CliRunner().invoke(cli, ["report", str(run), "--no-paper-arithmetic"])
    assert done.exit_code == 0, done.output
    html = (run / "report.html").read_text(encoding="utf-8")
    assert "divergence" in html and "-0.2461" in html and "needs judge verdicts" in html


def test_a_report_that_fails_moves_the_earlier_one_aside_and_says_so(tmp_path: Path, monkeypatch, capsys) -> None:
    from duplexeval.commands import run as run_module
    from duplexeval.reports import render

    run = make_run(tmp_path)
    (run / "report.html").write_text("<p>the first pass</p>", encoding="utf-8")
    (run / "report.tex").write_text("first pass", encoding="utf-8")

    def broken(*args, **kwargs):
        raise ValueError("a template bug")

    monkeypatch.setattr(render, "write_report", broken)
    assert run_module.write_run_report(run) is False
    err = capsys.readouterr().err
    assert "report not written (ValueError: a template bug)" in err and "report.stale.html" in err
    assert not (run / "report.html").exists() and not (run / "report.tex").exists()
    assert (run / "report.stale.html").read_text(encoding="utf-8") == "<p>the first pass</p>"
    monkeypatch.undo()
    assert run_module.write_run_report(run) is True
    assert "the first pass" not in (run / "report.html").read_text(encoding="utf-8")



def test_the_report_shows_each_switchs_unit_moves_and_the_readings_no_rescore_can_switch(tmp_path: Path) -> None:
    """Issue 36: a switch's units that land in an outcome without a metric of their own show in the
    report (from -> to, counts), as the command prints them; so do the readings that need a new run."""
    run = make_run(tmp_path)
    moves = [{"unit": "feature", "from": "spoke_during_turn", "to": "already_speaking", "count": 10}]
    row = {**MOVED, "benchmark": "mtr-combo-s", "metric": "success_rate", "reading": "metrics.speaking.counting",
           "moves": moves}
    still = {**MOVED, "model": "silent", "moves": []}
    fixed = {"benchmark": "mpe-explicit", "reading": "scheduler.after_t", "run_value": "hold-start-window",
             "alternatives": ["turn-gap"], "models": ["oracle"], "why": "changes what the model hears"}
    atomic_write_json(run / "sensitivity.json", {"schema": "duplexeval.sensitivity/1", "switches": [],
                                                 "rows": [row, still], "not_rescorable": [fixed]})
    done = CliRunner().invoke(cli, ["report", str(run), "--no-paper-arithmetic"])
    assert done.exit_code == 0, done.output
    html = (run / "report.html").read_text(encoding="utf-8")
    assert "feature: spoke_during_turn → already_speaking 10" in html
    assert "no unit moves" in html  # the silent model's switch moved nothing
    assert "scheduler.after_t" in html and "turn-gap" in html
