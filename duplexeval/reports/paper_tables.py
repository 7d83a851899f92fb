"""A paper's table as published, with the rows of this run beside it (issue 28, item 1).

A family names its tables (`PaperTable`: the golden file's `table` names and one `Column`
per printed column, each a run locator without the model); this module does the rest for
every family alike:

- **published rows**: the paper's golden cells of those tables, one row per published
  model (the cell's `row`), value with numerator/denominator where the paper gives them;
- **our rows**: every model of the run, read through the same locator the golden cell
  uses (results.json or statistics.json), each cell linked to the records behind it;
- **delta**: ours minus published, only where the run's model *is* the published model
  (the locator's model id). A reference agent (`reference_agent: true` in its model spec)
  is labelled and never compared with a paper model.

No total is formed: every cell is one published or one measured number.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from duplexeval.reports.compare import _statistics_value
from duplexeval.reports.golden import Golden, GoldenCell
from duplexeval.runfolder.run_dir import ResultFile, RunDir, read_field


@dataclass(frozen=True)
class Column:
    """One printed column: its header and the run locator of its cells (no model)."""

    label: str
    locator: dict[str, str]
    group: str = ""           # the header above (e.g. "explicit"), '' for none
    decimals: int = 4
    percent: bool = False     # the paper prints this column in percent (our fraction x 100)


@dataclass(frozen=True)
class PaperTable:
    """A published table: where its cells are in the golden file, and its columns."""

    id: str                    # HTML id, e.g. "paper-<paper>-t3"
    title: str                 # e.g. "<paper> Table 3"
    paper: str                 # the golden file's paper id
    tables: tuple[str, ...]    # golden `table:` values that belong to it
    columns: tuple[Column, ...]
    note: str = ""
    compare: bool = True       # False: the run's row is never the paper's (e.g. a different judge), no delta


@dataclass
class PaperRow:
    label: str
    kind: str                                   # "published" | "ours" | "reference"
    model: str = ""
    cells: list[dict[str, Any] | None] = field(default_factory=list)


def _same_column(loc: dict[str, str], col: Column) -> bool:
    """A golden locator belongs to a column when everything but the model agrees (field defaults to value)."""
    a = {k: v for k, v in loc.items() if k not in ("model", "judge")}
    b = dict(col.locator)
    a.setdefault("field", "value")
    b.setdefault("field", "value")
    return a == b


def published_rows(table: PaperTable, golden: Golden) -> list[PaperRow]:
    """The paper's rows, in the golden file's order: one per published model."""
    rows: dict[str, PaperRow] = {}
    for cell in golden.cells:
        if cell.table not in table.tables or not cell.run or "model" not in cell.run:
            continue
        for i, col in enumerate(table.columns):
            if _same_column(cell.run, col):
                row = rows.setdefault(cell.run["model"], PaperRow(label=cell.row, kind="published", model=cell.run["model"],
                                                                   cells=[None] * len(table.columns)))
                # The first cell of a column wins, unless it is only a bound and a later one prints
                # the value (e.g. a paper's table printing "0.0123 or less" where its project page prints 0.0031).
                held = row.cells[i]
                if held is None or (held["value"] is None and cell.value is not None):
                    row.cells[i] = _published_cell(cell)
                if row.label != cell.row:  # the paper's rows are not models here (an ablation): name the model
                    row.label = cell.run["model"]
    return list(rows.values())


def _published_cell(cell: GoldenCell) -> dict[str, Any]:
    return {"value": cell.value, "numerator": cell.numerator, "denominator": cell.denominator,
            "decimals": cell.decimals, "unit": cell.unit, "id": cell.id, "text": cell.text or cell.note,
            "percent": cell.unit == "percent"}


def _our_cell(run: RunDir, results: list[ResultFile], model: str, col: Column, percent: bool) -> dict[str, Any] | None:
    loc = {**col.locator, "model": model}
    if "statistics" in loc:
        _, value, pairs, source, note = _statistics_value(run, loc)
        return None if value is None else {"value": value, "numerator": None, "denominator": pairs, "decimals": None,
                                           "text": None, "source": source, "note": note, "link": None}
    mine = [r for r in results if r.model == model and r.benchmark == loc.get("benchmark", r.benchmark)]
    if len(mine) != 1:
        return None
    rounds = mine[0].rounds()
    if "rounds" in loc and loc["rounds"] not in rounds and "-" in loc["rounds"]:
        # A shorter run (--limit) has its own 1-N mean: shown in the 1-10 column, and said.
        mean = next((k for k in sorted(rounds) if "-" in k), None)
        if mean is None:
            return None
        loc["rounds"] = mean
    value, note = read_field(mine[0], loc)
    if value is None:
        return None
    metric = (mine[0].rounds().get(loc["rounds"], {}) if "rounds" in loc else mine[0].metrics()).get(loc.get("metric", ""))
    metric = metric if isinstance(metric, dict) else {}
    if loc.get("rounds") and loc["rounds"] != col.locator.get("rounds"):
        note = "; ".join(x for x in (f"rounds {loc['rounds']} (this run's mean)", note) if x)
    out: dict[str, Any] = {"value": value, "note": note, "source": run.relative(mine[0].path), "decimals": None,
                           "text": None, "numerator": None, "denominator": None,
                           "link": {"model": model, "benchmark": mine[0].benchmark, "metric": loc.get("metric", "")}}
    if loc.get("field", "value") == "value":
        if percent:
            out["value"] = value * 100
        out["numerator"], out["denominator"] = metric.get("numerator"), metric.get("denominator")
    return out


def is_reference_agent(model: str, run: RunDir) -> bool:
    """The model spec's `reference_agent` (the run manifest's copy, else today's spec)."""
    for m in (run.manifest or {}).get("models") or []:
        if isinstance(m, dict) and m.get("id") == model and "reference_agent" in m:
            return bool(m["reference_agent"])
    try:
        from duplexeval.specs import default_registry

        return bool(default_registry().get("model", model).data.get("reference_agent"))
    except Exception:  # noqa: BLE001 - a model this machine has no spec for is not known to be a reference agent
        return False


