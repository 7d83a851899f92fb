"""Render a run as report.html (self-contained) and report.tex (booktabs tables).

Model transcripts, judge reasons, ids and manifest values are untrusted text: a model
can say `</script><script>` or `\\input{/etc/passwd}`. The HTML environment autoescapes
every `{{ }}` and the page carries a Content-Security-Policy that forbids scripts
anyway; the LaTeX environment escapes every `<< >>` through `finalize`, so a template
author cannot forget the filter — only values wrapped in `LatexSafe` (built in formatting.py from
numbers) pass through unescaped.
"""

from __future__ import annotations

import collections
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import jinja2
from markupsafe import Markup

from duplexeval import __version__
from duplexeval.io import atomic_write_text
from duplexeval.reports import browser
from duplexeval.reports.compare import DiffRow, compare_run, counts as diff_counts, failed as diff_failed
from duplexeval.reports.formatting import (  # noqa: F401  (latex_escape, LatexSafe: part of this module's API)
    LatexSafe,
    _latex_caveat_mark,
    _latex_finalize,
    fmt,
    latex_escape,
    latex_lost,
    latex_pub,
    latex_rate,
)
from duplexeval.reports.golden import Golden, golden_files, load_golden
from duplexeval.reports.paper_arithmetic import ArithmeticRow, paper_arithmetic, summary as arithmetic_summary
from duplexeval.reports.paper_tables import is_reference_agent
from duplexeval.reports.published import Published
from duplexeval.reports.sections import Families, ReportSection, SectionInputs, by_family, generic_section
from duplexeval.runfolder.incomplete import marked, run_incomplete
from duplexeval.runfolder.run_dir import ResultFile, RunDir, load_run
from duplexeval.specs.readings import readings_by_benchmark

TEMPLATES = Path(__file__).parent / "templates"
FORMATS = ("html", "latex")


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
    env.filters["pub"] = latex_pub
    env.filters["lost"] = lambda m: LatexSafe(latex_lost(m))
    env.filters["safe_latex"] = LatexSafe  # a macro's output: its << >> were escaped when it rendered
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
    families: Families   # family name -> its plug-in (the commands pass the plug-in registry's)
    goldens: list[Golden] = field(default_factory=list)
    arithmetic: list[ArithmeticRow] | None = None
    item: str | None = None
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


def golden_diffs(inputs: ReportInputs, published: Published | None = None) -> list[GoldenDiff]:
    out = []
    for g in inputs.goldens:
        rows = compare_run(inputs.run, g, aliases=inputs.aliases)
        if published is not None:
            cells = {c.id: c for c in g.cells}
            for row in rows:
                if row.cell_id in cells and row.status != "missing":
                    published.add(cells[row.cell_id], row)
        out.append(GoldenDiff(g.path.name, str(g.path), rows, diff_counts(rows), diff_failed(rows)))
    return out


def paper_goldens() -> dict[str, Golden]:
    """Every paper's golden file in golden/, by paper id: the published rows of the paper tables."""
    out: dict[str, Golden] = {}
    for path in golden_files():
        g = load_golden(path)
        out.setdefault(str(g.paper.get("id")), g)
    return out


def family_sections(inputs: ReportInputs, published: Published) -> list[ReportSection]:
    """Each family's sections, from its plug-in (the generic table when it has none), families in name order."""
    known = inputs.families
    papers = paper_goldens()
    out: list[ReportSection] = []
    for family, results in by_family(inputs.run.results).items():
        section_inputs = SectionInputs(run=inputs.run, results=results, published=published, papers=papers,
                                       item=inputs.item)
        plugin = known.get(family)
        own = plugin.report_sections(section_inputs) if plugin is not None else None
        out += own if own is not None else [generic_section(family, results,
                                                            plugin.higher_is_better if plugin is not None else None)]
    return out


