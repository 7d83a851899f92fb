"""Hand-made results at the boundaries of the report's honesty rules (issue 25):
each MTR dimension's headline comes from its spec, never from sorting metric names, and a
cell is marked incomplete exactly when its denominator lost units."""

from __future__ import annotations

from pathlib import Path

from report_fixture import metric, sealed

from duplexeval.benchmarks import plugins
from duplexeval.io import atomic_write_json
from duplexeval.reports.render import ReportInputs, build_context, render_html, render_latex
from duplexeval.runfolder.incomplete import lost_units
from duplexeval.runfolder.run_dir import load_run


def _mtr(bench: str, table: dict) -> dict:
    return {"v": 1, "benchmark": bench, "dimension": bench, "items": {"total": 3, "ok": 3},
            "metrics": table, "rounds": {"1": table, "1-3": table}}


def _run(tmp_path: Path, error: int = 0) -> Path:
    run = tmp_path / "run"
    score = {"value": 3.17, "numerator": 9.51, "denominator": 3 - error, "unit": "score"}
    quality = {"score": score, "error": metric(error, 3), "no_response": metric(0, 3), "unparseable": metric(0, 3)}
    safety = {"refusal": {**metric(3 - error, 3), "outcomes": {"refused": 3 - error, "error": error}},
              "error": metric(error, 3), "no_response": metric(0, 3)}
    atomic_write_json(run / "oracle" / "mtr-quality" / "results.json", _mtr("mtr-quality", quality))
    atomic_write_json(run / "oracle" / "mtr-safety" / "results.json", _mtr("mtr-safety", safety))
    return sealed(run)


def _other(tmp_path: Path, error: int = 0) -> tuple[dict, str, str]:
    context = build_context(ReportInputs(families=plugins(), run=load_run(_run(tmp_path, error))))
    (mtr,) = [s for s in context["sections"] if s.family == "mtr-duplexbench"]  # the family's own section
    return mtr.data["mtr_main"]["other"], render_html(context), render_latex(context)


def test_quality_shows_its_score_and_safety_its_refusal_rate_never_error(tmp_path):
    other, html, tex = _other(tmp_path)
    (row,) = other["rows"]
    assert [c["metric"] for c in row["headlines"]["mtr-quality"]] == ["score"]
    assert [c["metric"] for c in row["headlines"]["mtr-safety"]] == ["refusal"]
    section = html[html.index('id="mtr-other"'):]
    assert "score: " in section and "3.17 → 3.17" in section and "refusal: " in section and "100.0 → 100.0" in section
    assert "error:" not in section and "incomplete" not in section
    assert r"\texttt{score}: " in tex and "3.17" in tex and "317.0" not in tex  # a mean score, not a percentage


def test_one_errored_round_marks_the_cells_it_left(tmp_path):
    other, html, tex = _other(tmp_path, error=1)
    quality = other["rows"][0]["headlines"]["mtr-quality"][0]
    assert quality["r1"]["lost"] == 1 and quality["mean"]["lost"] == 1
    assert "incomplete: 1 → 1 error" in html and r"incomplete: 1 $\rightarrow$ 1 error" in tex


def test_lost_units_rules():
    complete = {"complete": True}
    assert lost_units(complete, "start", {"outcomes": {"fresh": 3}}) == 0
    assert lost_units(complete, "start", {"outcomes": {"fresh": 2, "error": 1}}) == 1  # its own count first
    assert lost_units(complete, "score", {"value": 3.0}, {"error": metric(2, 5)}) == 2  # else its table's
    assert lost_units(complete, "error", metric(2, 5), {"error": metric(2, 5)}) == 0  # the count itself is no cell
    incomplete = {"complete": False, "incomplete": {"error_units": {"shush": 4}}, "items": {"ok": 1, "error": 2}}
    assert lost_units(incomplete, "shush", {"value": 0.5}) == 4
    assert lost_units(incomplete, "presence", {"value": 0.5}) == 2  # cannot say which units: every item not ok
