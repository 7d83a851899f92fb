"""The paper arithmetic of every family (`Benchmark.paper_arithmetic`), gathered for
`paper-check`, `reproduce` and the report. The caller hands in the families (name -> plug-in,
from the plug-in registry), so reports/ never looks one up. The statuses, the row and its builders live in
duplexeval/reports/arithmetic_rows.py (re-exported here: this module's API is unchanged).
"""

from __future__ import annotations

from pathlib import Path

from duplexeval.reports.arithmetic_rows import (  # noqa: F401  (re-exported API)
    CONSISTENT,
    DERIVED,
    DOES_NOT_RECONCILE,
    FAILING_STATUSES,
    INCONSISTENT,
    NOT_REPRODUCIBLE,
    OUT_OF_TOLERANCE,
    REPRODUCED,
    ArithmeticRow,
    against,
    derived,
    inequality,
    known_discrepancy,
    mcnemar_exact_log10_p,
    mcnemar_exact_p,
    not_reproducible,
)
from duplexeval.reports.golden import Golden, format_number, golden_dir, golden_files, load_golden
from duplexeval.reports.sections import Families


def paper_arithmetic(families: Families, *goldens: Golden) -> list[ArithmeticRow]:
    """Every family's arithmetic rows, families in name order. Golden files default to golden/
    (each by its paper id); a given file replaces the default of its paper."""
    papers: dict[str, Golden] = {}
    for path in golden_files():
        g = load_golden(path)
        papers.setdefault(str(g.paper.get("id")), g)
    for g in goldens:
        if g is not None:
            papers[str(g.paper.get("id"))] = g
    rows: list[ArithmeticRow] = []
    for _, plugin in sorted(families.items()):
        rows += plugin.paper_arithmetic(papers)
    return rows


def format_rows(rows: list[ArithmeticRow]) -> str:
    """A plain-text table for the terminal (`duplexeval paper-check`)."""
    header = ("cell", "expected", "got", "delta", "status", "formula / note")
    body = [(r.cell_id, format_number(r.expected), _fmt(r.got), _fmt(r.delta), r.status,
             r.formula + (f"  [{r.note}]" if r.note and r.status != REPRODUCED else "")) for r in rows]
    widths = [max(len(str(x[i])) for x in [header, *body]) for i in range(5)]
    lines = ["  ".join(str(x[i]).ljust(widths[i]) for i in range(5)) + "  " + x[5] for x in [header, *body]]
    return "\n".join(lines)


def _fmt(x: float | None) -> str:
    if x is None:
        return "–"
    if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e5):
        return f"{x:.4g}"
    return f"{x:.6g}"


def summary(rows: list[ArithmeticRow]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in rows:
        out[r.status] = out.get(r.status, 0) + 1
    return dict(sorted(out.items()))


def default_golden_paths(families: Families) -> tuple[Path, ...]:
    """The golden files of the papers whose arithmetic `paper-check` re-derives (each family's
    `paper_golden_files`), in family order."""
    return tuple(golden_dir() / name for _, plugin in sorted(families.items())
                 for name in plugin.paper_golden_files)
