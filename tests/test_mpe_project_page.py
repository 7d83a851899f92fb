"""Duplex-MPE's project page (https://step-out.github.io/Duplex-MPE-Page/, issue 35 item 5):
its results table in golden/duplex-mpe.yaml, every cell citing the page, the page agreeing
with the cells the paper's lesson already held, and the report drawing the table."""

from __future__ import annotations

import re

import pytest
from report_fixture import make_run

from duplexeval.benchmarks import plugins
from duplexeval.benchmarks.mpe.report import PAPER_TABLES
from duplexeval.reports.golden import golden_dir, load_golden
from duplexeval.reports.paper_tables import published_rows
from duplexeval.reports.render import ReportInputs, build_context, render_html
from duplexeval.runfolder.run_dir import load_run

PAGE = "https://step-out.github.io/Duplex-MPE-Page/"
MODELS = ("minicpm-o-4.5", "voila", "flm-audio", "moshi", "freeze-omni")
CONDITIONS = ("explicit", "implicit")
SCORES = ("start", "answer", "shush", "stop")


@pytest.fixture(scope="module")
def golden():
    return load_golden(golden_dir() / "duplex-mpe.yaml")


@pytest.fixture(scope="module")
def page_table(golden):
    table = next(t for t in PAPER_TABLES if t.id == "paper-mpe-page")
    rows = published_rows(table, golden)
    labels = [c.label if not c.group else f"{c.group}.{c.label}" for c in table.columns]
    return {r.model: dict(zip(labels, r.cells)) for r in rows}


def value(page_table, model: str, condition: str, label: str) -> float | None:
    cell = page_table[model][f"{condition}.{label}"]
    return None if cell is None else cell["value"]


def test_every_page_cell_cites_the_page_and_has_a_run_locator(golden):
    cells = [c for c in golden.cells if c.table == "project page"]
    assert len(cells) == 53  # 46 printed values the lesson lacked + 7 Stop sample sizes
    for c in cells:
        assert PAGE in c.source and c.run and c.run["model"] in MODELS, c.id
        assert c.value is not None and c.tolerance is not None


def test_the_page_table_is_complete_but_for_freeze_omnis_unreported_stop(page_table):
    assert list(page_table) == list(MODELS)
    for model in MODELS:
        for cond in CONDITIONS:
            for label in ("Start", "Answer", "Shush", "Stop", "Stop n", "presence", "window response"):
                got = value(page_table, model, cond, label)
                if model == "freeze-omni" and label == "Stop":
                    assert got is None  # 1 eligible event < 30: the page prints no rate
                else:
                    assert got is not None, (model, cond, label)
    assert value(page_table, "moshi", "implicit", "Stop n") == 242
    assert value(page_table, "voila", "implicit", "Stop") == 0.8046


def test_the_page_agrees_with_what_the_lesson_derived_from_table_3(golden, page_table):
    """The lesson's statements about Table 3 hold on the page's numbers: the largest
    explicit-implicit shift, the best Answer of the other four, Table 16's presence gaps."""
    shifts = [abs(a - b) for m in MODELS for label in ("Start", "Answer", "Shush", "Stop")
              if (a := value(page_table, m, "explicit", label)) is not None
              and (b := value(page_table, m, "implicit", label)) is not None]
    assert max(shifts) == pytest.approx(golden["mpe.t3.max-explicit-implicit-shift"].value, abs=1e-9)
    others = [value(page_table, m, "explicit", "Answer") for m in MODELS if m != "minicpm-o-4.5"]
    assert max(others) == golden["mpe.t3.other-four.answer-max"].value  # Moshi's
    gaps = [100 * (value(page_table, m, "explicit", "presence") - value(page_table, m, "implicit", "presence"))
            for m in MODELS]
    assert min(gaps) == pytest.approx(golden["mpe.t16.min-explicit-minus-implicit"].value, abs=1e-9)
    assert max(gaps) == pytest.approx(golden["mpe.t16.max-explicit-minus-implicit"].value, abs=1e-9)
    leads = sum(max(MODELS, key=lambda m, s=s: value(page_table, m, "explicit", s) or -1.0) == "minicpm-o-4.5"
                for s in ("Start", "Answer", "Shush", "Stop"))
    assert leads == golden["mpe.t3.minicpm-o.leads"].value


def test_the_report_draws_the_page_table(tmp_path):
    run = make_run(tmp_path)
    html = render_html(build_context(ReportInputs(families=plugins(), run=load_run(run))))
    table = html.split('id="paper-mpe-page"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr class=\"([a-z]+)-row\" data-model=\"([^\"]+)\">(.*?)</tr>", table, re.S)
    assert [m for kind, m, _ in rows if kind == "published"] == list(MODELS)
    voila = next(body for kind, m, body in rows if kind == "published" and m == "voila")
    assert "0.0031" in voila and "0.8046" in voila and "650" in voila  # explicit Answer, implicit Stop and its n
    assert PAGE in html
