"""Duplex-MPE's part of the report: Table 3 and Table 9 in the paper's layout, its charts,
presence and Stop over all N4, the statistics of App. A5.1 / §4.5, and the paper's tables
as published (Tables 3, 9, 14/15, 16, 17) with the run's rows beside them.

The shared report code (duplexeval/reports) draws the page; everything that knows what a
Start, a condition or an N4 event is lives here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from duplexeval.reports.paper_tables import Column, PaperTable, build_all
from duplexeval.reports.published import Published
from duplexeval.reports.sections import ReportSection, SectionInputs
from duplexeval.runfolder.incomplete import marked
from duplexeval.runfolder.run_dir import ResultFile, item_dirs, read_events, read_records

TEMPLATES = Path(__file__).parent / "templates"
MPE_METRICS = ("start", "presence", "answer", "shush", "stop")
PAPER = "duplex-mpe"


def _metric(result: ResultFile, name: str) -> dict[str, Any] | None:
    m = result.metrics().get(name)
    return m if isinstance(m, dict) else None


def mpe_table(results: list[ResultFile]) -> dict[str, Any]:
    """Rows model x condition; the paper's four scores plus presence, each with n / N."""
    rows: list[dict[str, Any]] = []
    for r in results:
        if not any(k in r.metrics() for k in ("start", "shush")):
            continue
        start = _metric(r, "start") or {}
        # The scorer keeps Start's three outcomes inside the metric; older files used counts.
        counts = {**(r.data.get("counts") or {}),
                  **{f"start_{k}": v for k, v in (start.get("outcomes") or {}).items()}}
        stop = _metric(r, "stop") or {}
        n4_all = stop.get("n4_events", counts.get("n4_events", counts.get("n4_total")))
        rows.append({"model": r.model, "condition": r.condition or r.benchmark,
                     "benchmark": r.benchmark,
                     "cells": {k: marked(r.data, k, _metric(r, k), r.metrics()) for k in MPE_METRICS}, "counts": counts,
                     "stop_over_all_n4": (stop.get("numerator") / n4_all) if n4_all and stop.get("numerator") is not None else None,
                     "n4_all": n4_all})
    by_model: dict[str, dict[str, Any]] = {}
    for row in rows:
        by_model.setdefault(row["model"], {})[row["condition"]] = row
    conditions = sorted({row["condition"] for row in rows})
    return {"rows": rows, "by_model": by_model, "conditions": conditions}


def mpe_published(table: dict[str, Any], pub: Published) -> dict[str, Any]:
    """{model: {condition: {metric: golden cell}}} for Table 3's golden rows (compared golden files)."""
    out: dict[str, Any] = {}
    for row in table["rows"]:
        bench = f"mpe-{row['condition']}"
        cells = {k: pub.get(row["model"], bench, k) for k in MPE_METRICS}
        if any(cells.values()):
            out.setdefault(row["model"], {})[row["condition"]] = cells
    return out


def golden_sources(published: dict[str, Any]) -> dict[str, str]:
    """Model -> the golden file(s) (paper ids) its golden row comes from, e.g. 'embedded': a golden
    row says whose numbers it holds (issue 28: an unlabelled row held silent's expectations)."""
    return {model: ", ".join(sorted({c["paper"] for cells in by_cond.values() for c in cells.values() if c}))
            for model, by_cond in published.items()}


def statistics(root: Path) -> dict[str, Any] | None:
    """statistics.json (McNemar per model, Spearman presence vs Start), when the run has one."""
    path = Path(root) / "statistics.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def _loc(bench: str, metric: str, fld: str = "value") -> dict[str, str]:
    return {"benchmark": bench, "metric": metric, **({"field": fld} if fld != "value" else {})}


_T3 = tuple(Column(label, _loc(f"mpe-{cond}", metric), group=cond)
            for cond in ("explicit", "implicit")
            for label, metric in (("Start", "start"), ("Answer", "answer"), ("Shush", "shush"), ("Stop", "stop")))
_T9 = (Column("fresh", _loc("mpe-explicit", "start", "outcomes.fresh"), decimals=0),
       Column("already speaking", _loc("mpe-explicit", "start", "outcomes.already_speaking"), decimals=0),
       Column("T turns", _loc("mpe-explicit", "start", "denominator"), decimals=0),
       Column("Start", _loc("mpe-explicit", "start")),
       Column("presence (count)", _loc("mpe-explicit", "presence", "numerator"), decimals=0),
       Column("presence", _loc("mpe-explicit", "presence")))
_T15 = (Column("spoke after the question", _loc("mpe-explicit", "stop", "spoke_after_question"), decimals=0),
        Column("eligible", _loc("mpe-explicit", "stop", "denominator"), decimals=0),
        Column("yields", _loc("mpe-explicit", "stop", "numerator"), decimals=0),
        Column("Stop", _loc("mpe-explicit", "stop")))
