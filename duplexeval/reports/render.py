"""Render a run as report.html (self-contained) and report.tex (booktabs tables).

Model transcripts, judge reasons, ids and manifest values are untrusted text: a model
can say `</script><script>` or `\\input{/etc/passwd}`. The HTML environment autoescapes
every `{{ }}` and the page carries a Content-Security-Policy that forbids scripts
anyway; the LaTeX environment escapes every `<< >>` through `finalize`, so a template
author cannot forget the filter — only values wrapped in `LatexSafe` (built in formatting.py from
numbers) pass through unescaped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import jinja2
from markupsafe import Markup

from duplexeval import __version__
from duplexeval.io import atomic_write_text
from duplexeval.reports import browser, charts
from duplexeval.reports.compare import DiffRow, compare_run, counts as diff_counts, failed as diff_failed
from duplexeval.reports.formatting import (  # noqa: F401  (latex_escape, LatexSafe: part of this module's API)
    LatexSafe, _latex_caveat_mark, _latex_finalize, fmt, latex_escape, latex_lost, latex_mtr_cell, latex_pct,
    latex_pub, latex_rate)
from duplexeval.reports.golden import Golden, load_golden
from duplexeval.reports.headline import headline_metrics
from duplexeval.reports.incomplete import marked, run_incomplete
from duplexeval.reports.paper_arithmetic import ArithmeticRow, paper_arithmetic, summary as arithmetic_summary
from duplexeval.reports.run_dir import ResultFile, RunDir, item_dirs, load_run, read_events, read_records
from duplexeval.specs.readings import readings_by_benchmark

TEMPLATES = Path(__file__).parent / "templates"
FORMATS = ("html", "latex")
MPE_METRICS = ("start", "presence", "answer", "shush", "stop")


def html_env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["fmt"] = fmt
    env.filters["tojson_pretty"] = lambda v: json.dumps(v, indent=2, sort_keys=True, ensure_ascii=False)
    return env


def latex_env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=False, finalize=_latex_finalize,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             block_start_string="<%", block_end_string="%>", variable_start_string="<<",
                             variable_end_string=">>", comment_start_string="<#", comment_end_string="#>")
    env.filters["fmt"] = lambda v, d=4: LatexSafe(latex_escape(fmt(v, d)).replace("–", "--"))
    env.filters["tex"] = latex_escape
    env.filters["rate"] = latex_rate
    env.filters["caveat_mark"] = _latex_caveat_mark
    env.filters["pct"] = latex_pct
    env.filters["pub"] = latex_pub
    env.filters["mtrcell"] = latex_mtr_cell
    env.filters["lost"] = lambda m: LatexSafe(latex_lost(m))
    return env


# ------------------------------------------------------------------ context

@dataclass
class GoldenDiff:
    name: str
    path: str
    rows: list[DiffRow]
    counts: dict[str, int]
    failed: bool


@dataclass
class ReportInputs:
    run: RunDir
    goldens: list[Golden] = field(default_factory=list)
    arithmetic: list[ArithmeticRow] | None = None
    item: str | None = None
    strict: bool = False
    aliases: dict[str, str] = field(default_factory=dict)
    damaged: list[str] = field(default_factory=list)  # verify's findings, shown on every page (--allow-damaged)


def metric_rows(result: ResultFile) -> list[dict[str, Any]]:
    out = []
    for name, m in result.metrics().items():
        if isinstance(m, dict):
            row = {"name": name, **{k: m.get(k) for k in ("value", "numerator", "denominator", "reported", "note")}}
            row["lost"] = (marked(result.data, name, m, result.metrics()) or {}).get("lost", 0)
            row["ci95"] = m.get("ci95") or m.get("wilson")
            out.append(row)
    return out


def _metric(result: ResultFile, name: str) -> dict[str, Any] | None:
    m = result.metrics().get(name)
    return m if isinstance(m, dict) else None


def mpe_table(results: list[ResultFile]) -> dict[str, Any]:
    """Rows model x condition; the paper's four scores plus presence, each with n / N."""
    rows = []
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
                     "cells": {k: marked(r.data, k, _metric(r, k), r.metrics()) for k in MPE_METRICS}, "counts": counts,
                     "stop_over_all_n4": (stop.get("numerator") / n4_all) if n4_all and stop.get("numerator") is not None else None,
                     "n4_all": n4_all})
    by_model: dict[str, dict[str, Any]] = {}
    for row in rows:
        by_model.setdefault(row["model"], {})[row["condition"]] = row
    conditions = sorted({row["condition"] for row in rows})
    return {"rows": rows, "by_model": by_model, "conditions": conditions}


