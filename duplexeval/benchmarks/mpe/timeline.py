"""The realised timeline of one Duplex-MPE item, read back from its events.jsonl.

The scheduler writes where every turn actually started and ended (frame time, after any
waiting for the model), so scoring needs no scene file, no TTS and no alignment: the
recording and its events are enough (`duplexeval score RUN` works on a copied run).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class TurnSpan:
    index: int
    turn_id: str
    label: str
    start: float
    end: float
    text: str
    gold_answer: str | None = None


@dataclass(frozen=True)
class Timeline:
    scene_id: str
    condition: str
    turns: tuple[TurnSpan, ...]
    end: float  # scene_end event, or the recording's end when the scene did not finish

    def next_start(self, index: int) -> float | None:
        return self.turns[index + 1].start if index + 1 < len(self.turns) else None


def timeline_from_events(events: list[dict[str, Any]], duration_s: float, source: Path | str = "events") -> Timeline:
    """Pairs turn_start/turn_end events by turn index; a turn without an end is an error."""
    header = next((e for e in events if e.get("type") == "scene"), {})
    starts: dict[int, dict] = {}
    ends: dict[int, dict] = {}
    for e in events:
        if e.get("type") == "turn_start":
            starts[int(e["turn"])] = e
        elif e.get("type") == "turn_end":
            ends[int(e["turn"])] = e
    if not starts:
        raise ValueError(f"{source}: no turn_start events; is this a Duplex-MPE item?")
    missing = sorted(set(starts) - set(ends))
    if missing:
        raise ValueError(f"{source}: turns {missing} started but never ended (unfinished item)")
    expected = list(range(len(starts)))
    if sorted(starts) != expected:
        raise ValueError(f"{source}: turn indices {sorted(starts)} are not 0..{len(starts) - 1}")
    turns = tuple(
        TurnSpan(index=i, turn_id=str(starts[i].get("turn_id", i)), label=str(starts[i]["label"]),
                 start=float(starts[i]["t"]), end=float(ends[i]["t"]), text=str(starts[i].get("text", "")),
                 gold_answer=starts[i].get("gold_answer"))
        for i in expected
    )
    scene_end = next((float(e["t"]) for e in events if e.get("type") == "scene_end"), duration_s)
    return Timeline(scene_id=str(header.get("scene_id", "")), condition=str(header.get("condition", "")),
                    turns=turns, end=min(scene_end, duration_s))
