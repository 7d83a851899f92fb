"""The papers' tables as published, this run's rows beside them (issue 28 item 1), and each
family's own section (issue 27 item 3): the published rows come from golden/, a reference
agent is labelled and never compared with a paper model, a paper model gets its delta."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from report_fixture import make_run

from duplexeval.benchmarks import plugins
from duplexeval.reports.render import ReportInputs, build_context, render_html, render_latex
from duplexeval.runfolder.run_dir import load_run


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict:
    run = make_run(tmp_path_factory.mktemp("runs"))
    context = build_context(ReportInputs(families=plugins(), run=load_run(run)))
    return {"context": context, "html": render_html(context), "tex": render_latex(context)}


def _table(html: str, table_id: str) -> str:
    return html.split(f'id="{table_id}"', 1)[1].split("</table>", 1)[0]


def _rows(table: str) -> list[str]:
    return re.findall(r"<tr class=\"([a-z]+)-row\" data-model=\"([^\"]+)\">(.*?)</tr>", table, re.S)


def test_table_3_shows_the_five_published_models_and_the_reference_agents_labelled(rendered):
    t3 = _table(rendered["html"], "paper-mpe-t3")
    rows = _rows(t3)
    published = [m for kind, m, _ in rows if kind == "published"]
    assert published == ["minicpm-o-4.5", "voila", "flm-audio", "moshi", "freeze-omni"]
    minicpm = next(body for kind, m, body in rows if m == "minicpm-o-4.5")
    assert '<span class="v">0.9500</span> <span class="nd">1900/2000</span>' in minicpm  # Start, explicit
    assert "0.5964" in minicpm and "974/1633" in minicpm                                 # Stop, explicit
    agents = {m: body for kind, m, body in rows if kind == "reference"}
    assert set(agents) == {"silent", "babbler", "oracle"}
    assert all("reference agent" in body and "Δ" not in body for body in agents.values())
    assert [kind for kind, _, _ in rows].index("reference") > [kind for kind, _, _ in rows].index("published")


def test_a_paper_model_that_ran_gets_its_delta_against_its_published_row(rendered):
    main = _table(rendered["html"], "paper-mtr-main")
    (ours,) = [body for kind, m, body in _rows(main) if kind == "ours"]
    assert "100.0" in ours and "Δ+27" in ours                 # moshi smooth turn-taking round 1: 100.0 vs 73.0
    assert "Δ+32.6" in ours                                    # rounds 1-10: 90.0 vs 57.4


def test_our_cells_link_to_the_records_behind_them(rendered):
    t3 = _table(rendered["html"], "paper-mpe-t3")
    assert re.search(r'<a class="records-link" href="#browser" [^>]*data-model="babbler" '
                     r'data-benchmark="mpe-explicit" data-metric="start">', t3)


def test_each_family_gives_its_own_section(rendered):
    families = [s.family for s in rendered["context"]["sections"]]
    assert families == ["duplex-mpe", "mtr-duplexbench"]


def test_the_latex_paper_tables_label_reference_agents_and_compile(rendered, tmp_path: Path):
    tex = rendered["tex"]
    section = tex[tex.index(r"\caption{Duplex-MPE Table 3"):]
    section = section[:section.index(r"\end{longtable}")]
    assert r"MiniCPM-o 4.5 {\footnotesize(published)} & 0.9500 {\tiny(1900/2000)}" in section
    assert r"silent {\footnotesize(ref.)}" in section and r"$\Delta$" not in section
    engine = shutil.which("pdflatex")
    if engine is None:
        pytest.skip("no pdflatex installed")
    (tmp_path / "report.tex").write_text(tex, encoding="utf-8")
    proc = subprocess.run([engine, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", "report.tex"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_report_and_compare_default_to_the_suites_golden_files(tmp_path):
    from duplexeval.reports.golden import golden_dir, suite_golden_paths

    assert suite_golden_paths({"suite": {"id": "embedded"}}) == [golden_dir() / "embedded.yaml"]
    assert suite_golden_paths({"suite": {"id": "paper-mtr"}}) == [golden_dir() / "mtr-duplexbench.yaml"]
    assert suite_golden_paths({"suite": {"id": "no-such-suite"}}) == [] and suite_golden_paths({}) == []