def mtr_table(results: list[ResultFile]) -> list[dict[str, Any]]:
    """Results with per-round metrics: round 1 -> the 1-N mean, as MTR prints them."""
    out = []
    for r in results:
        rounds = r.rounds()
        if not rounds:
            continue
        keys = sorted(rounds, key=lambda k: (0, int(k)) if k.isdigit() else (1, k))
        metrics = sorted({m for k in keys for m in rounds[k] if isinstance(rounds[k][m], dict)})
        rounds = {k: {m: (marked(r.data, m, v, t) if isinstance(v, dict) else v) for m, v in t.items()}
                  for k, t in rounds.items()}
        out.append({"model": r.model, "benchmark": r.benchmark, "round_keys": keys, "metrics": metrics, "rounds": rounds,
                    "mean_key": next((k for k in keys if "-" in k), None)})
    return out


MTR_FEATURES = (("smooth-turn-taking", "Smooth turn-taking"), ("interruption", "Interruption"),
                ("pause-handling", "Pause handling"), ("background-speech", "Background speech"),
                ("backchannel", "Backchannel"))
MTR_COMBOS = (("combo-s", "S"), ("combo-si", "S+I"), ("combo-sip", "S+I+P"), ("combo-sipb", "S+I+P+B"))
MTR_OTHER = (("quality", "Dialogue quality"), ("instruction", "Instruction following"), ("safety", "Safety"),
             ("safety-interruption", "Safety (interruption)"))


def _mtr_cell(r: ResultFile, pub: "Published", metric: str) -> dict[str, Any] | None:
    """One dimension's `metric` at round 1 and over rounds 1-N, each with the units it lost to errors."""
    rounds = r.rounds()
    mean_key = next((k for k in sorted(rounds) if "-" in k), None)
    first, mean_table = rounds.get("1") or {}, (rounds.get(mean_key) or {}) if mean_key else {}
    r1 = marked(r.data, metric, first.get(metric), first)
    mean = marked(r.data, metric, mean_table.get(metric), mean_table)
    latency, no_resp = mean_table.get("latency_s"), mean_table.get("no_response")
    unit = (mean or r1 or {}).get("unit")
    return {"metric": metric, "r1": r1, "mean": mean, "unit": unit, "mean_key": mean_key,
            "latency": latency if isinstance(latency, dict) else None,
            "no_response": no_resp if isinstance(no_resp, dict) else None,
            "pub_r1": pub.get(r.model, r.benchmark, metric, "1"),
            "pub_mean": pub.get(r.model, r.benchmark, metric, mean_key)}


def mtr_cells(r: ResultFile, pub: "Published") -> list[dict[str, Any]]:
    """A cell per headline metric of the dimension's spec (`report.headline`), in its order."""
    rounds = r.rounds()
    if not rounds:
        return []
    mean_key = next((k for k in sorted(rounds) if "-" in k), None)
    table = rounds.get("1") or rounds.get(mean_key or "", {}) or r.metrics()
    return [c for c in (_mtr_cell(r, pub, m) for m in headline_metrics(r, table)) if c is not None]


def mtr_main(results: list[ResultFile], pub: "Published") -> dict[str, Any]:
    """MTR-DuplexBench's main table: models x dialogue features, "round 1 -> rounds 1-N", latency;
    the combination ablation (S, S+I, S+I+P, S+I+P+B); the other dimensions per model."""
    by = {(r.model, r.benchmark): r for r in results if r.rounds()}
    models = sorted({m for m, _ in by})

    def table(spec: tuple[tuple[str, str], ...]) -> dict[str, Any]:
        cols = [(f"mtr-{key}", label) for key, label in spec if any((m, f"mtr-{key}") in by for m in models)]
        rows = []
        for m in models:
            many = {b: mtr_cells(by[(m, b)], pub) if (m, b) in by else [] for b, _ in cols}
            cells = {b: (v[0] if v else None) for b, v in many.items()}
            if any(cells.values()):
                rows.append({"model": m, "cells": cells, "headlines": many,
                             "published": any(c["pub_r1"] or c["pub_mean"] for v in many.values() for c in v)})
        return {"columns": [{"id": b, "label": label} for b, label in cols], "rows": rows}

    return {"features": table(MTR_FEATURES), "ablation": table(MTR_COMBOS), "other": table(MTR_OTHER)}


