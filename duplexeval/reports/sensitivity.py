"""Reading a run's sensitivity.json (written by duplexeval/runs/sensitivity.py): what the
report's "Sensitivity" section shows and `duplexeval sensitivity` prints.

The reader lives in reports/ so the page reads the file without importing the code that
re-scores a run (runs/ sits above reports/ in the import layers).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SCHEMA = "duplexeval.sensitivity/1"


def load(run_dir: Path) -> dict[str, Any] | None:
    """sensitivity.json of a run, when `duplexeval sensitivity` has written one."""
    path = Path(run_dir) / "sensitivity.json"
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) and data.get("schema") == SCHEMA else None


def moved(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows whose value the alternative changes (what a reader looks at first)."""
    return [r for r in rows if r.get("error") or r["value"] != r["alt_value"] or r["numerator"] != r["alt_numerator"]
            or r["denominator"] != r["alt_denominator"]]


def switch_summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One line per (benchmark, reading, alternative): how many metrics it moved, the largest move,
    and per model the units whose outcome it moved (from -> to, counts), which also shows a move
    into an outcome that has no metric of its own."""
    out: dict[tuple, dict[str, Any]] = {}
    for r in rows:
        key = (r["benchmark"], r["reading"], str(r["run_value"]), str(r["alternative"]))
        s = out.setdefault(key, {"benchmark": r["benchmark"], "reading": r["reading"], "run_value": r["run_value"],
                                 "alternative": r["alternative"], "models": set(), "metrics": 0, "moved": 0,
                                 "largest": None, "errors": 0, "moves": {}})
        s["models"].add(r["model"])
        if r.get("moves"):  # the same list on every row of one model's switch: its units' from -> to
            s["moves"].setdefault(r["model"], r["moves"])
        if r.get("error"):
            s["errors"] += 1
            continue
        s["metrics"] += 1
        if moved([r]):
            s["moved"] += 1
            d = r.get("delta")
            if d is not None and (s["largest"] is None or abs(d) > abs(s["largest"])):
                s["largest"] = d
    return [{**v, "models": sorted(v["models"])} for _, v in sorted(out.items())]
