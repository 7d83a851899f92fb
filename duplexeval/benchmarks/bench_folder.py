"""One <model>/<benchmark> folder scored: the loop every benchmark family shares.

A family says which items it planned, how an ok item becomes records, how an item that is
not ok becomes error records (counted against the score, never for it), and how records
become metrics. This loop reads each item's verified status, counts the statuses (ok and
error always present, so "0 errors" is written, not implied), reports progress, stamps the
results envelope (specs/schema/results.schema.json) and writes records.jsonl and
results.json, with the hash of every status.json it read. Written once, so the families'
results cannot drift apart (issue 27: one wrote ok/error counts always, the other only
those it saw).
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable

from duplexeval.io import atomic_write_json, atomic_write_jsonl
from duplexeval.runfolder.records import record_problems
from duplexeval.runner.integrity import input_hashes, item_status
from duplexeval.scoring.model_caveat import with_caveat

RESULTS_SCHEMA_ID = "duplexeval.results/1"

Records = list[dict[str, Any]]


class ResultsEnvelopeError(ValueError):
    """A results.json or records.jsonl that does not follow its schema (specs/schema/results.schema.json,
    records.schema.json): a bug in its family."""


def item_statuses(bench_dir: Path, planned: Iterable[str], *, unplanned_folders: bool = True) -> list[tuple[Path, str]]:
    """Every item in name order with its verified status: ok | error | unfinished | unknown | missing.

    The items are those the job's plan lists (and, with `unplanned_folders`, every folder
    under items/): a planned item without a folder is `missing` (issue 24: deleting item
    folders must not shrink a denominator)."""
    items = bench_dir / "items"
    folders = {p.name: p for p in items.iterdir() if p.is_dir()} if items.is_dir() else {}
    names = set(planned) | (set(folders) if unplanned_folders else set())
    out = []
    for name in sorted(names):
        d = folders.get(name, items / name)
        if name not in folders:
            out.append((d, "missing"))
            continue
        st = item_status(d)  # verified against its files: a damaged item is an error, never silence
        if st is None:
            out.append((d, "unfinished"))
            continue
        status = st.get("status")
        out.append((d, status if status in ("ok", "error") else "unknown"))
    return out


def status_counts(statuses: list[tuple[Path, str]]) -> dict[str, int]:
    """Items by status, ok and error always present, `total` their sum with every other status."""
    counts = Counter(status for _, status in statuses)
    counts.update({"ok": 0, "error": 0})
    out = {k: counts[k] for k in sorted(counts)}
    out["total"] = sum(out.values())
    return out


def envelope(results: dict[str, Any], bench_dir: Path) -> dict[str, Any]:
    """`results` with the envelope's identity fields: the schema version and the model (the folder's parent)."""
    return {"schema": RESULTS_SCHEMA_ID, "model": bench_dir.parent.name, **results}


@lru_cache(maxsize=1)
def _validator() -> Any:
    import jsonschema

    from duplexeval.specs.loader import schema_for

    return jsonschema.Draft202012Validator(schema_for("results"))


def envelope_problems(results: dict[str, Any]) -> list[str]:
    """Where `results` departs from specs/schema/results.schema.json (empty: it follows it)."""
    return [f"{'.'.join(str(p) for p in e.absolute_path) or '<top>'}: {e.message}"
            for e in sorted(_validator().iter_errors(results), key=lambda e: list(map(str, e.absolute_path)))]


def score_bench_folder(bench_dir: Path, statuses: list[tuple[Path, str]], *,
                       score_ok: Callable[[Path], Records],
                       score_not_ok: Callable[[Path, str], Records],
                       aggregate: Callable[[Records, dict[str, int]], dict[str, Any]],
                       progress: Callable[[int, int, str], None] | None = None) -> dict[str, Any]:
    """Scores the items of one folder and writes records.jsonl and results.json; returns the results.

    `progress(done, total, item_id)`, when given, is called after each item (ASR and judges
    included); it only reports, so the files written are the same with or without it."""
    counts = status_counts(statuses)
    records: Records = []
    for n, (d, status) in enumerate(statuses, 1):
        records += score_ok(d) if status == "ok" else score_not_ok(d, status)
        if progress is not None:
            progress(n, len(statuses), d.name)
    results = envelope(with_caveat(aggregate(records, counts), bench_dir), bench_dir)
    results["inputs_sha256"] = input_hashes(bench_dir)  # the status.json of every item it read
    problems = envelope_problems(results)
    if problems:
        raise ResultsEnvelopeError(f"{bench_dir}/results.json: " + "; ".join(problems[:5]))
    problems = record_problems(records)
    if problems:
        raise ResultsEnvelopeError(f"{bench_dir}/records.jsonl: " + "; ".join(problems[:5]))
    atomic_write_jsonl(bench_dir / "records.jsonl", records)
    atomic_write_json(bench_dir / "results.json", results)
    return results