def build(table: PaperTable, golden: Golden | None, run: RunDir, results: list[ResultFile]) -> dict[str, Any] | None:
    """The table as the templates draw it; None when neither the paper nor the run has a cell of it."""
    published = published_rows(table, golden) if golden is not None else []
    percent = [col.percent or any(bool((r.cells[i] or {}).get("percent")) for r in published)
               for i, col in enumerate(table.columns)]
    by_model = {r.model: r for r in published}
    ours: list[PaperRow] = []
    for model in sorted({r.model for r in results}):
        cells = [_our_cell(run, results, model, col, percent[i]) for i, col in enumerate(table.columns)]
        if not any(cells):
            continue
        reference = is_reference_agent(model, run)
        paper_row = None if reference or not table.compare else by_model.get(model)
        for i, c in enumerate(cells):
            p = paper_row.cells[i] if paper_row else None
            if c is not None and p is not None and p.get("value") is not None:
                c["delta"] = c["value"] - p["value"]
        ours.append(PaperRow(label=model + (" (reference agent)" if reference else ""),
                             kind="reference" if reference else "ours", model=model, cells=cells))
    if not published and not ours:
        return None
    groups: list[dict[str, Any]] = []
    for col in table.columns:
        if groups and groups[-1]["label"] == col.group:
            groups[-1]["span"] += 1
        else:
            groups.append({"label": col.group, "span": 1})
    return {"id": table.id, "title": table.title, "note": table.note, "columns": list(table.columns),
            "decimals": [c.decimals for c in table.columns], "groups": groups if any(g["label"] for g in groups) else [],
            "published": published, "ours": ours, "paper": table.paper}


def build_all(tables: tuple[PaperTable, ...], papers: dict[str, Golden], run: RunDir,
              results: list[ResultFile]) -> list[dict[str, Any]]:
    return [t for t in (build(tb, papers.get(tb.paper), run, results) for tb in tables) if t is not None]
