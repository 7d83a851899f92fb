"""Aggregate Duplex-MPE records into results.json: every metric on its own denominator.

No total is formed (§3.5): a win on one score cannot pay for a failure on another.

An item whose status is not "ok" (an error, a damaged or an unfinished item) still
contributes its planned units - every T, every N1/N2/N3 window, every N4 event of its
scene - each as one record with the outcome `error`, which never passes. Where it counts
(issue 24): Start's and presence's denominators (every T) and Shush's (every window) keep
it as a failure, so those cannot shrink; Answer's (presence) and Stop's (eligible N4
events) cannot say whether an errored T had speech or an errored N4 was eligible, so it
stays out of them and is counted apart (`answer.errored`, `stop.errored`). results.json
then says `complete: false`, with the counts in `incomplete`.
Each metric is {value, numerator, denominator} (value None without a denominator),
with a Wilson interval when the spec asks for one, and Start's three outcomes, Stop's
eligible count and its yield rate over all N4 events are always shown (§4.3, §4.5).
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from duplexeval.benchmarks.bench_folder import item_statuses as folder_item_statuses, score_bench_folder, status_counts
from duplexeval.benchmarks.mpe import metrics as mpe
from duplexeval.benchmarks.mpe.plan_file import read_plan_file
from duplexeval.benchmarks.mpe.score import CallCounter, DecidingJudge, Transcriber, model_episodes_batch, score_item
from duplexeval.io import read_jsonl, sha256_json
from duplexeval.stats import wilson_interval

log = logging.getLogger(__name__)

RESULTS_VERSION = 1
START_OUTCOMES = ("fresh", "already_speaking", "miss", "error")
ERROR = "error"


def aggregate(records: list[dict[str, Any]], bench_spec: dict[str, Any], calls: CallCounter,
              items: dict[str, int]) -> dict[str, Any]:
    params = bench_spec["metrics"]
    by = lambda m: [r for r in records if r["metric"] == m]  # noqa: E731
    start = by("start")
    counts = Counter(r["outcome"] for r in start)
    fresh, already, errored_t = counts["fresh"], counts["already_speaking"], counts[ERROR]
    answers = by("answer")
    shush = by("shush")
    stops = by("stop")
    # An errored N4 event is neither eligible nor excluded: nobody knows, so it stays out
    # of Stop's denominator (issue 24: 1 eligible + 29 errored must not report 1/30) and is
    # counted apart; results.json is then incomplete.
    eligible = [r for r in stops if r["eligibility"] == "eligible"]
    errored_n4 = sum(1 for r in stops if r["eligibility"] == ERROR)
    yielded = sum(1 for r in eligible if r["passed"])
    stop_outcomes = Counter(r["outcome"] for r in stops)
    metrics = {
        "start": {**mpe.rate(fresh, len(start)), "outcomes": {k: counts[k] for k in START_OUTCOMES}},
        "presence": mpe.rate(sum(counts[o] for o in mpe.PRESENCE_OUTCOMES), len(start)),
        # Answer's denominator is presence (§3.5): an errored T is not known to have speech,
        # so it is counted apart, like an errored N4 event.
        "answer": {**mpe.rate(sum(1 for r in answers if r["passed"]), fresh + already),
                   "errored": errored_t,
                   "outcomes": dict(sorted(Counter(r["outcome"] for r in answers).items()))},
        "shush": {**mpe.rate(sum(1 for r in shush if r["passed"]), len(shush)),
                  "outcomes": dict(sorted(Counter(r["outcome"] for r in shush).items())),
                  # Always shown (issue 13, item 4): windows failed only by a Start-passing
                  # reply to T that spilled into them (what shush.attribute_t_response forgives).
                  "failed_by_t_reply": sum(1 for r in shush if r.get("t_reply_speech") and not r["passed"]),
                  # Table 10: windows whose speech reached the backchannel judge.
                  "judged": sum(1 for r in shush if "verdict" in r)},
        "stop": {**mpe.stop_result(yielded, len(eligible), len(stops), params),
                 # Over every N4 event whose eligibility is known (an errored one is neither way).
                 "yield_rate_all_n4": mpe.rate(yielded, len(stops) - errored_n4),
                 "errored": errored_n4,
                 # Table 14: quiet during N4Q and first speaking in the gap (eligible or finished early).
                 "spoke_after_question": len(eligible) + stop_outcomes["excluded_finished_early"],
                 "outcomes": dict(sorted(stop_outcomes.items()))},
    }
    if len(answers) != fresh + already + errored_t:
        raise AssertionError(f"{len(answers)} Answer records for {fresh + already} T turns with speech "
                             f"and {errored_t} errored T turns")
    confidence = params.get("statistics", {}).get("wilson_confidence")
    if confidence:
        for m in metrics.values():
            if m["value"] is not None:
                ci = wilson_interval(m["numerator"], m["denominator"], float(confidence))
                m["wilson"] = [round(ci[0], 6), round(ci[1], 6)] if ci else None
    scored = [r for r in records if r["outcome"] != ERROR]
    windows = sum(1 for r in scored if r["metric"] in ("start", "shush", "stop"))
    needing_asr = (sum(1 for r in scored if r["metric"] == "answer")
                   + sum(1 for r in scored if r["metric"] == "shush" and r["speech"]))
    return {
        "v": RESULTS_VERSION,
        "benchmark": bench_spec.get("id"),
        "condition": bench_spec.get("condition"),
        "spec_sha256": sha256_json(bench_spec),
        "records_sha256": sha256_json(records),
        "items": items,
        **completeness(records, items),
        "metrics": metrics,
        "calls": {"asr_requests": calls.asr, "judge_requests": calls.judge, "windows": windows,
                  "windows_needing_asr": needing_asr,
                  "share_needing_asr": round(needing_asr / windows, 6) if windows else None},
        "judges": {role: jid for role, jid in sorted(bench_spec.get("judges", {}).items())},
        "asr": bench_spec.get("asr"),
        "vad": bench_spec.get("vad"),
    }


def item_statuses(bench_dir: Path) -> list[tuple[Path, str]]:
    """Every item in name order with its verified status (duplexeval.benchmarks.bench_folder):
    the folders under items/ and every conversation the job's plan (scenes.json) lists."""
    return folder_item_statuses(bench_dir, read_plan_file(bench_dir) or {})


