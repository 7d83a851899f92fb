"""Diff a run against a golden file: cell, expected, got, delta, within tolerance.

A golden cell with a `run` locator is looked up in the run's results.json files. Three
outcomes besides pass/fail matter to an auditor and are kept apart:
- `missing`: the run has no such model / benchmark / metric (a partial run, data that
  was never there). A failure (issue 39: a run that made none of its cells must not pass
  as a reproduction); `compare --allow-missing` lists them without failing, for a run
  narrowed on purpose (`--models`, `--limit`);
- `ambiguous`: several results.json match the locator (a locator that is too loose is a
  golden-file bug, so it always fails);
- cells without a locator (dataset counts, notes) are paper-only and not listed here:
  `paper-check` covers them.

Two more failures keep a partial run from passing as a reproduction (issue 13):
- `incomplete`: the results.json says `complete: false` (items that errored, were damaged
  or never finished; their units are `error`s in every denominator). A number from such
  a run is not called a match unless asked (`allow_incomplete`, `compare --allow-incomplete`);
- `denominator mismatch`: a golden cell that states its denominator (a count of turns,
  of windows, of a model's eligible events, a data set's size) is checked
  against the run's denominator as well as its value: a matching rate over fewer units
  is not the paper's number.

A locator with `statistics` (Table 16's McNemar pair counts and p values, §4.5's
Spearman rho) reads the run's statistics.json (duplexeval.runs.statistics) instead: the
McNemar entry of the model (its `metric`, default presence; `benchmark`, when given, the
first condition), or the Spearman block. A McNemar cell that states its denominator is
checked against the entry's `pairs`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from duplexeval.reports.golden import Golden, GoldenCell, format_number
from duplexeval.runfolder.run_dir import RunDir, find_results, read_field

OK = "ok"
OUT = "out of tolerance"
MISSING = "missing"
AMBIGUOUS = "ambiguous"
INCOMPLETE = "incomplete"
DENOMINATOR = "denominator mismatch"


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


def _incomplete_note(result) -> str | None:
    if result.data.get("complete", True) is not False:
        return None
    items = (result.data.get("incomplete") or {}).get("items") or {}
    what = ", ".join(f"{v} {k}" for k, v in sorted(items.items())) or "units in error"
    return f"incomplete result ({what}): errored units count in every denominator"


def _denominator_check(result, cell: GoldenCell, locator: dict[str, str]) -> tuple[bool, str]:
    """(ok, note): the run's denominator against the cell's, for a cell on a metric's rate."""
    if cell.denominator is None or locator.get("field", "value") != "value" or "metric" not in locator:
        return True, ""
    den, _ = read_field(result, {**locator, "field": "denominator"})
    if den is None:
        return True, ""
    if int(den) != int(cell.denominator):
        return False, f"denominator {int(den)} in the run, {cell.denominator} in the paper"
    return True, ""


def _statistics_value(run: RunDir, locator: dict[str, str]) -> tuple[str, float | None, float | None, str, str]:
    """(status, value, pairs, source, note) of a `statistics` locator in <run>/statistics.json."""
    path = run.root / "statistics.json"
    if not path.is_file():
        return MISSING, None, None, "", "no statistics.json in the run"
    stats = json.loads(path.read_text(encoding="utf-8"))
    source = run.relative(path)
    fld = locator["field"]
    if locator["statistics"] in ("spearman", "conditions"):
        kind = locator["statistics"]
        block = stats.get(kind) or {}
        value = block.get(fld)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return MISSING, None, None, source, block.get("note") or f"no {kind}.{fld}"
        return OK, float(value), None, source, ""
    entries = [e for e in stats.get("mcnemar") or []
               if e.get("model") == locator.get("model") and e.get("metric") == locator.get("metric", "presence")
               and ("benchmark" not in locator or e.get("first") == locator["benchmark"])]
    where = ", ".join(f"{k}={v}" for k, v in locator.items())
    if not entries:
        return MISSING, None, None, source, f"no McNemar entry for {where}"
    if len(entries) > 1:
        return AMBIGUOUS, None, None, source, f"{len(entries)} McNemar entries match {where}; add benchmark"
    value = entries[0].get(fld)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return MISSING, None, None, source, f"no mcnemar.{fld}"
    return OK, float(value), entries[0].get("pairs"), source, ""


