"""MTR-DuplexBench's charts: per-round curves of one result, success per round per feature."""

from __future__ import annotations

from duplexeval.reports.charts import PALETTE, Chart, axis, round_keys, rounded
from duplexeval.runfolder.run_dir import ResultFile


def round_curves(result: ResultFile) -> Chart | None:
    """MTR per-round success curves (one line per metric); the 1-N mean as a dashed line."""
    rounds = result.rounds()
    keys = round_keys(rounds)
    if len(keys) < 2:
        return None
    metrics = sorted({m for k in keys for m, v in rounds[k].items() if isinstance(v, dict) and v.get("value") is not None
                      and 0 <= v["value"] <= 1})
    if not metrics:
        return None
    left, top, plot_h, plot_w = 56, 30, 180, 40 * len(keys)
    chart = Chart(width=left + plot_w + 40, height=top + plot_h + 50,
                  title=f"{result.model} / {result.benchmark}: per round")
    axis(chart, left, top, plot_h, plot_w, label="rate")
    step = plot_w / max(1, len(keys) - 1)
    for i, k in enumerate(keys):
        chart.items.append({"kind": "text", "x": rounded(left + i * step), "y": top + plot_h + 16, "text": k,
                            "anchor": "middle", "cls": "tick"})
    chart.items.append({"kind": "text", "x": rounded(left + plot_w / 2), "y": top + plot_h + 34, "text": "round",
                        "anchor": "middle", "cls": "axis"})
    mean_key = next((k for k in rounds if "-" in k), None)
    for n, metric in enumerate(metrics):
        color = PALETTE[n % len(PALETTE)]
        pts = []
        for i, k in enumerate(keys):
            v = (rounds[k].get(metric) or {}).get("value")
            if v is not None:
                pts.append(f"{rounded(left + i * step)},{rounded(top + plot_h * (1 - v))}")
        chart.items.append({"kind": "polyline", "points": " ".join(pts), "color": color})
        mean = (rounds.get(mean_key, {}).get(metric) or {}).get("value") if mean_key else None
        if mean is not None:
            y = rounded(top + plot_h * (1 - mean))
            chart.items.append({"kind": "line", "x1": left, "y1": y, "x2": left + plot_w, "y2": y, "cls": "mean",
                                "color": color})
        chart.legend.append({"color": color, "text": metric + (f" (dashed: mean {mean_key})" if mean is not None else "")})
    return chart


def feature_curves(results: list[ResultFile]) -> list[Chart]:
    """One chart per MTR benchmark: success per round, one line per model (the decay the paper reports)."""
    by_bench: dict[str, list[ResultFile]] = {}
    for r in results:
        if len(round_keys(r.rounds())) >= 2 and any(isinstance(v.get("success"), dict) for v in r.rounds().values()):
            by_bench.setdefault(r.benchmark, []).append(r)
    out = []
    for bench, rs in sorted(by_bench.items()):
        keys = sorted({k for r in rs for k in round_keys(r.rounds())}, key=int)
        left, top, plot_h, plot_w = 46, 26, 120, 26 * max(1, len(keys) - 1)
        chart = Chart(width=left + plot_w + 30, height=top + plot_h + 44, title=f"{bench}: success per round")
        axis(chart, left, top, plot_h, plot_w, label="")
        step = plot_w / max(1, len(keys) - 1)
        for i, k in enumerate(keys):
            chart.items.append({"kind": "text", "x": rounded(left + i * step), "y": top + plot_h + 14, "text": k,
                                "anchor": "middle", "cls": "tick"})
        for n, r in enumerate(sorted(rs, key=lambda x: x.model)):
            color = PALETTE[n % len(PALETTE)]
            pts = [f"{rounded(left + i * step)},{rounded(top + plot_h * (1 - v))}" for i, k in enumerate(keys)
                   if (v := ((r.rounds().get(k) or {}).get("success") or {}).get("value")) is not None]
            chart.items.append({"kind": "polyline", "points": " ".join(pts), "color": color})
            chart.legend.append({"color": color, "text": r.model})
        out.append(chart)
    return out
