"""Render a run as report.html (self-contained) and report.tex (booktabs tables).

Model transcripts, judge reasons, ids and manifest values are untrusted text: a model
can say `</script><script>` or `\\input{/etc/passwd}`. The HTML environment autoescapes
every `{{ }}` and the page carries a Content-Security-Policy that forbids scripts
anyway; the LaTeX environment escapes every `<< >>` through `finalize`, so a template
author cannot forget the filter — only values wrapped in `LatexSafe` (built here from
numbers) pass through unescaped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import jinja2

from duplexeval import __version__
from duplexeval.io import atomic_write_text
from duplexeval.reports import charts
from duplexeval.reports.compare import DiffRow, compare_run, counts as diff_counts, failed as diff_failed
from duplexeval.reports.golden import Golden, load_golden
from duplexeval.reports.paper_arithmetic import ArithmeticRow, paper_arithmetic, summary as arithmetic_summary
from duplexeval.reports.run_dir import ResultFile, RunDir, item_dirs, load_run, read_events, read_records

TEMPLATES = Path(__file__).parent / "templates"
FORMATS = ("html", "latex")
MPE_METRICS = ("start", "presence", "answer", "shush", "stop")


# ------------------------------------------------------------------ escaping

class LatexSafe(str):
    """Trusted LaTeX produced by this module (numbers, fixed markup): not escaped."""


_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#", "%": r"\%",
    "_": r"\_", "^": r"\textasciicircum{}", "~": r"\textasciitilde{}", "<": r"\textless{}", ">": r"\textgreater{}",
    "|": r"\textbar{}", '"': r"\textquotedbl{}",
}
_LATEX_RE = re.compile("|".join(re.escape(k) for k in _LATEX_SPECIALS))
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def latex_escape(value: Any) -> str:
    """Any text -> LaTeX that typesets it literally (no command, group or math survives)."""
    if value is None:
        return ""
    if isinstance(value, LatexSafe):
        return value
    text = _CONTROL_RE.sub(" ", str(value)).replace("\r", " ").replace("\n", " ").replace("\t", " ")
    text = _LATEX_RE.sub(lambda m: _LATEX_SPECIALS[m.group(0)], text)
    return LatexSafe(_UNTYPESETTABLE_RE.sub(lambda m: f"[U+{ord(m.group(0)):04X}]", text))


# pdflatex with inputenc/T1 typesets Latin scripts and common punctuation; anything else
# (the MTR paper's Chinese quotes, emoji in a transcript) would stop compilation, so it
# is shown as its code point: still traceable, never a LaTeX error.
_UNTYPESETTABLE_RE = re.compile("[^\x00-\u024f\u2013\u2014\u2018\u2019\u201c\u201d\u2026\u2212\u00d7]")


def _latex_finalize(value: Any) -> Any:
    return latex_escape(value)


def fmt(value: Any, decimals: int = 4) -> str:
    """Numbers as the papers print them (fixed decimals); None as an en dash."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value.is_integer() and abs(value) >= 1 and decimals == 0:
            return str(int(value))
        if value != 0 and abs(value) < 10 ** -decimals:
            return f"{value:.2g}"
        return f"{value:.{decimals}f}"
    return str(value)


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
    return env


@jinja2.pass_context
def _latex_caveat_mark(ctx: Any, model: Any) -> LatexSafe:
    """A dagger after a caveated model's name in every table; the caveat itself is listed up front."""
    return LatexSafe(r"\textsuperscript{\dag}" if model in (ctx.get("caveats") or {}) else "")


def latex_rate(m: dict[str, Any] | None) -> LatexSafe:
    """'0.9500 (1900/2000)': a metric always beside its numerator/denominator."""
    if not m:
        return LatexSafe("--")
    tex = lambda v, d: latex_escape(fmt(v, d)).replace("–", "--")  # noqa: E731
    return LatexSafe(f"{tex(m.get('value'), 4)} {{\\footnotesize({tex(m.get('numerator'), 0)}/{tex(m.get('denominator'), 0)})}}")


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


def metric_rows(result: ResultFile) -> list[dict[str, Any]]:
    out = []
    for name, m in result.metrics().items():
        if isinstance(m, dict):
            row = {"name": name, **{k: m.get(k) for k in ("value", "numerator", "denominator", "reported", "note")}}
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
                     "cells": {k: _metric(r, k) for k in MPE_METRICS}, "counts": counts,
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
        out.append({"model": r.model, "benchmark": r.benchmark, "round_keys": keys, "metrics": metrics, "rounds": rounds,
                    "mean_key": next((k for k in keys if "-" in k), None)})
    return out


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


def golden_diffs(inputs: ReportInputs) -> list[GoldenDiff]:
    out = []
    for g in inputs.goldens:
        rows = compare_run(inputs.run, g, aliases=inputs.aliases)
        out.append(GoldenDiff(g.path.name, str(g.path), rows, diff_counts(rows), diff_failed(rows, strict=inputs.strict)))
    return out


def build_context(inputs: ReportInputs) -> dict[str, Any]:
    run = inputs.run
    results = run.results
    arithmetic = inputs.arithmetic if inputs.arithmetic is not None else []
    return {
        "version": __version__,
        "run_id": run.run_id,
        "manifest": run.manifest or {},
        "results": [{"model": r.model, "benchmark": r.benchmark, "condition": r.condition, "path": run.relative(r.path),
                     "metrics": metric_rows(r), "counts": r.data.get("counts") or {}} for r in results],
        "mpe": mpe_table(results),
        "mtr": mtr_table(results),
        "labels": judge_labels(results),
        "caveats": model_caveats(results),
        "bars": charts.start_presence_bars(results),
        "curves": [c for c in (charts.round_curves(r) for r in results) if c is not None],
        "timeline": pick_timeline(run, inputs.item),
        "diffs": golden_diffs(inputs),
        "arithmetic": arithmetic,
        "arithmetic_summary": arithmetic_summary(arithmetic),
        "statistics": _statistics(run.root),
    }


def _statistics(root: Path) -> dict[str, Any] | None:
    """statistics.json (McNemar per model, Spearman presence vs Start), when the run has one."""
    path = Path(root) / "statistics.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


# ------------------------------------------------------------------ output

def render_html(context: dict[str, Any]) -> str:
    return html_env().get_template("report.html.j2").render(**context)


def render_latex(context: dict[str, Any]) -> str:
    return latex_env().get_template("tables.tex.j2").render(**context)


def write_report(run_dir: str | Path, *, formats: Iterable[str] = FORMATS, golden_paths: Iterable[str | Path] = (),
                 with_arithmetic: bool = True, item: str | None = None, out_dir: str | Path | None = None,
                 aliases: dict[str, str] | None = None, strict: bool = False) -> dict[str, Path]:
    """Write report.html / report.tex (atomically) and return {format: path}."""
    formats = list(formats)
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise ValueError(f"unknown report format(s) {unknown}; choose from {', '.join(FORMATS)}")
    run = load_run(run_dir)
    inputs = ReportInputs(run=run, goldens=[load_golden(p) for p in golden_paths],
                          arithmetic=paper_arithmetic() if with_arithmetic else None, item=item,
                          aliases=aliases or {}, strict=strict)
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
