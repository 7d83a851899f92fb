"""Duplex-MPE's statistics across the jobs of a run (App. A5.1, §4.5), run by the family's
`statistics` hook after every run (duplexeval.runs.statistics writes statistics.json).

- exact two-sided McNemar per model over explicit/implicit pairs of the same scene
  (which condition pairs with which is the spec's `metrics.statistics.mcnemar.pair_with`);
- Spearman rank correlation between response presence and Start over every
  model x condition entry (the paper finds -0.4303 over ten);
- the text-only reference's McNemar on its explicit/implicit response pairs (§4.2: a
  64.3-point gap, p < 10^-371, so p is also given as log10_p, which does not underflow);
- `conditions`: each model's explicit-minus-implicit shift of every Table 3 score, the
  largest (Table 3: "no score moves by more than 0.0438") and the range of the presence
  differences in points (Table 16: -1.75 to +0.60).

One rule for errored T units in both tests (issue 36): an errored T says nothing about
whether the model responded or started fresh, so it leaves McNemar's pairs (its scene
leaves the pair) and Spearman's rates alike: each entry's presence and Start are
recomputed from the records over the T units that are not errored, and every entry and
pair says how many it left out (`excluded_errored`). results.json keeps its own rule
(Start and presence count an errored T against the model: denominators cannot shrink).
Nothing here forms a total score.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from duplexeval.io import read_jsonl
from duplexeval.stats import mcnemar_from_pairs, spearman

PRESENT = ("fresh", "already_speaking")
TABLE3_SCORES = ("start", "answer", "shush", "stop")
TEXT_REFERENCE = "text-reference"


def log10_mcnemar_p(b: int, c: int) -> float | None:
    """log10 of the exact two-sided McNemar p, summed in log space (p itself underflows at 10^-308)."""
    n, m = b + c, min(b, c)
    if n == 0:
        return 0.0
    logs = [math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) for k in range(m + 1)]
    top = max(logs)
    log_tail = top + math.log(sum(math.exp(x - top) for x in logs)) - n * math.log(2)
    return round(min(0.0, (math.log(2) + log_tail) / math.log(10)), 4)


def mcnemar_entry(model: str, first: str, second: str, metric: str,
                  pairs: list[tuple[bool, bool]], errored: int) -> dict[str, Any]:
    """One exact two-sided McNemar entry with its pair counts and the difference in points."""
    test = mcnemar_from_pairs(pairs)
    return {"model": model, "first": first, "second": second, "metric": metric, "pairs": len(pairs),
            "first_only": test.b, "second_only": test.c, "excluded_errored": errored,
            "difference_points": round(100 * (test.b - test.c) / len(pairs), 4) if pairs else None,
            "p": round(test.p_value, 6), "log10_p": log10_mcnemar_p(test.b, test.c),
            "test": "exact two-sided McNemar"}


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


def rank_entry(model: str, bench_id: str, records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """One Spearman entry: presence and Start over the T units that did not error (None without any)."""
    per_item, errored = _per_item(records)
    n = len(per_item)
    if not n:
        return None
    return {"model": model, "benchmark": bench_id,
            "presence": round(sum(v["presence"] for v in per_item.values()) / n, 6),
            "start": round(sum(v["start"] for v in per_item.values()) / n, 6),
            "t_units": n, "excluded_errored": len(errored)}


def _mpe_folders(run_dir: Path) -> list[tuple[str, dict[str, Any], Path]]:
    out = []
    for spec_path in sorted(run_dir.glob("*/*/benchmark.json")):
        spec = json.loads(spec_path.read_text(encoding="utf-8"))
        folder = spec_path.parent
        # The text-only reference (<run>/text-reference/) is a reference row, not a model.
        if spec.get("dimension") == "mpe" and folder.parent.name != "text-reference" and (folder / "records.jsonl").exists():
            out.append((folder.parent.name, spec, folder))
    return out


def run_statistics(run_dir: Path) -> dict[str, Any] | None:
    """McNemar, Spearman and the condition shifts of the run's Duplex-MPE folders (None without any)."""
    folders = _mpe_folders(run_dir)
    if not folders:
        return None
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
            mcnemar.append(mcnemar_entry(model, bench_id, pair_id, metric,
                                         [(first[i][metric], second[i][metric]) for i in shared], errored))
    mcnemar += text_reference_mcnemar(run_dir, {spec["id"]: spec for _, spec, _ in folders})
    entries = [e for e in (rank_entry(model, spec["id"], read_jsonl(folder / "records.jsonl"))
                           for model, spec, folder in folders) if e is not None]
    rank: dict[str, Any] = {"entries": len(entries), "x": "presence", "y": "start", "rho": None, "p": None}
    if len(entries) >= 3:
        rho, p = spearman([e["presence"] for e in entries], [e["start"] for e in entries])
        if math.isfinite(rho):
            rank.update(rho=round(rho, 6), p=round(p, 6))
        else:
            rank["note"] = "undefined: one of the rankings is constant"
    else:
        rank["note"] = "needs at least 3 model x condition entries"
    return {"mcnemar": mcnemar, "spearman": rank, "entries": entries, "conditions": condition_shifts(by_key, mcnemar)}


