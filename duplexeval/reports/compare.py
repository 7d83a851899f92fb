"""Diff a run against a golden file: cell, expected, got, delta, within tolerance.

A golden cell with a `run` locator is looked up in the run's results.json files. Three
outcomes besides pass/fail matter to an auditor and are kept apart:
- `missing`: the run has no such model / benchmark / metric (a partial run). Listed,
  and a failure only with --strict, so `make reproduce` on a CPU machine can compare the
  cells it has without pretending to have the rest;
- `ambiguous`: several results.json match the locator (a locator that is too loose is a
  golden-file bug, so it always fails);
- cells without a locator (dataset counts, notes) are paper-only and not listed here:
  `paper-check` covers them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from duplexeval.reports.golden import Golden, GoldenCell, format_number
from duplexeval.reports.run_dir import RunDir, find_results, read_field

OK = "ok"
OUT = "out of tolerance"
MISSING = "missing"
AMBIGUOUS = "ambiguous"


@dataclass(frozen=True)
class DiffRow:
    cell_id: str
    golden: str
    table: str
    row: str
    column: str
    expected: str
    got: float | None
    delta: float | None
    within_tolerance: bool | None
    status: str
    tolerance: str
    source: str
    note: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def _apply_aliases(locator: dict[str, str], aliases: dict[str, str]) -> dict[str, str]:
    out = dict(locator)
    for key in ("model", "benchmark"):
        if key in out and out[key] in aliases:
            out[key] = aliases[out[key]]
    return out


def _tolerance_text(cell: GoldenCell, override: float | None) -> str:
    if cell.bounds is not None:
        return "bounds" if not override else f"bounds ± {override:g}"
    return f"± {cell.tolerance if override is None else override:g}"


def compare_cell(run: RunDir, cell: GoldenCell, *, tolerance: float | None = None,
                 aliases: dict[str, str] | None = None, golden_name: str = "") -> DiffRow:
    """One golden cell against the run (the cell must have a `run` locator)."""
    assert cell.run is not None
    locator = _apply_aliases(cell.run, aliases or {})
    base = dict(cell_id=cell.id, golden=golden_name, table=cell.table, row=cell.row, column=cell.column,
                expected=cell.expected_text(), tolerance=_tolerance_text(cell, tolerance))
    matches = find_results(run, locator)
    where = ", ".join(f"{k}={v}" for k, v in locator.items())
    if not matches:
        return DiffRow(**base, got=None, delta=None, within_tolerance=None, status=MISSING, source="",
                       note=f"no results.json for {where}")
    if len(matches) > 1:
        paths = ", ".join(run.relative(m.path) for m in matches)
        return DiffRow(**base, got=None, delta=None, within_tolerance=False, status=AMBIGUOUS, source=paths,
                       note=f"{len(matches)} results.json match {where}; add benchmark or condition to the locator")
    result = matches[0]
    got, note = read_field(result, locator)
    source = run.relative(result.path)
    if got is None:
        return DiffRow(**base, got=None, delta=None, within_tolerance=None, status=MISSING, source=source, note=note)
    if cell.unit == "percent" and locator.get("field", "value") == "value":
        got *= 100  # results.json holds fractions; the paper prints percent
    delta, within = cell.check(got, tolerance)
    return DiffRow(**base, got=got, delta=delta, within_tolerance=within, status=OK if within else OUT,
                   source=source, note=note)


def compare_run(run: RunDir, golden: Golden, *, tolerance: float | None = None,
                aliases: dict[str, str] | None = None) -> list[DiffRow]:
    """Every locatable golden cell against the run, in golden-file order."""
    name = golden.path.name
    return [compare_cell(run, c, tolerance=tolerance, aliases=aliases, golden_name=name)
            for c in golden.cells if c.run is not None and c.comparable]


def failed(rows: list[DiffRow], *, strict: bool = False) -> bool:
    """Out of tolerance or ambiguous always fails; missing fails only with strict."""
    bad = {OUT, AMBIGUOUS} | ({MISSING} if strict else set())
    return any(r.status in bad for r in rows)


def counts(rows: list[DiffRow]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in rows:
        out[r.status] = out.get(r.status, 0) + 1
    return dict(sorted(out.items()))


def format_diff(rows: list[DiffRow]) -> str:
    """Plain-text diff table for the terminal."""
    header = ("cell", "expected", "got", "delta", "tolerance", "within", "status")
    body = [(r.cell_id, r.expected, _num(r.got), _num(r.delta), r.tolerance,
             "-" if r.within_tolerance is None else ("yes" if r.within_tolerance else "NO"), r.status) for r in rows]
    widths = [max(len(str(x[i])) for x in [header, *body]) for i in range(len(header))]
    lines = ["  ".join(str(x[i]).ljust(widths[i]) for i in range(len(header))).rstrip() for x in [header, *body]]
    for r in rows:
        if r.note and r.status != OK:
            lines.append(f"  {r.cell_id}: {r.note}")
    return "\n".join(lines)


def _num(x: float | None) -> str:
    if x is None:
        return "–"
    return format_number(round(x, 6))
