"""Duplex-MPE's charts: Start vs presence, Stop over eligible vs all N4, one scene's timeline
(geometry only; the shared svg macro draws them)."""

from __future__ import annotations

from typing import Any

from duplexeval.reports.charts import (
    Chart,
    axis,
    passed,
    rounded,
    scene_turns,
    span,
    speech_episodes,
)
from duplexeval.runfolder.run_dir import ResultFile


def record_span(rec: dict[str, Any]) -> tuple[float, float] | None:
    """A record's window: the shared spellings, else a Stop record's N4 turn (its `n4r_start`
    and `n4r_end`: the window in which yielding is judged)."""
    s = span(rec)
    if s is None and rec.get("metric") == "stop" and isinstance(rec.get("n4r_start"), (int, float)):
        end = rec.get("n4r_end")
        s = (float(rec["n4r_start"]), float(end if isinstance(end, (int, float)) else rec["n4r_start"]))
    return s


def judged_speech(rec: dict[str, Any]) -> list[tuple[float, float]]:
    """The model speech an Answer record judged: its response episode, written as its `window`."""
    s = span(rec) if rec.get("metric") == "answer" else None
    return [s] if s else []


def _group_ticks(chart: Chart, r: ResultFile, x: float, baseline: float) -> None:
    """A bar group's two tick lines under the axis: the model, then its condition (or benchmark)."""
    for dy, text in ((16, r.model), (30, r.condition or r.benchmark)):
        chart.items.append({"kind": "text", "x": x, "y": baseline + dy, "text": text, "anchor": "middle", "cls": "tick"})


def _start_window(results: list[ResultFile]) -> str:
    """Start's window as the runs' specs set it (metrics.start.window_s), for the legend."""
    windows = {(r.spec_snapshot() or {}).get("metrics", {}).get("start", {}).get("window_s") for r in results}
    return f"{windows.pop():g} s" if len(windows) == 1 and None not in windows else "the spec's window"


def start_presence_bars(results: list[ResultFile]) -> Chart | None:
    """Start vs response presence, one pair of bars per model x condition.

    Presence without Start is the Freeze-Omni pathology (already speaking at T end), so
    the two are drawn side by side rather than in separate tables.
    """
    entries = [r for r in results if {"start", "presence"} <= set(r.metrics())]
    if not entries:
        return None
    left, top, plot_h, group_w, bar_w = 56, 30, 200, 90, 30
    width = left + group_w * len(entries) + 20
    chart = Chart(width=width, height=top + plot_h + 70, title="Start vs response presence")
    axis(chart, left, top, plot_h, group_w * len(entries), label="rate")
    for i, r in enumerate(entries):
        x0 = left + i * group_w + 12
        for j, (name, cls) in enumerate((("start", "bar-start"), ("presence", "bar-presence"))):
            m = r.metrics()[name]
            value = m.get("value")
            if value is None and m.get("denominator"):
                value = (m.get("numerator") or 0) / m["denominator"]
            value = float(value or 0.0)
            h = rounded(plot_h * max(0.0, min(1.0, value)))
            x = x0 + j * (bar_w + 4)
            chart.items.append({"kind": "rect", "x": x, "y": rounded(top + plot_h - h), "w": bar_w, "h": h, "cls": cls,
                                "tip": f"{r.model} {r.condition or r.benchmark} {name} = {value:.4f} "
                                       f"({m.get('numerator')}/{m.get('denominator')})"})
            chart.items.append({"kind": "text", "x": rounded(x + bar_w / 2), "y": rounded(top + plot_h - h - 4),
                                "text": f"{value:.2f}", "anchor": "middle", "cls": "val"})
        _group_ticks(chart, r, rounded(x0 + bar_w + 2), top + plot_h)
    chart.legend = [{"cls": "bar-start", "text": f"Start (fresh onset within {_start_window(entries)})"},
                    {"cls": "bar-presence", "text": "presence (fresh + already speaking)"}]
    return chart


