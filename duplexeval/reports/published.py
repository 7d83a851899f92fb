"""Published (or expected) cells by run locator, from the golden diffs: the golden row beside ours.

Shared by every family's section: a family asks for the cell of (model, benchmark, metric,
rounds, field) and gets the golden value with its delta and tolerance verdict, or None.
"""

from __future__ import annotations

from typing import Any

from duplexeval.reports.compare import DiffRow


class Published:
    """Golden cells keyed by their run locator; the first cell for a locator wins."""

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
