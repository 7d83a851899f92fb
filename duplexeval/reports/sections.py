"""A report section: what one benchmark family shows of a run, built by its plug-in.

The shared report (render.py) knows the page's frame — verdict, charts, item browser,
details, manifest — and nothing about any paper's layout. Each family's plug-in
(`Benchmark.report_sections`) returns sections; a section carries the family's data and
the names of its templates, one per slot of the page:

    headline.html / headline.tex   the first screen: the paper's tables
    charts.html                    the charts block
    details.html / details.tex     the collapsible details after the item browser

A family without its own sections (a plug-in that never heard of reports) gets
`generic_section`: every metric of every result, rate beside numerator/denominator, so
a third benchmark appears in the report without a line of report code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Protocol

from duplexeval.reports.arithmetic_rows import ArithmeticRow
from duplexeval.reports.golden import Golden
from duplexeval.reports.published import Published
from duplexeval.runfolder.incomplete import marked
from duplexeval.runfolder.run_dir import ResultFile, RunDir

TEMPLATES = Path(__file__).parent / "templates"
SLOTS = ("headline.html", "charts.html", "details.html", "headline.tex", "details.tex")


@dataclass
class SectionInputs:
    """What a family's `report_sections` may read: its own results, the golden cells, the run."""

    run: RunDir
    results: list[ResultFile]                 # this family's results.json files, sorted (model, benchmark)
    published: Published                      # cells of the compared golden files, by run locator
    papers: dict[str, Golden] = field(default_factory=dict)   # paper id -> the paper's golden file (reference rows)
    item: str | None = None                   # the item the user asked the scene timeline for


@dataclass
class ReportSection:
    """One family's part of the report. `templates` maps a slot to a template file name in
    `template_dir`; the template sees the shared context (caveats, ...) plus `data`."""

    family: str
    id: str
    title: str
    data: dict[str, Any]
    template_dir: Path = TEMPLATES
    templates: dict[str, str] = field(default_factory=dict)
    filters: dict[str, dict[str, Any]] = field(default_factory=dict)   # ".html"/".tex" -> extra Jinja filters


class FamilyReport(Protocol):
    """What the report asks of a benchmark family (`duplexeval.benchmarks.Benchmark` has these
    hooks). The report is handed the families by its caller (`families`: family name -> plug-in,
    the plug-in registry in the commands), so reports/ never looks a family up itself."""

    @property
    def higher_is_better(self) -> dict[str, bool]: ...     # metric (or "<benchmark>/<metric>") -> direction

    @property
    def turn_roles(self) -> dict[str, str]: ...            # turn label -> "target" | "interrupt" (item view colours)

    @property
    def paper_golden_files(self) -> tuple[str, ...]: ...   # golden/ files of the papers it re-derives

    def report_sections(self, inputs: SectionInputs) -> list[ReportSection] | None: ...

    def report_item(self, bench_dir: Path, item_id: str) -> dict[str, Any] | None: ...

    def record_span(self, record: dict[str, Any]) -> tuple[float, float] | None: ...

    def record_speech(self, record: dict[str, Any]) -> list[tuple[float, float]]: ...

    def paper_arithmetic(self, papers: dict[str, Golden]) -> list[ArithmeticRow]: ...


Families = Mapping[str, FamilyReport]


def family_of(result: ResultFile) -> str:
    """The family a results.json belongs to: its benchmark spec's `benchmark:` (the snapshot the
    run wrote, else today's spec of that id), else `results.json`'s own `family`; '' when unknown."""
    snap = result.spec_snapshot()
    if snap is not None and isinstance(snap.get("benchmark"), str):
        return snap["benchmark"]
    try:
        from duplexeval.specs import default_registry

        return str(default_registry().get("benchmark", result.benchmark).data.get("benchmark") or "")
    except Exception:  # noqa: BLE001 - a benchmark this machine has no spec for still renders, generically
        return str(result.data.get("family") or "")


def by_family(results: list[ResultFile]) -> dict[str, list[ResultFile]]:
    """Results grouped by family, families in name order (the report's section order)."""
    out: dict[str, list[ResultFile]] = {}
    for r in results:
        out.setdefault(family_of(r), []).append(r)
    return dict(sorted(out.items()))


def direction(higher_is_better: Mapping[str, bool], benchmark: str, metric: str) -> str | None:
    """'higher' / 'lower' (is better) for a metric by its family's `higher_is_better`
    ("<benchmark>/<metric>" before "<metric>"); None when the family does not say."""
    value = higher_is_better.get(f"{benchmark}/{metric}", higher_is_better.get(metric))
    return None if value is None else ("higher" if value else "lower")


def generic_section(family: str, results: list[ResultFile],
                    higher_is_better: Mapping[str, bool] | None = None) -> ReportSection:
    """Every metric of every result as model x metric, each rate beside its numerator/denominator,
    each header marked with the direction its family declares (Benchmark.higher_is_better)."""
    tables = []
    for bench in sorted({r.benchmark for r in results}):
        mine = [r for r in results if r.benchmark == bench]
        metrics = sorted({k for r in mine for k, v in r.metrics().items() if isinstance(v, dict)})
        rows = [{"model": r.model, "cells": {k: marked(r.data, k, r.metrics().get(k), r.metrics()) for k in metrics}}
                for r in mine]
        directions = {m: direction(higher_is_better or {}, bench, m) for m in metrics}
        tables.append({"benchmark": bench, "metrics": metrics, "rows": rows, "directions": directions})
    name = family or "unknown family"
    return ReportSection(family=family, id=f"family-{name}".replace(" ", "-"), title=name,
                         data={"tables": tables},
                         templates={"headline.html": "_generic_headline.html.j2", "headline.tex": "_generic_headline.tex.j2"})