def _metric_values(folder: Path) -> dict[str, float | None]:
    metrics = json.loads((folder / "results.json").read_text(encoding="utf-8"))["metrics"]
    return {k: metrics.get(k, {}).get("value") for k in TABLE3_SCORES}


def condition_shifts(by_key: dict[tuple[str, str], tuple[dict[str, Any], Path]],
                     mcnemar: list[dict[str, Any]]) -> dict[str, Any]:
    """Explicit minus implicit, per model and Table 3 score (a score not reported in both is skipped)."""
    shifts: list[dict[str, Any]] = []
    for (model, _bench_id), (spec, folder) in sorted(by_key.items()):
        pair_id = spec["metrics"].get("statistics", {}).get("mcnemar", {}).get("pair_with")
        if spec.get("condition") != "explicit" or (model, pair_id) not in by_key:
            continue
        first, second = _metric_values(folder), _metric_values(by_key[(model, pair_id)][1])
        for metric in TABLE3_SCORES:
            a, b = first[metric], second[metric]
            if a is not None and b is not None:
                shifts.append({"model": model, "metric": metric, "shift": round(a - b, 6)})
    largest = max(shifts, key=lambda e: (abs(e["shift"]), e["model"], e["metric"]), default=None)
    presence = [e["difference_points"] for e in mcnemar
                if e["metric"] == "presence" and e["model"] != TEXT_REFERENCE and e["difference_points"] is not None]
    return {"shifts": shifts,
            "largest_shift": abs(largest["shift"]) if largest else None,
            "largest_shift_at": {"model": largest["model"], "metric": largest["metric"]} if largest else None,
            "presence_difference_min": min(presence) if presence else None,
            "presence_difference_max": max(presence) if presence else None}


def text_reference_mcnemar(run_dir: Path, specs: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """§4.2: the text-only reference's response to T, explicit against implicit, paired by scene."""
    out = []
    for bench_id, spec in sorted(specs.items()):
        pair_id = spec["metrics"].get("statistics", {}).get("mcnemar", {}).get("pair_with")
        first_path = run_dir / TEXT_REFERENCE / bench_id / "records.jsonl"
        second_path = run_dir / TEXT_REFERENCE / str(pair_id) / "records.jsonl"
        if spec.get("condition") != "explicit" or not (first_path.is_file() and second_path.is_file()):
            continue
        first = {r["item"]: bool(r["responded"]) for r in read_jsonl(first_path) if r["label"] == "T"}
        second = {r["item"]: bool(r["responded"]) for r in read_jsonl(second_path) if r["label"] == "T"}
        shared = sorted(set(first) & set(second))
        out.append(mcnemar_entry(TEXT_REFERENCE, bench_id, str(pair_id), "response",
                                 [(first[i], second[i]) for i in shared], 0))
    return out
