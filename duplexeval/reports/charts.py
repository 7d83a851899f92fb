"""Geometry for the report's inline SVG charts; the templates only draw what this returns.

Charts are inline SVG, not images from a plotting library: the HTML stays one
self-contained file (no server, no network, no extra dependency), and the numbers in a
chart are the same objects the tables print. Coordinates are rounded so that reports are
byte-identical across reruns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


@dataclass
class Chart:
    width: int
    height: int
    title: str
    items: list[dict[str, Any]] = field(default_factory=list)  # rect / line / text / polyline
    legend: list[dict[str, str]] = field(default_factory=list)


def rounded(x: float) -> float:
    return round(x, 1)


def axis(chart: Chart, left: int, top: int, plot_h: int, plot_w: int, ymax: float = 1.0, label: str = "") -> None:
    """Horizontal grid lines at 0, 25, 50, 75, 100 % of ymax with their labels."""
    for i in range(5):
        frac = i / 4
        y = rounded(top + plot_h * (1 - frac))
        chart.items.append({"kind": "line", "x1": left, "y1": y, "x2": left + plot_w, "y2": y, "cls": "grid"})
        chart.items.append({"kind": "text", "x": left - 6, "y": rounded(y + 4), "text": f"{ymax * frac:g}", "anchor": "end", "cls": "tick"})
    if label:
        chart.items.append({"kind": "text", "x": 12, "y": rounded(top + plot_h / 2), "text": label, "anchor": "middle",
                            "cls": "axis", "rotate": True})


def round_keys(rounds: dict[str, Any]) -> list[str]:
    return sorted((k for k in rounds if k.isdigit()), key=int)


# ------------------------------------------------------------------ scene timeline

# The event types a stimulus writes around a turn (runner events.jsonl, `t` in seconds).
_ONSET = "turn_start"
_OFFSET = "turn_end"


def span(row: dict[str, Any]) -> tuple[float, float] | None:
    """A record's window in seconds: its `window` (specs/schema/records.schema.json), or an
    event's or turn's own start/end; the one spelling each, never a guess at others."""
    w = row.get("window")
    if isinstance(w, (list, tuple)) and len(w) == 2:
        return float(w[0]), float(w[1])
    if isinstance(row.get("start"), (int, float)) and isinstance(row.get("end"), (int, float)):
        return float(row["start"]), float(row["end"])
    return None


def scene_turns(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Realised turns from events.jsonl: `turn_start` / `turn_end` pairs by `turn`."""
    open_: dict[Any, dict[str, Any]] = {}
    turns: list[dict[str, Any]] = []
    for e in events:
        kind = e.get("type")
        key = e.get("turn")
        if kind == _ONSET:
            open_[key] = {**e, "start": float(e.get("t", 0.0))}
        elif kind == _OFFSET and key in open_:
            turn = open_.pop(key)
            turn["end"] = float(e.get("t", turn["start"]))
            turns.append(turn)
    return sorted(turns, key=lambda x: x["start"])


def speech_episodes(events: list[dict[str, Any]], records: list[dict[str, Any]],
                    judged: Callable[[dict[str, Any]], list[tuple[float, float]]] | None = None,
                    ) -> list[tuple[float, float]]:
    """The model's speech episodes the records judged: each record's `speech` (specs/schema/
    records.schema.json) and what `judged` (the family's `record_speech`) reads from a record
    in its own spelling. events.jsonl holds no speech of the model: VAD runs at scoring."""
    out: list[tuple[float, float]] = []
    for r in records:
        if judged is not None:
            out.extend((float(s), float(e)) for s, e in judged(r))
        for ep in r.get("speech") or []:
            if isinstance(ep, (list, tuple)) and len(ep) == 2:
                out.append((float(ep[0]), float(ep[1])))
    return sorted(set(out))


def passed(row: dict[str, Any]) -> bool | None:
    """A record's pass/fail: its `passed` (true, false; null or absent: no verdict of its own).
    Never read from the outcome's word: the words are the family's (Benchmark.outcomes), and one
    word can pass under one reading and fail under another."""
    value = row.get("passed")
    return value if isinstance(value, bool) else None