def build_context(inputs: ReportInputs) -> dict[str, Any]:
    run = inputs.run
    results = run.results
    arithmetic = inputs.arithmetic if inputs.arithmetic is not None else []
    published = Published()
    diffs = golden_diffs(inputs, published)
    return {
        "version": __version__,
        "run_id": run.run_id,
        "manifest": run.manifest or {},
        "readings": readings_by_benchmark(run.manifest or {}),
        "sensitivity": sensitivity_context(run.root),
        "results": [{"model": r.model, "benchmark": r.benchmark, "condition": r.condition, "path": run.relative(r.path),
                     "metrics": metric_rows(r), "counts": r.data.get("counts") or {}} for r in results],
        "sections": family_sections(inputs, published),
        "labels": judge_labels(results),
        "caveats": model_caveats(results),
        "reference_agents": sorted({r.model for r in results if is_reference_agent(r.model, run)}),
        "incomplete": run_incomplete(results),
        "damaged": list(inputs.damaged),
        "browser": browser.browser_data(run, inputs.families),
        "diffs": diffs,
        "arithmetic": arithmetic,
        "arithmetic_summary": arithmetic_summary(arithmetic),
    }


def sensitivity_context(root: Path, max_rows: int = 300) -> dict[str, Any] | None:
    """sensitivity.json as the report shows it: one line per switch, then the moved metrics."""
    from duplexeval.reports import sensitivity

    data = sensitivity.load(root)
    if data is None:
        return None
    rows = sensitivity.moved(data["rows"])
    return {"summary": sensitivity.switch_summary(data["rows"]), "rows": rows[:max_rows],
            "left_out": max(0, len(rows) - max_rows), "not_rescorable": data.get("not_rescorable") or []}


# ------------------------------------------------------------------ output

def _fragments(context: dict[str, Any], section: ReportSection, env: jinja2.Environment,
               suffix: str, wrap: Callable[[str], Any]) -> dict[str, Any]:
    """Each slot of the section rendered with its own templates (the shared ones as fallback)."""
    env.filters.update(section.filters.get(suffix, {}))
    env.loader = jinja2.ChoiceLoader([jinja2.FileSystemLoader(section.template_dir), jinja2.FileSystemLoader(TEMPLATES)])
    shared = {k: v for k, v in context.items() if k != "sections"}
    out: collections.defaultdict[str, Any] = collections.defaultdict(lambda: wrap(""))
    for slot, name in section.templates.items():
        if slot.endswith(suffix):
            out[slot] = wrap(env.get_template(name).render(**shared, **section.data, section=section))
    return out


def render_html(context: dict[str, Any]) -> str:
    script = browser.SCRIPT
    env = html_env()
    sections = [{"section": s, "html": _fragments(context, s, html_env(), ".html", Markup)}
                for s in context["sections"]]
    return env.get_template("report.html.j2").render(
        **{**context, "sections": sections}, browser_json=browser.json_for_script(context["browser"]), browser_script=Markup(script),
        script_hash=browser.script_hash(script))


def render_latex(context: dict[str, Any]) -> str:
    sections = [{"section": s, "latex": _fragments(context, s, latex_env(), ".tex", LatexSafe)}
                for s in context["sections"]]
    return latex_env().get_template("tables.tex.j2").render(**{**context, "sections": sections})


def write_report(run_dir: str | Path, *, families: Families, formats: Iterable[str] = FORMATS, golden_paths: Iterable[str | Path] = (),
                 with_arithmetic: bool = True, item: str | None = None, out_dir: str | Path | None = None,
                 aliases: dict[str, str] | None = None,
                 damaged: Iterable[str] = ()) -> dict[str, Path]:
    """Write report.html / report.tex (atomically) and return {format: path}. `families` (family
    name -> plug-in, e.g. `duplexeval.benchmarks.plugins()`) present their own sections and
    paper arithmetic; a family not in it gets the generic table."""
    formats = list(formats)
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise ValueError(f"unknown report format(s) {unknown}; choose from {', '.join(FORMATS)}")
    run = load_run(run_dir)
    inputs = ReportInputs(run=run, families=families, goldens=[load_golden(p) for p in golden_paths],
                          arithmetic=paper_arithmetic(families) if with_arithmetic else None, item=item,
                          aliases=aliases or {}, damaged=list(damaged))
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