def _compare_statistics(run: RunDir, cell: GoldenCell, locator: dict[str, str], tolerance: float | None,
                        base: dict) -> DiffRow:
    found, got, pairs, source, note = _statistics_value(run, locator)
    if found != OK:
        within = False if found == AMBIGUOUS else None
        return DiffRow(**base, got=None, delta=None, within_tolerance=within, status=found, source=source, note=note)
    assert got is not None   # found == OK: _statistics_value gives the value
    delta, within = cell.check(got, tolerance)
    status = OK if within else OUT
    if cell.denominator is not None and pairs is not None and int(pairs) != int(cell.denominator):
        status = DENOMINATOR
        note = f"{int(pairs)} pairs in the run, {cell.denominator} in the paper"
    return DiffRow(**base, got=got, delta=delta, within_tolerance=within, status=status, source=source, note=note)


def _judge_ids(judges: object) -> set[str]:
    """The judge ids a results.json names (`judges: {role: id}` or `{role: {id: ...}}`)."""
    if not isinstance(judges, dict):
        return set()
    return {str(v.get("id") if isinstance(v, dict) else v) for v in judges.values() if v}


def compare_cell(run: RunDir, cell: GoldenCell, *, tolerance: float | None = None,
                 aliases: dict[str, str] | None = None, golden_name: str = "",
                 allow_incomplete: bool = False) -> DiffRow:
    """One golden cell against the run (the cell must have a `run` locator)."""
    assert cell.run is not None
    locator = _apply_aliases(cell.run, aliases or {})
    base = dict(cell_id=cell.id, golden=golden_name, table=cell.table, row=cell.row, column=cell.column,
                expected=cell.expected_text(), tolerance=_tolerance_text(cell, tolerance))
    if "statistics" in locator:
        return _compare_statistics(run, cell, locator, tolerance, base)
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
    judges = _judge_ids(result.data.get("judges"))
    if "judge" in locator and locator["judge"] not in judges:
        return DiffRow(**base, got=None, delta=None, within_tolerance=None, status=MISSING, source=run.relative(result.path),
                       note=f"judged by {', '.join(sorted(judges)) or 'no judge named'}, the cell by {locator['judge']}: "
                            "not the same measurement, not compared")
    got, note = read_field(result, locator)
    source = run.relative(result.path)
    if got is None:
        return DiffRow(**base, got=None, delta=None, within_tolerance=None, status=MISSING, source=source, note=note)
    if cell.unit == "percent" and locator.get("field", "value") == "value":
        got *= 100  # results.json holds fractions; the paper prints percent
    delta, within = cell.check(got, tolerance)
    status = OK if within else OUT
    den_ok, den_note = _denominator_check(result, cell, locator)
    if not den_ok:
        status, note = DENOMINATOR, "; ".join(x for x in (den_note, note) if x)
    incomplete = _incomplete_note(result)
    if incomplete:
        note = "; ".join(x for x in (incomplete, note) if x)
        if status == OK and not allow_incomplete:
            status = INCOMPLETE
    return DiffRow(**base, got=got, delta=delta, within_tolerance=within, status=status,
                   source=source, note=note)


def compare_run(run: RunDir, golden: Golden, *, tolerance: float | None = None,
                aliases: dict[str, str] | None = None, allow_incomplete: bool = False) -> list[DiffRow]:
    """Every locatable golden cell against the run, in golden-file order."""
    name = golden.path.name
    return [compare_cell(run, c, tolerance=tolerance, aliases=aliases, golden_name=name,
                         allow_incomplete=allow_incomplete)
            for c in golden.cells if c.run is not None and c.comparable]


def failed(rows: list[DiffRow], *, allow_missing: bool = False) -> bool:
    """Out of tolerance, ambiguous, a wrong denominator, an incomplete result or a missing cell
    fails (missing not with allow_missing); so does a diff with no row at all (nothing compared
    is no reproduction)."""
    bad = {OUT, AMBIGUOUS, DENOMINATOR, INCOMPLETE} | (set() if allow_missing else {MISSING})
    return not rows or any(r.status in bad for r in rows)


def summary(rows: list[DiffRow]) -> str:
    """The one summary line of a diff: every status with its count, e.g. '140 ok, 2 missing'."""
    return ", ".join(f"{v} {k}" for k, v in counts(rows).items()) or "no cell compared"


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
