"""Which metrics a report's summary tables show for a dimension: the spec's `report.headline`.

Picking by sorting metric names showed an `error` count as the headline of two
dimensions (issue 25), hiding the score and the refusal rate. The spec says which
metrics matter; the report follows it.
"""

from __future__ import annotations

from typing import Any

from duplexeval.runfolder.run_dir import ResultFile


def _spec_of(result: ResultFile) -> dict[str, Any] | None:
    """The benchmark spec the run used (its snapshot), else today's spec of the same id."""
    data = result.spec_snapshot()
    if data is not None and isinstance(data.get("report"), dict):
        return data
    try:
        from duplexeval.specs import default_registry

        return default_registry().get("benchmark", result.benchmark).data
    except Exception:  # a run of a benchmark this machine has no spec for still renders
        return None


def headline_metrics(result: ResultFile, available: dict[str, Any]) -> list[str]:
    """The spec's headline metrics present in `available` (a metrics table), in the spec's order.

    Without a headline in the spec (a plug-in's older spec): `success` when there is one,
    else every rate that is not a count of errors or silences, so nothing is hidden.
    """
    spec = _spec_of(result) or {}
    wanted = ((spec.get("report") or {}).get("headline")) or []
    present = [m for m in wanted if isinstance(available.get(m), dict)]
    if present:
        return present
    if isinstance(available.get("success"), dict):
        return ["success"]
    return [k for k, v in available.items() if isinstance(v, dict) and "denominator" in v
            and k not in ("error", "latency_s", "no_response", "unparseable")]
