"""A run's results as one tidy table, for notebooks and `duplexeval export`.

One row per model x benchmark x metric x round: `round` is "all" for the metrics of the
whole benchmark (results.json `metrics`), else the key of results.json `rounds` ("1",
"1-10"). Every rate keeps its numerator and denominator; nothing is re-scored.

    >>> from duplexeval.results import load
    >>> df = load("runs/embedded-...")           # pandas DataFrame
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from duplexeval.runfolder.incomplete import lost_units
from duplexeval.runfolder.run_dir import load_run

COLUMNS = ["model", "benchmark", "condition", "metric", "round", "value", "numerator", "denominator", "reported",
           "unit", "note", "lost", "path"]


def _row(result, run, metric: str, rnd: str, m: dict[str, Any], table: dict[str, Any]) -> dict[str, Any]:
    # `lost`: units of the denominator from items that errored or never played (issue 25);
    # > 0 means the number is incomplete, whatever it reads.
    return {"model": result.model, "benchmark": result.benchmark, "condition": result.condition, "metric": metric,
            "round": rnd, "value": m.get("value"), "numerator": m.get("numerator"), "denominator": m.get("denominator"),
            "reported": m.get("reported", True), "unit": m.get("unit"), "note": m.get("note"),
            "lost": lost_units(result.data, metric, m, table), "path": run.relative(result.path)}


def rows(run_dir: str | Path) -> list[dict[str, Any]]:
    """The tidy rows (plain dicts), in a stable order."""
    run = load_run(run_dir)
    out = []
    for r in run.results:
        for name, m in sorted(r.metrics().items()):
            if isinstance(m, dict) and ("value" in m or "denominator" in m):
                out.append(_row(r, run, name, "all", m, r.metrics()))
        rounds = r.rounds()
        keys = sorted(rounds, key=lambda k: (0, int(k), "") if k.isdigit() else (1, 0, k))
        for key in keys:
            for name, m in sorted((rounds[key] or {}).items()):
                if isinstance(m, dict) and ("value" in m or "denominator" in m):
                    out.append(_row(r, run, name, key, m, rounds[key]))
    return out


def load(run_dir: str | Path):
    """The tidy table as a pandas DataFrame (columns: duplexeval.results.COLUMNS)."""
    import pandas as pd

    df = pd.DataFrame(rows(run_dir), columns=COLUMNS)
    for col in COUNT_COLUMNS:
        df[col] = _as_counts(df[col])
    return df


COUNT_COLUMNS = ("numerator", "denominator", "lost")


def _as_counts(column):
    """Counts stay integers (CSV `3`, not `3.0`, issue 28): pandas' nullable Int64 when every
    value is whole; else (a sum of scores, e.g. quality's 9.51) each whole value as an int."""
    values = [v for v in column if v is not None and v == v]
    if all(isinstance(v, (int, float)) and float(v).is_integer() for v in values):
        return column.astype("Int64")
    import pandas as pd

    whole = [int(v) if isinstance(v, float) and v.is_integer() else v for v in column]
    return pd.Series(whole, index=column.index, dtype=object, name=column.name)


def to_markdown(table: list[dict[str, Any]]) -> str:
    def cell(v: Any) -> str:
        if v is None:
            return ""
        if isinstance(v, float):
            return f"{v:.4f}"
        return str(v).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join("---" for _ in COLUMNS) + "|"]
    lines += ["| " + " | ".join(cell(r.get(c)) for c in COLUMNS) + " |" for r in table]
    return "\n".join(lines) + "\n"
