"""The text-only reference of Duplex-MPE (§4.2, Table 17: Gemini reading transcripts).

A language model reads the speaker-labelled transcript up to each turn and decides
whether Aria should respond to it. It hears no audio, so it is a reference row, never a
competitor: its results live under `<run>/text-reference/<benchmark>/` with the judge's
label beside them. `response` is the rate over T turns (the paper's figure); `silence`
(N1-N3 turns it left alone) is ours, shown so a reader sees both sides.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from duplexeval.benchmarks.mpe.metrics import rate
from duplexeval.benchmarks.mpe.scenes.model import Scene, conversation
from duplexeval.io import atomic_write_json, atomic_write_jsonl

SILENCE_LABELS = ("N1", "N2", "N3")  # default only: the spec's metrics.shush.labels decide


def silence_labels(bench: dict[str, Any]) -> tuple[str, ...]:
    """The labels whose turns the reference should leave alone: the same as Shush scores."""
    return tuple(bench.get("metrics", {}).get("shush", {}).get("labels", SILENCE_LABELS))


def _line(turn) -> str:
    return f"{turn.speaker}: {turn.text}"


def text_reference_records(scenes: list[Scene], bench: dict[str, Any], judge) -> list[dict[str, Any]]:
    condition = bench["condition"]
    records = []
    for scene in scenes:
        turns = conversation(scene, condition)
        for i, turn in enumerate(turns):
            if turn.label != "T" and turn.label not in silence_labels(bench):
                continue
            verdict = judge.decide({"preamble": scene.preamble_text,
                                    "transcript": "\n".join(_line(t) for t in turns[:i]),
                                    "last_turn": _line(turn)})
            responded = verdict.parsed_ok and verdict.value == "respond"
            records.append({"item": scene.id, "turn": turn.index, "turn_id": turn.turn_id, "label": turn.label,
                            "benchmark": bench["id"], "condition": condition, "text": turn.text,
                            "verdict": verdict.value, "parsed_ok": verdict.parsed_ok, "responded": responded,
                            "outcome": "responded" if responded else "silent",
                            "judge_id": verdict.judge_id, "judge_label": verdict.label,
                            "cache_key": verdict.cache_key, "judge_reason": verdict.reason})
    return records


def aggregate(records: list[dict[str, Any]], bench: dict[str, Any], judge_id: str) -> dict[str, Any]:
    t = [r for r in records if r["label"] == "T"]
    quiet = [r for r in records if r["label"] in silence_labels(bench)]
    return {"schema": "duplexeval.results/1", "model": "text-reference", "benchmark": bench["id"],
            "condition": bench["condition"], "judges": {"text_reference": judge_id},
            "items": {"total": len({r["item"] for r in records}), "ok": len({r["item"] for r in records}), "error": 0},
            "metrics": {"response": {**rate(sum(r["responded"] for r in t), len(t)), "reported": True},
                        "silence": {**rate(sum(not r["responded"] for r in quiet), len(quiet)), "reported": True}}}


def write_text_reference(run_dir: Path, bench: dict[str, Any], scenes: list[Scene], judge, judge_id: str) -> dict[str, Any]:
    out = Path(run_dir) / "text-reference" / bench["id"]
    records = text_reference_records(scenes, bench, judge)
    results = aggregate(records, bench, judge_id)
    atomic_write_json(out / "benchmark.json", bench)
    atomic_write_jsonl(out / "records.jsonl", records)
    atomic_write_json(out / "results.json", results)
    return results