def item_dirs(bench_dir: Path) -> tuple[list[Path], dict[str, int]]:
    """Finished items (status ok) in name order, and counts of every status."""
    statuses = item_statuses(bench_dir)
    return [d for d, status in statuses if status == "ok"], status_counts(statuses)


def completeness(records: list[dict[str, Any]], items: dict[str, int]) -> dict[str, Any]:
    """`complete` and, when false, what is missing: items not ok and their error units."""
    not_ok = {k: v for k, v in items.items() if k not in ("ok", "total") and v}
    units = Counter(r["metric"] for r in records if r["outcome"] == ERROR)
    complete = not not_ok and not units
    out: dict[str, Any] = {"complete": complete}
    if not complete:
        out["incomplete"] = {"items": dict(sorted(not_ok.items())),
                             "error_units": dict(sorted(units.items())),
                             "units_lower_bound": sum(1 for r in records
                                                      if r["outcome"] == ERROR and r.get("units_from") == "events")}
    return out


def planned_turns(bench_spec: dict[str, Any], item_dir: Path) -> tuple[list[tuple[int, str, str]], str]:
    """(index, turn_id, label) of every turn the item's scene plans, and where they came from.

    The job's scenes.json is the plan; for a folder planned before it existed, the scene
    file (the benchmark's data path); without either, the turns the item's events.jsonl
    reached (a lower bound, flagged in results.json).
    """
    from duplexeval.benchmarks.mpe.scenes.model import conversation

    planned = read_plan_file(item_dir.parent.parent) or {}
    if item_dir.name in planned:
        return list(planned[item_dir.name]), "plan"
    try:
        from duplexeval.benchmarks.mpe.scenes.loader import load_bench_scenes

        scenes = {s.id: s for s in load_bench_scenes(bench_spec)}
    except (FileNotFoundError, KeyError):
        scenes = {}
    scene = scenes.get(item_dir.name)
    if scene is not None:
        return [(t.index, t.turn_id, t.label) for t in conversation(scene, bench_spec["condition"])], "scene"
    events = read_jsonl(item_dir / "events.jsonl") if (item_dir / "events.jsonl").is_file() else []
    return [(int(e["turn"]), str(e.get("turn_id", e["turn"])), str(e["label"]))
            for e in events if e.get("type") == "turn_start"], "events"


def error_records(item_dir: Path, status: str, bench_spec: dict[str, Any]) -> list[dict[str, Any]]:
    """One `error` record per planned unit of an item that is not ok (never a pass)."""
    params = bench_spec["metrics"]
    turns, source = planned_turns(bench_spec, item_dir)
    metric_of = {"T": ("start", "answer"), "N4Q": ("stop",)}
    out = []
    for index, turn_id, label in turns:
        metrics = metric_of.get(label, ("shush",) if label in params["shush"]["labels"] else ())
        for metric in metrics:
            rec = {"v": 1, "item": item_dir.name, "benchmark": bench_spec.get("id"), "turn": index,
                   "turn_id": turn_id, "label": label, "metric": metric, "outcome": ERROR, "passed": False,
                   "item_status": status, "units_from": source,
                   "reason": f"item {status}: its planned unit counts against the score, never for it"}
            if metric == "stop":
                rec["eligibility"] = ERROR
            if metric == "shush":
                rec["speech"] = []
            out.append(rec)
    return out


def score_bench_dir(bench_dir: str | Path, bench_spec: dict[str, Any], judges: dict[str, DecidingJudge], *,
                    transcriber: Transcriber | None = None,
                    progress: Callable[[int, int, str], None] | None = None,
                    vad_batch: int | None = None) -> dict[str, Any]:
    """Scores every finished item of one model x benchmark folder; writes records and results.

    `progress(done, total, item_id)`, when given, is called after each item (ASR and judges
    included); it only reports, so the files written are the same with or without it.
    `vad_batch`: the finished items' Silero passes run `vad_batch` recordings at a time
    (`model_episodes_batch`; default duplexeval.judges.vad_batch.BATCH_STREAMS, 1 = one at a time);
    the records are the same either way (tests/test_vad_batched.py)."""
    from duplexeval.judges.vad_batch import BATCH_STREAMS

    vad_batch = BATCH_STREAMS if vad_batch is None else vad_batch
    bench_dir = Path(bench_dir)
    calls = CallCounter()
    statuses = item_statuses(bench_dir)
    ok = [d for d, status in statuses if status == "ok"]
    episodes: dict[Path, Any] = {}

    def score_ok(d: Path) -> list[dict[str, Any]]:
        if vad_batch > 1 and d not in episodes:  # the next `vad_batch` items' VAD, as one batch
            at = ok.index(d)
            episodes.clear()  # one chunk of recordings held at a time
            episodes.update(model_episodes_batch(ok[at:at + vad_batch], bench_spec["vad"]))
        return score_item(d, bench_spec, judges, transcriber=transcriber, calls=calls, episodes=episodes.get(d))

    return score_bench_folder(
        bench_dir, statuses,
        score_ok=score_ok,
        score_not_ok=lambda d, status: error_records(d, status, bench_spec),
        aggregate=lambda records, counts: aggregate(records, bench_spec, calls, counts),
        progress=progress)


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
