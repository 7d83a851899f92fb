"""`duplexeval report`: self-contained HTML and booktabs LaTeX, with untrusted text escaped."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from report_fixture import HOSTILE_HTML, HOSTILE_TEX, make_run

from duplexeval.benchmarks import plugins
from duplexeval.cli import cli
from duplexeval.reports.golden import golden_dir
from duplexeval.reports.render import latex_escape, write_report


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict[str, str]:
    run = make_run(tmp_path_factory.mktemp("runs"))
    written = write_report(run, families=plugins(), golden_paths=[golden_dir() / "embedded.yaml"])
    return {"run": str(run), **{k: v.read_text(encoding="utf-8") for k, v in written.items()}}


def test_a_planted_script_in_a_transcript_is_escaped_in_html(report) -> None:
    html = report["html"]
    assert HOSTILE_HTML not in html
    assert "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in html
    # The only scripts: the item browser's JSON data block and its fixed code.
    assert html.lower().count("<script") == 2
    assert '<script type="application/json" id="browser-data">' in html


def test_html_forbids_scripts_even_if_escaping_failed(report) -> None:
    from duplexeval.reports.browser import SCRIPT, script_hash

    html = report["html"]
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    # Only the browser's own script runs: allowed by its hash, never 'unsafe-inline'.
    assert f"script-src '{script_hash()}'" in html and "script-src 'unsafe-inline'" not in html
    assert f"<script>{SCRIPT}</script>" in html


def test_first_screen_is_the_papers_headline_tables(report) -> None:
    html = report["html"]
    order = [html.index(x) for x in ('id="verdict"', 'id="mpe-table3"', 'id="mpe-table9"', 'id="mtr-main"',
                                     'id="charts"', 'id="browser"', '<details id="judges"', '<details id="manifest"')]
    assert order == sorted(order)
    main = html.split('id="mtr-main"')[1].split("</table>")[0]
    assert "Smooth turn-taking" in main and "100.0 → 90.0" in main and "10/10 → 90/100" in main  # moshi: round 1 -> rounds 1-10


def test_a_planted_input_in_a_transcript_is_escaped_in_latex(report) -> None:
    tex = report["latex"]
    assert HOSTILE_TEX not in tex
    assert r"\textbackslash{}input\{/etc/passwd\}" in tex
    assert "</script>" not in tex
    assert r"100\% \& \$5 \#1 \_x \textasciicircum{}y \textasciitilde{}z" in tex


def test_latex_escape_leaves_no_command_group_or_math() -> None:
    out = latex_escape(r"\def\x{1}$a^b_c$ & 50% #~<>|" + "\n\x00")
    # Remove every escape we emit; nothing special to TeX may remain.
    rest = re.sub(r"\\text[a-z]+\{\}|\\[{}$&#%_]", "", out)
    assert not re.search(r"[\\{}$&#%_^~]", rest), (out, rest)
    assert "\n" not in out and "\x00" not in out


def test_html_is_self_contained(report) -> None:
    html = report["html"]
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", html)
    assert "<link" not in html and "@import" not in html
    assert html.count("<svg") >= 3


def test_every_metric_is_printed_beside_its_numerator_and_denominator(report) -> None:
    html = report["html"]
    assert re.search(r'<span class="v">0\.0417</span> <span class="nd">1/24</span>', html)  # babbler Start
    assert "20/20" in html and "withheld" in html  # oracle Stop: reported false under 30 events
    assert r"0.0417 {\footnotesize(1/24)}" in report["latex"]


def test_judge_labels_asr_and_manifest_are_shown(report) -> None:
    html = report["html"]
    assert "offline heuristic judge" in html and "faster-whisper" in html and "tiny.en" in html
    assert "git_commit" in html


def test_charts_start_presence_round_curves_and_scene_timeline(report) -> None:
    html = report["html"]
    assert "Start vs response presence" in html
    assert "moshi / mtr-smooth-turn-taking: per round" in html and "<polyline" in html
    assert "Scene timeline: oracle/mpe-explicit/scene-01-explicit" in html
    assert 'class="turn turn-t"' in html and 'class="episode"' in html and 'class="verdict verdict-fail"' in html


def test_golden_diff_and_paper_arithmetic_are_in_both_outputs(report) -> None:
    for text in (report["html"], report["latex"]):
        assert "embedded.oracle.explicit.stop" in text
        assert "mpe.a22.scenes-with-n4-after-t" in text and "does not reconcile" in text


def test_latex_tables_use_booktabs_and_the_papers_layout(report) -> None:
    tex = report["latex"]
    assert r"\toprule" in tex and r"\midrule" in tex and r"\bottomrule" in tex and r"\usepackage{booktabs}" in tex
    assert r"\multicolumn{4}{c}{explicit} & \multicolumn{4}{c}{implicit}" in tex
    assert "Model & Start & Answer & Shush & Stop & Start & Answer & Shush & Stop" in tex


def test_rendering_twice_is_byte_identical(report, tmp_path: Path) -> None:
    written = write_report(report["run"], families=plugins(), golden_paths=[golden_dir() / "embedded.yaml"], out_dir=tmp_path)
    assert written["html"].read_text(encoding="utf-8") == report["html"]
    assert written["latex"].read_text(encoding="utf-8") == report["latex"]


def test_report_command_writes_the_requested_formats(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    result = CliRunner().invoke(cli, ["report", str(run), "--format", "html", "--no-paper-arithmetic"])
    assert result.exit_code == 0, result.output
    assert (run / "report.html").is_file() and not (run / "report.tex").exists()
    bad = CliRunner().invoke(cli, ["report", str(run), "--format", "pdf"])
    assert bad.exit_code == 2 and "unknown report format" in bad.output


@pytest.mark.skipif(not (shutil.which("pdflatex") or shutil.which("lualatex")), reason="no TeX engine installed")
def test_latex_compiles(report, tmp_path: Path) -> None:
    engine = shutil.which("pdflatex") or shutil.which("lualatex")
    (tmp_path / "report.tex").write_text(report["latex"], encoding="utf-8")
    proc = subprocess.run([engine, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", "report.tex"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert (tmp_path / "report.pdf").stat().st_size > 5000


def test_latex_escape_shows_untypesettable_characters_as_code_points():
    # pdflatex stops on CJK (the MTR paper's quotes) or emoji in a transcript.
    from duplexeval.reports.render import latex_escape

    assert latex_escape("衰退 café – ok") == "[U+8870][U+9000] café – ok"


def test_latex_follows_the_html_first_screen(report) -> None:
    tex = report["latex"]
    order = [tex.index(x) for x in (r"\section*{Verdict}", "layout of Duplex-MPE Table 3", "layout of Duplex-MPE Table 9",
                                    "MTR-DuplexBench main table", r"\section*{Details}", r"\subsection*{Judges and ASR}",
                                    "every metric per round", r"\subsection*{Paper arithmetic}")]
    assert order == sorted(order)
    assert r"moshi & 100.0 {\tiny(10/10)} & 90.0 {\tiny(90/100)}" in tex  # one value per cell: round 1, rounds 1-10
    assert r"{\footnotesize golden: embedded}" in tex and r"\textcolor{within}{$\Delta$+0}" in tex  # silent: embedded.yaml


def test_latex_mtr_ablation_golden_and_caveat_escape_and_compile(report, tmp_path: Path) -> None:
    from duplexeval.reports.render import ReportInputs, build_context, load_run, render_latex

    context = build_context(ReportInputs(families=plugins(), run=load_run(report["run"])))
    bad = r"m_1 \input{x} & 50%"
    m = lambda n, d: {"value": n / d, "numerator": n, "denominator": d}  # noqa: E731
    pub = {"value": 85.5, "decimals": 1, "delta": -3.2, "within": False, "id": "x", "status": "out of tolerance",
           "tolerance": 0.05, "unit": "percent", "paper": "mtr"}
    cell = {"metric": "success", "r1": m(9, 10), "mean": m(80, 100), "mean_key": "1-10", "latency": {"value": 0.61, "denominator": 80},
            "no_response": m(2, 100), "pub_r1": pub, "pub_mean": {**pub, "within": True, "delta": 0.01}}
    (mtr,) = [s for s in context["sections"] if s.family == "mtr-duplexbench"]
    mtr.data["mtr_main"]["ablation"] = {"columns": [{"id": "mtr-combo-s", "label": "S"}],
                                       "rows": [{"model": bad, "cells": {"mtr-combo-s": cell}, "published": True,
                                                 "golden_source": "mtr-duplexbench", "timing": True}]}
    context["caveats"] = {bad: "random tiny weights {}"}
    tex = render_latex(context)
    assert r"\input{x}" not in tex and r"m\_1 \textbackslash{}input\{x\} \& 50\%\textsuperscript{\dag}" in tex
    assert (r"{\footnotesize golden: mtr-duplexbench} & {\footnotesize 85.5 \textcolor{outside}{$\Delta$-3.2}} & "
            r"{\footnotesize 85.5 \textcolor{within}{$\Delta$+0.01}} \\") in tex   # one golden value per cell
    assert r"\shortstack" not in tex.split("Combination ablation")[1].split(r"\end{longtable}")[0]
    assert r"0.61 {\tiny(n=80)} & 2/100" in tex   # latency and no-response in their own table
    assert tex.index("Combination ablation") < tex.index(r"\section*{Details}")
    engine = shutil.which("pdflatex") or shutil.which("lualatex")
    if engine is None:
        pytest.skip("no TeX engine installed")
    (tmp_path / "report.tex").write_text(tex, encoding="utf-8")
    proc = subprocess.run([engine, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", "report.tex"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:]
