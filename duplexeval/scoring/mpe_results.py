"""Aggregate Duplex-MPE records into results.json: every metric on its own denominator.

No total is formed (§3.5): a win on one score cannot pay for a failure on another.
Each metric is {value, numerator, denominator} (value None without a denominator),
with a Wilson interval when the spec asks for one, and Start's three outcomes, Stop's
eligible count and its yield rate over all N4 events are always shown (§4.3, §4.5).
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from duplexeval.io import atomic_write_json, atomic_write_jsonl, sha256_json
from duplexeval.runner.integrity import item_status
from duplexeval.scoring import mpe
from duplexeval.scoring.model_caveat import with_caveat
from duplexeval.scoring.mpe_score import CallCounter, DecidingJudge, Transcriber, score_item
from duplexeval.stats import wilson_interval

log = logging.getLogger(__name__)

RESULTS_VERSION = 1
START_OUTCOMES = ("fresh", "already_speaking", "miss")


def aggregate(records: list[dict[str, Any]], bench_spec: dict[str, Any], calls: CallCounter,
              items: dict[str, int]) -> dict[str, Any]:
    params = bench_spec["metrics"]
    by = lambda m: [r for r in records if r["metric"] == m]  # noqa: E731
    start = by("start")
    counts = Counter(r["outcome"] for r in start)
    fresh, already = counts["fresh"], counts["already_speaking"]
    answers = by("answer")
    shush = by("shush")
    stops = by("stop")
    eligible = [r for r in stops if r["eligibility"] == "eligible"]
    yielded = sum(1 for r in eligible if r["passed"])
    metrics = {
        "start": {**mpe.rate(fresh, len(start)), "outcomes": {k: counts[k] for k in START_OUTCOMES}},
        "presence": mpe.rate(fresh + already, len(start)),
        "answer": mpe.rate(sum(1 for r in answers if r["passed"]), fresh + already),
        "shush": {**mpe.rate(sum(1 for r in shush if r["passed"]), len(shush)),
                  "outcomes": dict(sorted(Counter(r["outcome"] for r in shush).items()))},
        "stop": {**mpe.stop_result(yielded, len(eligible), len(stops), params),
                 "outcomes": dict(sorted(Counter(r["outcome"] for r in stops).items()))},
    }
    if len(answers) != fresh + already:
        raise AssertionError(f"{len(answers)} Answer records for {fresh + already} T turns with speech")
    confidence = params.get("statistics", {}).get("wilson_confidence")
    if confidence:
        for m in metrics.values():
            if m["value"] is not None:
                ci = wilson_interval(m["numerator"], m["denominator"], float(confidence))
                m["wilson"] = [round(ci[0], 6), round(ci[1], 6)] if ci else None
    windows = len(start) + len(shush) + len(stops)
    needing_asr = len(answers) + sum(1 for r in shush if r["speech"])
    return {
        "v": RESULTS_VERSION,
        "benchmark": bench_spec.get("id"),
        "condition": bench_spec.get("condition"),
        "spec_sha256": sha256_json(bench_spec),
        "records_sha256": sha256_json(records),
        "items": items,
        "metrics": metrics,
        "calls": {"asr_requests": calls.asr, "judge_requests": calls.judge, "windows": windows,
                  "windows_needing_asr": needing_asr,
                  "share_needing_asr": round(needing_asr / windows, 6) if windows else None},
        "judges": {role: jid for role, jid in sorted(bench_spec.get("judges", {}).items())},
        "asr": bench_spec.get("asr"),
        "vad": bench_spec.get("vad"),
    }


def item_dirs(bench_dir: Path) -> tuple[list[Path], dict[str, int]]:
    """Finished items (status ok) in name order, and counts of every status."""
    ok, counts = [], Counter()
    for d in sorted(p for p in (bench_dir / "items").iterdir() if p.is_dir()):
        st = item_status(d)  # verified against its files: a damaged item is an error, never silence
        if st is None:
            counts["unfinished"] += 1
            continue
        status = st.get("status")
        counts[status if status in ("ok", "error") else "unknown"] += 1
        if status == "ok":
            ok.append(d)
    # ok and error are always present: "0 errors" must be visible, not implied (docs/architecture.md).
    counts.update({"ok": 0, "error": 0})
    out = {k: counts[k] for k in sorted(counts)}
    out["total"] = sum(out.values())
    return ok, out


def score_bench_dir(bench_dir: str | Path, bench_spec: dict[str, Any], judges: dict[str, DecidingJudge], *,
                    transcriber: Transcriber | None = None) -> dict[str, Any]:
    """Scores every finished item of one model x benchmark folder; writes records and results."""
    bench_dir = Path(bench_dir)
    dirs, counts = item_dirs(bench_dir)
    calls = CallCounter()
    records: list[dict[str, Any]] = []
    for d in dirs:
        records += score_item(d, bench_spec, judges, transcriber=transcriber, calls=calls)
    results = with_caveat(aggregate(records, bench_spec, calls, counts), bench_dir)
    atomic_write_jsonl(bench_dir / "records.jsonl", records)
    atomic_write_json(bench_dir / "results.json", results)
    return results


def bench_dirs(run_dir: Path) -> list[Path]:
    """Folders holding items/ under a run (<run>/<model>/<benchmark>), or run_dir itself."""
    if (run_dir / "items").is_dir():
        return [run_dir]
    return sorted(p.parent for p in run_dir.glob("*/*/items") if p.is_dir())


def score_run(run_dir: str | Path, *,
              spec_for: Callable[[Path], dict[str, Any]] | None = None,
              judges_for: Callable[[dict[str, Any]], dict[str, DecidingJudge]] | None = None,
              transcriber: Transcriber | None = None) -> dict[str, dict[str, Any]]:
    """Re-scores every Duplex-MPE folder of a run from its recordings; returns results by folder.

    `spec_for(bench_dir)` gives the benchmark spec (default: the spec snapshot the runner
    left in the folder, else the registry entry named like the folder); `judges_for(spec)`
    builds the judges (default: from the spec's `judges` roles via the registry).
    """
    run_dir = Path(run_dir)
    spec_for = spec_for or bench_spec_for
    judges_for = judges_for or judges_from_spec
    out = {}
    for bench_dir in bench_dirs(run_dir):
        spec = spec_for(bench_dir)
        if spec.get("dimension") != "mpe":
            continue
        out[str(bench_dir.relative_to(run_dir))] = score_bench_dir(bench_dir, spec, judges_for(spec),
                                                                    transcriber=transcriber)
    if not out:
        raise FileNotFoundError(f"{run_dir}: no Duplex-MPE benchmark folders (<model>/<benchmark>/items)")
    return out


SPEC_SNAPSHOTS = ("benchmark.json", "spec.json")


def bench_spec_for(bench_dir: Path) -> dict[str, Any]:
    """The spec a folder was run with: a snapshot next to items/ wins over the registry,
    so a re-score uses what the run used even after the spec file changed."""
    for name in SPEC_SNAPSHOTS:
        path = bench_dir / name
        if path.exists():
            return json.loads(path.read_text(encoding="utf-8"))
    from duplexeval.specs import Registry

    return Registry.load().get("benchmark", bench_dir.name).data


def judges_from_spec(bench_spec: dict[str, Any], cache_mode: str = "readwrite") -> dict[str, DecidingJudge]:
    """Judge objects for the spec's answer and backchannel roles (duplexeval.judges)."""
    from duplexeval.judges.cache import JudgeCache
    from duplexeval.judges.llm import Judge
    from duplexeval.specs import Registry

    registry = Registry.load()
    cache = JudgeCache(mode=cache_mode)
    out = {}
    for role in ("answer", "backchannel"):
        spec = registry.get("judge", bench_spec["judges"][role])
        out[role] = Judge.from_spec(spec.data, spec.path, cache)
    return out