class Published:
    """Published cells by run locator, from the golden diffs: the paper's row beside ours."""

    def __init__(self) -> None:
        self.cells: dict[tuple[str, str, str, str, str], dict[str, Any]] = {}

    def add(self, cell: Any, row: DiffRow) -> None:
        loc = cell.run or {}
        if cell.value is None or "model" not in loc or "metric" not in loc:
            return
        key = (loc["model"], loc.get("benchmark", ""), loc["metric"], loc.get("rounds", ""), loc.get("field", "value"))
        self.cells.setdefault(key, {"value": cell.value, "unit": cell.unit, "decimals": cell.decimals, "id": cell.id,
                                    "delta": row.delta, "within": row.within_tolerance, "status": row.status,
                                    "tolerance": row.tolerance, "paper": cell.paper})

    def get(self, model: str, benchmark: str, metric: str, rounds: str | None = None,
            field: str = "value") -> dict[str, Any] | None:
        return self.cells.get((model, benchmark, metric, rounds or "", field))


def model_caveats(results: list[ResultFile]) -> dict[str, str]:
    """Model -> its caveat (results.json `model_caveat`, from the spec's `caveat`), e.g. random
    tiny weights: shown up front and beside the model's name in every table, so a smoke-test
    model is never read as the system it is named after."""
    out: dict[str, str] = {}
    for r in results:
        caveat = r.data.get("model_caveat")
        if caveat:
            out.setdefault(r.model, str(caveat))
    return out


def _judge_label(judge_id: str | None) -> str | None:
    """The judge spec's own label ("offline heuristic judge"), so no report hides which judge ran."""
    if not judge_id:
        return None
    try:
        from duplexeval.specs import default_registry

        return default_registry().get("judge", judge_id).data.get("label")
    except Exception:  # an unknown or invalid judge spec must not stop a report
        return "label unknown: judge spec not found"


def judge_labels(results: list[ResultFile]) -> list[dict[str, Any]]:
    out = []
    for r in results:
        judges = r.data.get("judges") or {}
        rows = []
        for role, v in sorted(judges.items()):
            jid, label = (v.get("id"), v.get("label")) if isinstance(v, dict) else (v, None)
            rows.append({"role": role, "id": jid, "label": label or _judge_label(jid)})
        out.append({"model": r.model, "benchmark": r.benchmark, "judges": rows,
                    "asr": r.data.get("asr") or {}, "item_counts": r.data.get("items") or {}})
    return out


def pick_timeline(run: RunDir, item: str | None) -> dict[str, Any] | None:
    """The requested item, else the first MPE item whose records have windows."""
    for result in run.results:
        records = read_records(result)
        for d in item_dirs(result):
            if item is not None and d.name != item:
                continue
            mine = [r for r in records if str(r.get("item", r.get("item_id"))) == d.name]
            timeline = charts.scene_timeline(f"{result.model}/{result.benchmark}/{d.name}", read_events(d), mine)
            if timeline is not None:
                return timeline
    return None


def golden_diffs(inputs: ReportInputs, published: Published | None = None) -> list[GoldenDiff]:
    out = []
    for g in inputs.goldens:
        rows = compare_run(inputs.run, g, aliases=inputs.aliases)
        if published is not None:
            cells = {c.id: c for c in g.cells}
            for row in rows:
                if row.cell_id in cells and row.status != "missing":
                    published.add(cells[row.cell_id], row)
        out.append(GoldenDiff(g.path.name, str(g.path), rows, diff_counts(rows), diff_failed(rows, strict=inputs.strict)))
    return out