def stop_yield_bars(results: list[ResultFile]) -> Chart | None:
    """Stop over eligible N4 events vs the yield rate over all N4 events, per model x condition.

    A high Stop on a handful of eligible events says little; the yield rate over all N4
    shows how often the situation arose at all (Duplex-MPE §4.4)."""
    entries = []
    for r in results:
        stop = r.metrics().get("stop")
        if not isinstance(stop, dict) or "numerator" not in stop:
            continue
        n4 = stop.get("n4_events")
        allrate = (stop["numerator"] / n4) if n4 else None
        elig = stop.get("denominator")
        entries.append((r, (stop["numerator"] / elig) if elig else None, stop, allrate, n4))
    if not entries:
        return None
    left, top, plot_h, group_w, bar_w = 56, 30, 160, 90, 30
    chart = Chart(width=left + group_w * len(entries) + 20, height=top + plot_h + 70, title="Stop (eligible N4) vs yield over all N4")
    axis(chart, left, top, plot_h, group_w * len(entries), label="rate")
    for i, (r, stop_rate, stop, allrate, n4) in enumerate(entries):
        x0 = left + i * group_w + 12
        for j, (value, cls, tip) in enumerate(((stop_rate, "bar-start", f"Stop {stop['numerator']}/{stop.get('denominator')} eligible"),
                                               (allrate, "bar-presence", f"yields {stop['numerator']}/{n4} all N4"))):
            v = float(value or 0.0)
            h = rounded(plot_h * max(0.0, min(1.0, v)))
            x = x0 + j * (bar_w + 4)
            chart.items.append({"kind": "rect", "x": x, "y": rounded(top + plot_h - h), "w": bar_w, "h": h, "cls": cls,
                                "tip": f"{r.model} {r.condition or r.benchmark} {tip}"})
            chart.items.append({"kind": "text", "x": rounded(x + bar_w / 2), "y": rounded(top + plot_h - h - 4),
                                "text": "–" if value is None else f"{v:.2f}", "anchor": "middle", "cls": "val"})
        _group_ticks(chart, r, rounded(x0 + bar_w + 2), top + plot_h)
    chart.legend = [{"cls": "bar-start", "text": "Stop (yields / eligible)"},
                    {"cls": "bar-presence", "text": "yield rate over all N4"}]
    return chart


def scene_timeline(item_id: str, events: list[dict[str, Any]], records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Turns (with labels), the model's speech episodes and each window's verdict."""
    turns = scene_turns(events)
    episodes = speech_episodes(events, records, judged_speech)
    windows = [{**r, "span": record_span(r), "passed": passed(r)} for r in records if record_span(r)]
    ends = [t["end"] for t in turns] + [e for _, e in episodes] + [w["span"][1] for w in windows]
    if not turns and not episodes and not windows:
        return None
    duration = max(ends + [1.0])
    left, width = 70, 1100
    scale = (width - left - 20) / duration
    x = lambda s: rounded(left + s * scale)  # noqa: E731
    lanes = {"turns": 30, "model": 80, "verdicts": 120}
    items: list[dict[str, Any]] = []
    for t in turns:
        label = str(t.get("label", ""))
        items.append({"kind": "rect", "x": x(t["start"]), "y": lanes["turns"], "w": rounded(max(1.0, (t["end"] - t["start"]) * scale)),
                      "h": 30, "cls": f"turn turn-{label.lower() or 'none'}",
                      "tip": f"{t.get('speaker', '')} {label} {t['start']:.2f}-{t['end']:.2f} s: {t.get('text', '')}"})
        items.append({"kind": "text", "x": rounded(x(t["start"]) + 3), "y": lanes["turns"] + 19,
                      "text": f"{t.get('speaker', '')} {label}".strip(), "anchor": "start", "cls": "turn-label"})
    for s, e in episodes:
        items.append({"kind": "rect", "x": x(s), "y": lanes["model"], "w": rounded(max(1.0, (e - s) * scale)), "h": 22,
                      "cls": "episode", "tip": f"model speech {s:.2f}-{e:.2f} s"})
    for w in windows:
        s, e = w["span"]
        verdict = {True: "pass", False: "fail", None: "n/a"}[w["passed"]]
        items.append({"kind": "rect", "x": x(s), "y": lanes["verdicts"], "w": rounded(max(1.0, (e - s) * scale)), "h": 22,
                      "cls": f"verdict verdict-{verdict.replace('/', '')}",
                      "tip": f"{w.get('metric', '')} {w.get('label', '')} {verdict}: {w.get('reason', '')}"})
    for i in range(int(duration // 10) + 1):
        items.append({"kind": "line", "x1": x(10 * i), "y1": 22, "x2": x(10 * i), "y2": 150, "cls": "grid"})
        items.append({"kind": "text", "x": x(10 * i), "y": 166, "text": f"{10 * i} s", "anchor": "middle", "cls": "tick"})
    for name, y in (("turns", lanes["turns"] + 19), ("model", lanes["model"] + 15), ("verdicts", lanes["verdicts"] + 15)):
        items.append({"kind": "text", "x": left - 8, "y": y, "text": name, "anchor": "end", "cls": "axis"})
    chart = Chart(width=width, height=180, title=f"Scene timeline: {item_id}", items=items)
    chart.legend = [{"cls": "turn turn-t", "text": "T turn"}, {"cls": "turn turn-n1", "text": "N1/N2/N3"},
                    {"cls": "turn turn-n4q", "text": "N4Q/N4R"}, {"cls": "episode", "text": "model speech"},
                    {"cls": "verdict verdict-pass", "text": "window passed"}, {"cls": "verdict verdict-fail", "text": "window failed"}]
    return {"item": item_id, "chart": chart, "turns": turns, "episodes": episodes, "windows": windows}
