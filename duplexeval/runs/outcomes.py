"""How many items of each job did not finish ok, by error code: what `run`, `reproduce` and
`score` print before they exit, so a broken shim never passes for a bad model.

A run that wrote everything but lost items exits `ITEMS_ERRORED` (4): a model author's CI
fails on a model that never started, and a paper reader sees which job lost what.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Iterable

from duplexeval.runner.integrity import item_status

ITEMS_ERRORED = 4  # docs/reliability.md, "Exit codes"
UNFINISHED = "UNFINISHED"  # planned, counted in results.json, but no status.json (never played or cut short)


def error_codes(bench_dir: Path, results: dict[str, Any] | None = None) -> Counter:
    """Error code -> items of bench_dir whose status is not ok (DAMAGED included).

    Items results.json counts as not ok but that have no status.json are `UNFINISHED`.
    """
    codes: Counter = Counter()
    items = Path(bench_dir) / "items"
    for d in sorted(p for p in items.iterdir() if p.is_dir()) if items.is_dir() else []:
        st = item_status(d)
        if st is not None and st.get("status") != "ok":
            codes[str(st.get("error_code") or st.get("status") or "ERROR")] += 1
    counted = (results or {}).get("items") or {}
    not_ok = sum(v for k, v in counted.items() if k not in ("ok", "total") and isinstance(v, int))
    if not_ok > sum(codes.values()):
        codes[UNFINISHED] += not_ok - sum(codes.values())
    return codes


def damaged_items(bench_dir: Path) -> list[str]:
    """The reason of every DAMAGED item under bench_dir (each names its file)."""
    items = Path(bench_dir) / "items"
    out = []
    for d in sorted(p for p in items.iterdir() if p.is_dir()) if items.is_dir() else []:
        st = item_status(d)
        if st is not None and st.get("error_code") == "DAMAGED":
            out.append(str(st.get("reason") or d))
    return out


def error_line(key: str, codes: Counter) -> str:
    """'oracle/<benchmark>: 3 item(s) errored: CLOSED 2, TIMEOUT 1'."""
    parts = ", ".join(f"{code} {n}" for code, n in sorted(codes.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"{key}: {sum(codes.values())} item(s) errored: {parts}"


def job_errors(outcomes: Iterable[Any]) -> list[tuple[str, Counter]]:
    """(job key, error codes) of every scored job with at least one item not ok."""
    out = []
    for o in outcomes:
        if o.results is None:
            continue
        codes = error_codes(o.bench_dir, o.results)
        if codes:
            out.append((o.job.key, codes))
    return out