def mpe_published(table: dict[str, Any], pub: Published) -> dict[str, Any]:
    """{model: {condition: {metric: published cell}}} for Table 3's paper rows."""
    out: dict[str, Any] = {}
    for row in table["rows"]:
        bench = f"mpe-{row['condition']}"
        cells = {k: pub.get(row["model"], bench, k) for k in MPE_METRICS}
        if any(cells.values()):
            out.setdefault(row["model"], {})[row["condition"]] = cells
    return out


def build_context(inputs: ReportInputs) -> dict[str, Any]:
    run = inputs.run
    results = run.results
    arithmetic = inputs.arithmetic if inputs.arithmetic is not None else []
    published = Published()
    diffs = golden_diffs(inputs, published)
    mpe = mpe_table(results)
    return {
        "version": __version__,
        "run_id": run.run_id,
        "manifest": run.manifest or {},
        "readings": readings_by_benchmark(run.manifest or {}),
        "sensitivity": sensitivity_context(run.root),
        "results": [{"model": r.model, "benchmark": r.benchmark, "condition": r.condition, "path": run.relative(r.path),
                     "metrics": metric_rows(r), "counts": r.data.get("counts") or {}} for r in results],
        "mpe": mpe,
        "mpe_published": mpe_published(mpe, published),
        "mtr": mtr_table(results),
        "mtr_main": mtr_main(results, published),
        "labels": judge_labels(results),
        "caveats": model_caveats(results),
        "incomplete": run_incomplete(results),
        "damaged": list(inputs.damaged),
        "bars": charts.start_presence_bars(results),
        "stop_bars": charts.stop_yield_bars(results),
        "feature_curves": charts.feature_curves(results),
        "curves": [c for c in (charts.round_curves(r) for r in results) if c is not None],
        "timeline": pick_timeline(run, inputs.item),
        "browser": browser.browser_data(run),
        "diffs": diffs,
        "arithmetic": arithmetic,
        "arithmetic_summary": arithmetic_summary(arithmetic),
        "statistics": _statistics(run.root),
    }


def sensitivity_context(root: Path, max_rows: int = 300) -> dict[str, Any] | None:
    """sensitivity.json as the report shows it: one line per switch, then the moved metrics."""
    from duplexeval.runs import sensitivity

    data = sensitivity.load(root)
    if data is None:
        return None
    rows = sensitivity.moved(data["rows"])
    return {"summary": sensitivity.switch_summary(data["rows"]), "rows": rows[:max_rows],
            "left_out": max(0, len(rows) - max_rows)}


def _statistics(root: Path) -> dict[str, Any] | None:
    """statistics.json (McNemar per model, Spearman presence vs Start), when the run has one."""
    path = Path(root) / "statistics.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


# ------------------------------------------------------------------ output

def render_html(context: dict[str, Any]) -> str:
    script = browser.SCRIPT
    return html_env().get_template("report.html.j2").render(
        **context, browser_json=browser.json_for_script(context["browser"]), browser_script=Markup(script),
        script_hash=browser.script_hash(script))


def render_latex(context: dict[str, Any]) -> str:
    return latex_env().get_template("tables.tex.j2").render(**context)


def write_report(run_dir: str | Path, *, formats: Iterable[str] = FORMATS, golden_paths: Iterable[str | Path] = (),
                 with_arithmetic: bool = True, item: str | None = None, out_dir: str | Path | None = None,
                 aliases: dict[str, str] | None = None, strict: bool = False,
                 damaged: Iterable[str] = ()) -> dict[str, Path]:
    """Write report.html / report.tex (atomically) and return {format: path}."""
    formats = list(formats)
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise ValueError(f"unknown report format(s) {unknown}; choose from {', '.join(FORMATS)}")
    run = load_run(run_dir)
    inputs = ReportInputs(run=run, goldens=[load_golden(p) for p in golden_paths],
                          arithmetic=paper_arithmetic() if with_arithmetic else None, item=item,
                          aliases=aliases or {}, strict=strict, damaged=list(damaged))
    context = build_context(inputs)
    out = Path(out_dir) if out_dir else run.root
    written: dict[str, Path] = {}
    if "html" in formats:
        written["html"] = out / "report.html"
        atomic_write_text(written["html"], render_html(context))
    if "latex" in formats:
        written["latex"] = out / "report.tex"
        atomic_write_text(written["latex"], render_latex(context))
    return written
