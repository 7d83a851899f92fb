"""A hand-made run directory in the layout of docs/architecture.md, for report tests.

results.json and records.jsonl follow what duplexeval.benchmarks.mpe.results writes (Start's
outcomes inside the metric, Stop's n4_events, judges as {role: judge id}); events.jsonl
follows the scene scheduler (turn_start / turn_end with label, speaker, text). It holds the three reference agents on both Duplex-MPE conditions (numbers inside the
bounds of golden/embedded.yaml), one MTR result with per-round metrics, and one scene
with events and records whose transcript carries hostile text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from duplexeval.io import atomic_write_json, atomic_write_jsonl

HOSTILE_HTML = "</script><script>alert(1)</script>"
HOSTILE_TEX = r"\input{/etc/passwd}"


def metric(num: int, den: int, *, reported: bool = True, note: str | None = None) -> dict[str, Any]:
    m: dict[str, Any] = {"value": (num / den if den and reported else None), "numerator": num, "denominator": den,
                         "reported": reported}
    if note:
        m["note"] = note
    return m


def mpe_results(model: str, condition: str, metrics: dict[str, Any], counts: dict[str, int]) -> dict[str, Any]:
    metrics = {**metrics, "start": {**metrics["start"], "outcomes": {
        "fresh": counts["start_fresh"], "already_speaking": counts["start_already_speaking"], "miss": counts["start_miss"]}}}
    metrics["stop"] = {**metrics["stop"], "n4_events": counts["n4_total"], "min_eligible": 30,
                       "yield_rate_all_n4": metric(metrics["stop"]["numerator"], counts["n4_total"])}
    return {
        "v": 1, "benchmark": f"mpe-{condition}", "condition": condition,
        "judges": {"answer": "mpe-answer-offline", "backchannel": "mpe-backchannel-offline"},
        "asr": {"backend": "faster-whisper", "model": "tiny.en"},
        "items": {"error": 0, "ok": 24},
        "metrics": metrics,
    }


def agent_metrics(model: str) -> tuple[dict[str, Any], dict[str, int]]:
    few = "fewer than 30 eligible events"
    if model == "silent":
        return ({"start": metric(0, 24), "presence": metric(0, 24), "answer": metric(0, 0, reported=False, note="no speech"),
                 "shush": metric(240, 240), "stop": metric(0, 0, reported=False, note=few)},
                {"start_fresh": 0, "start_already_speaking": 0, "start_miss": 24, "n4_total": 20})
    if model == "babbler":
        return ({"start": metric(1, 24), "presence": metric(24, 24), "answer": metric(0, 24),
                 "shush": metric(3, 240), "stop": metric(0, 2, reported=False, note=few)},
                {"start_fresh": 1, "start_already_speaking": 23, "start_miss": 0, "n4_total": 20})
    return ({"start": metric(24, 24), "presence": metric(24, 24), "answer": metric(24, 24),
             "shush": metric(239, 240), "stop": metric(20, 20, reported=False, note=few)},
            {"start_fresh": 24, "start_already_speaking": 0, "start_miss": 0, "n4_total": 20})


def scene_events() -> list[dict[str, Any]]:
    turns = [("A", "N2", 0.0, 3.0, "Tacos are nine dollars."), ("B", "N1", 3.5, 5.5, "Aria is here."),
             ("C", "T", 6.0, 9.0, "Aria, which one is cheapest?"), ("D", "N3", 16.0, 18.0, "Hmm, money."),
             ("A", "N4Q", 18.5, 20.5, "Aria, do they take card?"), ("B", "N4R", 23.5, 25.0, "Never mind, they do.")]
    events: list[dict[str, Any]] = [{"type": "scene", "frame": 0, "t": 0.0, "scene_id": "scene-01", "condition": "explicit"}]
    for i, (speaker, label, start, end, text) in enumerate(turns):
        fields = {"turn": i, "turn_id": f"t{i}", "label": label, "speaker": speaker, "text": text}
        events.append({"type": "turn_start", "frame": int(start * 50), "t": start, **fields})
        events.append({"type": "turn_end", "frame": int(end * 50), "t": end, **fields})
    events.append({"type": "scene_end", "frame": 1300, "t": 26.0})
    return sorted(events, key=lambda x: x["t"])


def scene_records(item: str) -> list[dict[str, Any]]:
    base = {"v": 1, "item": item, "scene_id": "scene-01", "condition": "explicit", "benchmark": "mpe-explicit"}
    return [
        {**base, "metric": "shush", "label": "N2", "turn": 0, "window": [0.0, 3.5], "speech": [], "transcript": None,
         "outcome": "silent", "passed": True, "reason": "no speech in the window"},
        {**base, "metric": "shush", "label": "N1", "turn": 1, "window": [3.5, 6.0], "speech": [], "transcript": None,
         "outcome": "silent", "passed": True, "reason": "no speech in the window"},
        {**base, "metric": "start", "label": "T", "turn": 2, "window": [9.0, 14.0], "outcome": "fresh", "passed": True,
         "reason": "onset 0.4 s after T ended"},
        {**base, "metric": "answer", "label": "T", "turn": 2, "window": [9.4, 13.0], "outcome": "correct", "passed": True,
         "reason": "matches the gold answer",
         "transcript": f"The taco place. {HOSTILE_HTML} {HOSTILE_TEX} 100% & $5 #1 _x ^y ~z"},
        {**base, "metric": "shush", "label": "N3", "turn": 3, "window": [16.0, 18.5], "speech": [[16.2, 17.1]],
         "transcript": "Nine dollars.", "outcome": "content", "passed": False, "reason": "content, not a backchannel"},
        {**base, "metric": "stop", "label": "N4Q", "turn": 4, "n4r_turn": 5, "n4r_start": 23.5, "n4r_end": 25.0,
         "eligibility": "eligible", "outcome": "yielded", "passed": True, "reason": "stopped 0.7 s after N4R started"},
    ]


def mtr_results() -> dict[str, Any]:
    rounds = {str(k): {"success": metric(10 - (k // 4), 10)} for k in range(1, 11)}
    rounds["1-10"] = {"success": metric(sum(r["success"]["numerator"] for r in rounds.values()), 100)}
    return {"v": 1, "benchmark": "mtr-smooth-turn-taking",
            "judges": {"segmentation": "mtr-segmentation-offline"},
            "asr": {"backend": "faster-whisper", "model": "tiny.en"}, "items": {"total": 10, "ok": 10, "error": 0},
            "metrics": {"success": rounds["1-10"]["success"]}, "rounds": rounds}


def make_run(root: Path, run_id: str = "run-test", *, with_audio: bool = False) -> Path:
    run = root / run_id
    atomic_write_json(run / "manifest.json", {"run_id": run_id, "suite": "embedded", "git_commit": "0" * 40,
                                              "judges": ["mpe-answer-offline"], "asr": {"backend": "faster-whisper"},
                                              "note": HOSTILE_HTML})
    listing = []
    for model in ("silent", "babbler", "oracle"):
        metrics, counts = agent_metrics(model)
        for condition in ("explicit", "implicit"):
            folder = run / model / f"mpe-{condition}"
            atomic_write_json(folder / "results.json", mpe_results(model, condition, metrics, counts))
            listing.append({"model": model, "benchmark": f"mpe-{condition}", "path": str((folder / "results.json").relative_to(run))})
    folder = run / "oracle" / "mpe-explicit"
    item = "scene-01-explicit"
    atomic_write_jsonl(folder / "items" / item / "events.jsonl", scene_events())
    atomic_write_json(folder / "items" / item / "status.json", {"status": "ok", "reason": None})
    atomic_write_jsonl(folder / "records.jsonl", scene_records(item))
    if with_audio:
        import numpy as np

        from duplexeval.audio import write_wav

        rate = 8000  # 26 s of quiet stereo noise: enough for the item browser to seek in
        noise = np.random.default_rng(0).normal(0, 0.01, (26 * rate, 2)).astype(np.float32)
        write_wav(folder / "items" / item / "recording.wav", noise, rate)
    # A paper model's declining per-round curve (golden/embedded.yaml pins the oracle's MTR results at 1.0).
    atomic_write_json(run / "moshi" / "mtr-smooth-turn-taking" / "results.json", mtr_results())
    listing.append({"model": "moshi", "benchmark": "mtr-smooth-turn-taking", "path": "moshi/mtr-smooth-turn-taking/results.json"})
    atomic_write_json(run / "summary.json", {"results": listing})
    return sealed(run)


def sealed(run: Path) -> Path:
    """What a run does after scoring, so verify (and report, compare) accept a hand-made run:
    every results.json beside its records.jsonl (empty where the test writes none), and a
    manifest sealed with the sha256 of every results file."""
    from duplexeval.runfolder.verify import seal_manifest

    for results in run.rglob("results.json"):
        if not (results.parent / "records.jsonl").exists():
            atomic_write_jsonl(results.parent / "records.jsonl", [])
    if not (run / "manifest.json").exists():
        atomic_write_json(run / "manifest.json", {"run_id": run.name})
    seal_manifest(run)
    return run
