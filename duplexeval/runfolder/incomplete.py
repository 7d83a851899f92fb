"""How many units a reported number lost to errored or unplayed items: the "incomplete" mark.

Scoring counts an errored item's planned units against a score, never for it (docs/
reliability.md), so a model that never started reads 0.0, like a bad model. Every cell
whose denominator lost units carries the count, in HTML, LaTeX and export (issue 25).
"""

from __future__ import annotations

from typing import Any


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def lost_units(data: dict[str, Any], name: str, metric: dict[str, Any] | None,
               table: dict[str, Any] | None = None) -> int:
    """Units of metric `name` lost to item errors; `table` is the metrics dict it sits in.

    The metric's own `outcomes.error`, else its table's `error` count (MTR rounds: errored
    rounds leave a mean's denominator), else results.json's `incomplete.error_units`, else,
    for a result marked incomplete, every item not ok (a metric that cannot say which units
    it lost still lost them).
    """
    if not isinstance(metric, dict) or name == "error":
        return 0
    outcomes = metric.get("outcomes")
    if isinstance(outcomes, dict) and "error" in outcomes:
        return _count(outcomes["error"])
    err = (table or {}).get("error")
    if isinstance(err, dict) and "numerator" in err:
        return _count(err.get("numerator"))
    incomplete = data.get("incomplete") if isinstance(data.get("incomplete"), dict) else {}
    units = incomplete.get("error_units") if isinstance(incomplete.get("error_units"), dict) else {}
    if name in units:
        return _count(units[name])
    if data.get("complete") is False:
        return items_not_ok(data)
    return 0


def items_not_ok(data: dict[str, Any]) -> int:
    items = data.get("items") if isinstance(data.get("items"), dict) else {}
    return sum(_count(v) for k, v in items.items() if k not in ("ok", "total"))


def marked(data: dict[str, Any], name: str, metric: dict[str, Any] | None,
           table: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """A copy of `metric` with `lost` (its lost units) for the templates; None stays None."""
    if not isinstance(metric, dict):
        return None
    return {**metric, "lost": lost_units(data, name, metric, table)}


def run_incomplete(results: list[Any]) -> dict[str, Any]:
    """The run-wide banner: items not ok per model/benchmark (empty when every item finished ok)."""
    jobs = {f"{r.model}/{r.benchmark}": items_not_ok(r.data) for r in results}
    jobs = {k: v for k, v in jobs.items() if v}
    return {"count": sum(jobs.values()), "jobs": jobs}
