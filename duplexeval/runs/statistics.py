"""Statistics across the jobs of a run (Duplex-MPE App. A5.1, §4.5).

- exact two-sided McNemar per model over explicit/implicit pairs of the same scene
  (which condition pairs with which is the spec's `metrics.statistics.mcnemar.pair_with`);
- Spearman rank correlation between response presence and Start over every
  model x condition entry (the paper finds -0.4303 over ten).
Written to `statistics.json` beside the manifest; nothing here forms a total score.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from duplexeval.io import atomic_write_json, read_jsonl
from duplexeval.stats import mcnemar_from_pairs, spearman

PRESENT = ("fresh", "already_speaking")


def _per_item(records: list[dict[str, Any]]) -> tuple[dict[str, dict[str, bool]], set[str]]:
    """Each scored item's presence and Start, and the items whose T errored.

    An errored T says nothing about whether the model responded (issue 24): its item
    leaves the pairs instead of counting as "did not respond"."""
    out: dict[str, dict[str, bool]] = {}
    errored: set[str] = set()
    for r in records:
        if r.get("metric") != "start":
            continue
        if r["outcome"] == "error":
            errored.add(r["item"])
        else:
            out[r["item"]] = {"presence": r["outcome"] in PRESENT, "start": bool(r["passed"])}
    return out, errored


def _mpe_folders(run_dir: Path) -> list[tuple[str, dict[str, Any], Path]]:
    out = []
    for spec_path in sorted(run_dir.glob("*/*/benchmark.json")):
        spec = json.loads(spec_path.read_text(encoding="utf-8"))
        folder = spec_path.parent
        # The text-only reference (<run>/text-reference/) is a reference row, not a model.
        if spec.get("dimension") == "mpe" and folder.parent.name != "text-reference" and (folder / "records.jsonl").exists():
            out.append((folder.parent.name, spec, folder))
    return out


def run_statistics(run_dir: Path) -> dict[str, Any]:
    folders = _mpe_folders(run_dir)
    by_key = {(model, spec["id"]): (spec, folder) for model, spec, folder in folders}
    mcnemar = []
    for (model, bench_id), (spec, folder) in sorted(by_key.items()):
        pair_id = spec["metrics"].get("statistics", {}).get("mcnemar", {}).get("pair_with")
        if spec.get("condition") != "explicit" or (model, pair_id) not in by_key:
            continue
        first, first_err = _per_item(read_jsonl(folder / "records.jsonl"))
        second, second_err = _per_item(read_jsonl(by_key[(model, pair_id)][1] / "records.jsonl"))
        shared = sorted(set(first) & set(second))
        errored = len(first_err | second_err)
        for metric in ("presence", "start"):
            test = mcnemar_from_pairs([(first[i][metric], second[i][metric]) for i in shared])
            mcnemar.append({"model": model, "first": bench_id, "second": pair_id, "metric": metric,
                            "pairs": len(shared), "first_only": test.b, "second_only": test.c,
                            "excluded_errored": errored,
                            "p": round(test.p_value, 6), "test": "exact two-sided McNemar"})
    entries = []
    for model, spec, folder in folders:
        metrics = json.loads((folder / "results.json").read_text(encoding="utf-8"))["metrics"]
        presence, start = metrics["presence"]["value"], metrics["start"]["value"]
        if presence is not None and start is not None:
            entries.append({"model": model, "benchmark": spec["id"], "presence": presence, "start": start})
    rank: dict[str, Any] = {"entries": len(entries), "x": "presence", "y": "start", "rho": None, "p": None}
    if len(entries) >= 3:
        rho, p = spearman([e["presence"] for e in entries], [e["start"] for e in entries])
        if math.isfinite(rho):
            rank.update(rho=round(rho, 6), p=round(p, 6))
        else:
            rank["note"] = "undefined: one of the rankings is constant"
    else:
        rank["note"] = "needs at least 3 model x condition entries"
    return {"schema": "duplexeval.statistics/1", "mcnemar": mcnemar, "spearman": rank, "entries": entries}


def write_statistics(run_dir: Path) -> dict[str, Any]:
    stats = run_statistics(Path(run_dir))
    atomic_write_json(Path(run_dir) / "statistics.json", stats)
    return stats