_MCNEMAR = {"statistics": "mcnemar", "benchmark": "mpe-explicit", "metric": "presence"}
_T16 = (Column("explicit only", {**_MCNEMAR, "field": "first_only"}, decimals=0),
        Column("implicit only", {**_MCNEMAR, "field": "second_only"}, decimals=0),
        Column("p (exact McNemar)", {**_MCNEMAR, "field": "p"}))
_T17 = (Column("explicit", _loc("mpe-explicit", "response"), group="response rate"),
        Column("implicit", _loc("mpe-implicit", "response"), group="response rate"))

# The project page's results table (https://step-out.github.io/Duplex-MPE-Page/, section 03):
# both conditions, the four scores, Stop's eligible events and the two coverage diagnostics.
# Its golden cells are `table: project page`; the page's values that Table 3 / 9 / 14-15 and
# §4.3 already hold come from those cells (the page agrees with each of them).
_PAGE = tuple(Column(label, _loc(f"mpe-{cond}", metric, fld), group=cond, decimals=0 if fld != "value" else 4)
              for cond in ("explicit", "implicit")
              for label, metric, fld in (("Start", "start", "value"), ("Answer", "answer", "value"),
                                         ("Shush", "shush", "value"), ("Stop", "stop", "value"),
                                         ("Stop n", "stop", "denominator"), ("presence", "presence", "value"),
                                         ("window response", "window_response", "value")))

PAPER_TABLES = (
    PaperTable("paper-mpe-page", "Duplex-MPE project page — results, both conditions", PAPER,
               ("project page", "Table 3", "Table 9", "Table 14", "Table 15", "Table 15 (lesson arithmetic)", "§4.3"),
               _PAGE,
               note="From the authors' project page (https://step-out.github.io/Duplex-MPE-Page/). "
                    "Window response (speech during an N4 question or its 3 s gap) is not computed by "
                    "this harness's scorer: its cells have no run value."),
    PaperTable("paper-mpe-t3", "Duplex-MPE Table 3 — scores per condition", PAPER, ("Table 3",), _T3),
    PaperTable("paper-mpe-t9", "Duplex-MPE Table 9 — Start outcomes and response presence (explicit)", PAPER,
               ("Table 9", "Table 3"), _T9),
    PaperTable("paper-mpe-t15", "Duplex-MPE Tables 14/15 — Stop: eligible events and yields (explicit)", PAPER,
               ("Table 14", "Table 15", "Table 3"), _T15),
    PaperTable("paper-mpe-t16", "Duplex-MPE Table 16 — response presence, explicit vs implicit (McNemar)", PAPER,
               ("Table 16",), _T16),
    PaperTable("paper-mpe-t17", "Duplex-MPE Table 17 — text-only reference", PAPER, ("Table 17",), _T17,
               compare=False, note="This run's text-only reference is scored by the judge its results.json names "
                                   "(judges.text_reference), not by Gemini 3.1 Pro: the rows are not compared."),
)


def pick_timeline(results: list[ResultFile], item: str | None) -> dict[str, Any] | None:
    """The requested item (`report --item`), else the first item whose records have windows."""
    from duplexeval.benchmarks.mpe.report_charts import scene_timeline

    for result in results:
        records = read_records(result)
        for d in item_dirs(result):
            if item is not None and d.name != item:
                continue
            mine = [r for r in records if str(r.get("item", r.get("item_id"))) == d.name]
            timeline = scene_timeline(f"{result.model}/{result.benchmark}/{d.name}", read_events(d), mine)
            if timeline is not None:
                return timeline
    return None


def sections(inputs: SectionInputs) -> list[ReportSection]:
    from duplexeval.benchmarks.mpe.report_charts import (
        start_presence_bars,
        stop_yield_bars,
    )

    results = inputs.results
    mpe = mpe_table(results)
    published = mpe_published(mpe, inputs.published)
    data = {"mpe": mpe, "mpe_published": published, "golden_sources": golden_sources(published),
            "bars": start_presence_bars(results), "stop_bars": stop_yield_bars(results),
            "statistics": statistics(inputs.run.root),
            "timeline": pick_timeline(results, inputs.item),
            "paper_tables": build_all(PAPER_TABLES, inputs.papers, inputs.run, results)}
    names = ("headline.html", "charts.html", "details.html", "headline.tex", "details.tex")
    return [ReportSection(family="duplex-mpe", id="mpe", title="Duplex-MPE", data=data, template_dir=TEMPLATES,
                          templates={**{n: f"{n}.j2" for n in names},
                                     "papers.html": "_papers.html.j2", "papers.tex": "_papers.tex.j2"})]
