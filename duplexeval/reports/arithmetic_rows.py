"""Re-derive every published number that can be re-derived without running a model.

The papers print rates next to (some of) their counts; recomputing one from the other
catches a typo in golden/, a wrong denominator in our reading of a metric, or an
inconsistency in the paper itself. Each check is one row: the golden cell it checks, the
published value, what the arithmetic gives, and a status:

- ``reproduced``: within the cell's tolerance (half a unit of the printed digit);
- ``out of tolerance``: it should reproduce and does not: a failure;
- ``consistent`` / ``inconsistent``: an inequality the text implies (e.g. failing
  windows <= judged windows); ``inconsistent`` is a failure;
- ``does not reconcile``: a known inconsistency of the papers themselves, documented
  here with its reason. Shown in every report, never a failure, never hidden;
- ``derived``: a number the text implies but does not print (shown for the reader);
- ``not reproducible``: needs data the text does not give (said so, not skipped).

Inputs are the golden files themselves, so editing a golden count re-runs the arithmetic.
This module holds the row and its builders; each family re-derives its own paper's
numbers (`Benchmark.paper_arithmetic`, in the family's own package)
and reports/paper_arithmetic.py gathers them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from duplexeval.reports.golden import Golden
from duplexeval.stats import mcnemar_exact

REPRODUCED = "reproduced"
OUT_OF_TOLERANCE = "out of tolerance"
CONSISTENT = "consistent"
INCONSISTENT = "inconsistent"
DOES_NOT_RECONCILE = "does not reconcile"
DERIVED = "derived"
NOT_REPRODUCIBLE = "not reproducible"
FAILING_STATUSES = frozenset({OUT_OF_TOLERANCE, INCONSISTENT})


@dataclass(frozen=True)
class ArithmeticRow:
    cell_id: str
    expected: float | None
    got: float | None
    delta: float | None
    within_tolerance: bool | None
    status: str
    formula: str
    note: str = ""

    @property
    def failed(self) -> bool:
        return self.status in FAILING_STATUSES

    def as_dict(self) -> dict:
        return asdict(self)


# ---------------------------------------------------------------- statistics helpers

def mcnemar_exact_p(b: int, c: int) -> float:
    """Exact two-sided McNemar p: the project's one implementation (duplexeval.stats)."""
    return mcnemar_exact(b, c).p_value


def mcnemar_exact_log10_p(b: int, c: int) -> float:
    """log10 of the same p, in log space: Gemini's p < 1e-371 underflows a double."""
    n, k = b + c, min(b, c)
    terms = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) - n * math.log(2) for i in range(k + 1)]
    top = max(terms)
    log_tail = top + math.log(sum(math.exp(t - top) for t in terms))
    return min(0.0, (log_tail + math.log(2)) / math.log(10))


# ---------------------------------------------------------------- row builders

def against(g: Golden, cell_id: str, got: float, formula: str, note: str = "") -> ArithmeticRow:
    """Compare arithmetic with a published cell (value +- tolerance, or bounds)."""
    cell = g[cell_id]
    delta, within = cell.check(got)
    expected = cell.value if cell.value is not None else None
    if cell.bounds is not None:
        note = f"bounds {cell.expected_text()}" + (f"; {note}" if note else "")
    return ArithmeticRow(cell_id, expected, got, delta, within, REPRODUCED if within else OUT_OF_TOLERANCE, formula, note)


def known_discrepancy(g: Golden, cell_id: str, got: float, formula: str, reason: str) -> ArithmeticRow:
    """A relation the papers break: reported with its reason whether or not it holds now."""
    row = against(g, cell_id, got, formula)
    if row.within_tolerance:
        return ArithmeticRow(**{**row.as_dict(), "note": f"reconciles now (golden edited?); documented as: {reason}"})
    return ArithmeticRow(**{**row.as_dict(), "status": DOES_NOT_RECONCILE, "note": reason})


def inequality(cell_id: str, holds: bool, formula: str, note: str = "", got: float | None = None) -> ArithmeticRow:
    return ArithmeticRow(cell_id, None, got, None, holds, CONSISTENT if holds else INCONSISTENT, formula, note)


def derived(cell_id: str, got: float, formula: str, note: str) -> ArithmeticRow:
    return ArithmeticRow(cell_id, None, got, None, None, DERIVED, formula, note)


def not_reproducible(g: Golden, cell_id: str, reason: str) -> ArithmeticRow:
    return ArithmeticRow(cell_id, g[cell_id].value, None, None, None, NOT_REPRODUCIBLE, "–", reason)


