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

_ONSET = {"turn_onset", "turn_start", "turn_begin"}
_OFFSET = {"turn_offset", "turn_end"}
_SPEECH_ON = {"model_speech_onset", "model_onset", "speech_onset", "episode_start"}
_SPEECH_OFF = {"model_speech_offset", "model_offset", "speech_offset", "episode_end"}


def span(row: dict[str, Any]) -> tuple[float, float] | None:
    """A window's [start, end] in seconds, from the spellings records may use."""
    w = row.get("window")
    if isinstance(w, (list, tuple)) and len(w) == 2:
        return float(w[0]), float(w[1])
    if isinstance(w, dict) and "start" in w and "end" in w:
        return float(w["start"]), float(w["end"])
    for a, b in (("start", "end"), ("t0", "t1"), ("window_start", "window_end")):
        if isinstance(row.get(a), (int, float)) and isinstance(row.get(b), (int, float)):
            return float(row[a]), float(row[b])
    return None


def scene_turns(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Realised turns from events.jsonl (onset/offset pairs, or one event with start/end)."""
    open_: dict[Any, dict[str, Any]] = {}
    turns: list[dict[str, Any]] = []
    for e in events:
        kind = e.get("type")
        key = e.get("turn", e.get("turn_id", e.get("index")))
        if kind == "turn" and span(e):
            s, t = span(e)
            turns.append({**e, "start": s, "end": t})
        elif kind in _ONSET:
            open_[key] = {**e, "start": float(e.get("t", 0.0))}
        elif kind in _OFFSET and key in open_:
            turn = open_.pop(key)
            turn["end"] = float(e.get("t", turn["start"]))
            turns.append(turn)
    return sorted(turns, key=lambda x: x["start"])


def speech_episodes(events: list[dict[str, Any]], records: list[dict[str, Any]],
                    judged: Callable[[dict[str, Any]], list[tuple[float, float]]] | None = None,
                    ) -> list[tuple[float, float]]:
    """The model's speech episodes: from events (onset/offset), records' `episodes` / `speech`,
    and what `judged` (the family's `record_speech`) reads from a record in its own spelling."""
    out: list[tuple[float, float]] = []
    start = None
    for e in events:
        if e.get("type") in _SPEECH_ON:
            start = float(e.get("t", 0.0))
        elif e.get("type") in _SPEECH_OFF and start is not None:
            out.append((start, float(e.get("t", start))))
            start = None
        elif e.get("type") == "episode" and span(e):
            out.append(span(e))
    for r in records:
        # Scoring records carry the speech they judged: a window's `speech`, or a spelling
        # of the family's own (`judged`).
        if judged is not None:
            out.extend((float(s), float(e)) for s, e in judged(r))
        for ep in (r.get("episodes") or []) + (r.get("speech") or []):
            if isinstance(ep, (list, tuple)) and len(ep) == 2:
                out.append((float(ep[0]), float(ep[1])))
            elif isinstance(ep, dict) and span(ep):
                out.append(span(ep))
    return sorted(set(out))


def passed(row: dict[str, Any]) -> bool | None:
    if isinstance(row.get("passed"), bool) or ("passed" in row and row["passed"] is None):
        return row["passed"]  # None: excluded (e.g. an event that was not eligible)
    outcome = row.get("outcome", row.get("verdict", row.get("pass")))
    if isinstance(outcome, bool):
        return outcome
    if isinstance(outcome, str):
        o = outcome.lower()
        if o in {"pass", "passed", "ok", "fresh", "yield", "correct", "success"}:
            return True
        if o in {"fail", "failed", "miss", "already_speaking", "incorrect", "intrusion"}:
            return False
    return None
