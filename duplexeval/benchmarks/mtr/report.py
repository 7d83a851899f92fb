"""MTR-DuplexBench's part of the report: the main table (models x dialogue features, round 1
-> rounds 1-N), the combination ablation, the other dimensions, per-round curves, every
metric per round, and the paper's main table and ablation as published beside our rows.

The shared report code (duplexeval/reports) draws the page; everything that knows what a
round, a feature or a combination is lives here.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from duplexeval.reports.headline import headline_metrics
from duplexeval.reports.paper_tables import Column, PaperTable, build_all
from duplexeval.reports.published import Published
from duplexeval.reports.sections import ReportSection, SectionInputs
from duplexeval.runfolder.incomplete import marked
from duplexeval.runfolder.run_dir import ResultFile

TEMPLATES = Path(__file__).parent / "templates"
PAPER = "mtr-duplexbench"

MTR_FEATURES = (("smooth-turn-taking", "Smooth turn-taking"), ("interruption", "Interruption"),
                ("pause-handling", "Pause handling"), ("background-speech", "Background speech"),
                ("backchannel", "Backchannel"))
MTR_COMBOS = (("combo-s", "S"), ("combo-si", "S+I"), ("combo-sip", "S+I+P"), ("combo-sipb", "S+I+P+B"))
MTR_OTHER = (("quality", "Dialogue quality"), ("instruction", "Instruction following"), ("safety", "Safety"),
             ("safety-interruption", "Safety (interruption)"))


def mtr_table(results: list[ResultFile]) -> list[dict[str, Any]]:
    """Results with per-round metrics: round 1 -> the 1-N mean, as MTR prints them."""
    out = []
    for r in results:
        rounds = r.rounds()
        if not rounds:
            continue
        keys = sorted(rounds, key=lambda k: (0, int(k)) if k.isdigit() else (1, k))
        metrics = sorted({m for k in keys for m in rounds[k] if isinstance(rounds[k][m], dict)})
        rounds = {k: {m: (marked(r.data, m, v, t) if isinstance(v, dict) else v) for m, v in t.items()}
                  for k, t in rounds.items()}
        out.append({"model": r.model, "benchmark": r.benchmark, "round_keys": keys, "metrics": metrics, "rounds": rounds,
                    "mean_key": next((k for k in keys if "-" in k), None)})
    return out


def _mtr_cell(r: ResultFile, pub: Published, metric: str) -> dict[str, Any] | None:
    """One dimension's `metric` at round 1 and over rounds 1-N, each with the units it lost to errors."""
    rounds = r.rounds()
    mean_key = next((k for k in sorted(rounds) if "-" in k), None)
    first, mean_table = rounds.get("1") or {}, (rounds.get(mean_key) or {}) if mean_key else {}
    r1 = marked(r.data, metric, first.get(metric), first)
    mean = marked(r.data, metric, mean_table.get(metric), mean_table)
    latency, no_resp = mean_table.get("latency_s"), mean_table.get("no_response")
    unit = (mean or r1 or {}).get("unit")
    return {"metric": metric, "r1": r1, "mean": mean, "unit": unit, "mean_key": mean_key,
            "model": r.model, "benchmark": r.benchmark,
            "latency": latency if isinstance(latency, dict) else None,
            "no_response": no_resp if isinstance(no_resp, dict) else None,
            "pub_r1": pub.get(r.model, r.benchmark, metric, "1"),
            "pub_mean": pub.get(r.model, r.benchmark, metric, mean_key)}


def mtr_cells(r: ResultFile, pub: Published) -> list[dict[str, Any]]:
    """A cell per headline metric of the dimension's spec (`report.headline`), in its order."""
    rounds = r.rounds()
    if not rounds:
        return []
    mean_key = next((k for k in sorted(rounds) if "-" in k), None)
    table = rounds.get("1") or rounds.get(mean_key or "", {}) or r.metrics()
    return [c for c in (_mtr_cell(r, pub, m) for m in headline_metrics(r, table)) if c is not None]


def mtr_main(results: list[ResultFile], pub: Published) -> dict[str, Any]:
    """MTR-DuplexBench's main table: models x dialogue features, "round 1 -> rounds 1-N", latency;
    the combination ablation (S, S+I, S+I+P, S+I+P+B); the other dimensions per model."""
    by = {(r.model, r.benchmark): r for r in results if r.rounds()}
    models = sorted({m for m, _ in by})

    def table(spec: tuple[tuple[str, str], ...]) -> dict[str, Any]:
        cols = [(f"mtr-{key}", label) for key, label in spec if any((m, f"mtr-{key}") in by for m in models)]
        rows = []
        for m in models:
            many = {b: mtr_cells(by[(m, b)], pub) if (m, b) in by else [] for b, _ in cols}
            cells = {b: (v[0] if v else None) for b, v in many.items()}
            if any(cells.values()):
                pubs = [p for v in many.values() for c in v for p in (c["pub_r1"], c["pub_mean"]) if p]
                rows.append({"model": m, "cells": cells, "headlines": many, "published": bool(pubs),
                             "golden_source": ", ".join(sorted({str(p["paper"]) for p in pubs})),
                             "timing": any(c and (c["latency"] or c["no_response"]) for c in cells.values())})
        return {"columns": [{"id": b, "label": label} for b, label in cols], "rows": rows}

    return {"features": table(MTR_FEATURES), "ablation": table(MTR_COMBOS), "other": table(MTR_OTHER)}


def _success(bench: str, rounds: str, group: str, label: str) -> Column:
    return Column(label, {"benchmark": bench, "metric": "success", "rounds": rounds}, group=group, decimals=1,
                  percent=True)


_MAIN = tuple(_success(f"mtr-{key}", rounds, label, "round 1" if rounds == "1" else "rounds 1-10")
              for key, label in MTR_FEATURES[:4] for rounds in ("1", "1-10"))
_ABLATION = tuple(_success(f"mtr-{key}", "1-10", "success, rounds 1-10", label) for key, label in MTR_COMBOS)
PAPER_TABLES = (
    PaperTable("paper-mtr-main", "MTR-DuplexBench main table — success %, round 1 and rounds 1-10", PAPER,
               ("主实验 (main table)",), _MAIN),
    PaperTable("paper-mtr-ablation", "MTR-DuplexBench combination ablation — success %, rounds 1-10", PAPER,
               ("消融实验 (combination ablation)",), _ABLATION,
               note="The paper's ablation rows are Moshi's, one per combination; here one row per model."),
)


@lru_cache(maxsize=64)
def _rounds_file(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def item_view(bench_dir: Path, item_id: str) -> dict[str, Any] | None:
    """An MTR item (one round of a dialogue) on its recording's time axis: the user turns of
    this round and the rounds before it, and the earlier rounds' assistant replies (the
    context the model was given; the scored round's reply is the model's own), from
    rounds.json, whose times are on the recording's axis; and the round's response window.
    events.jsonl holds only round_start, so without this the item view is empty."""
    rounds = _rounds_file(Path(bench_dir) / "rounds.json")
    me = rounds.get(item_id)
    if not isinstance(me, dict):
        return None
    number = (me.get("round") or {}).get("round") or 0
    turns = []
    for other in rounds.values():
        r = other.get("round") if isinstance(other, dict) else None
        if other.get("dialogue") != me.get("dialogue") or not isinstance(r, dict) or (r.get("round") or 0) > number:
            continue
        for speaker, label in (("user", f"U{r.get('round')}"), ("assistant", f"A{r.get('round')} (context)")):
            if speaker == "assistant" and (r.get("round") or 0) == number:
                continue  # the scored round's reply is the model's own, not the dataset's
            t = r.get(speaker)
            if isinstance(t, dict) and isinstance(t.get("start"), (int, float)) and isinstance(t.get("end"), (int, float)):
                turns.append({"start": float(t["start"]), "end": float(t["end"]), "speaker": speaker, "label": label,
                              "text": t.get("text")})
    window = me.get("window") or {}
    start, end = window.get("start_s"), window.get("end_s")
    span = [float(start), float(end)] if isinstance(start, (int, float)) and isinstance(end, (int, float)) else None
    return {"turns": sorted(turns, key=lambda t: t["start"]), "window": span}


def sections(inputs: SectionInputs) -> list[ReportSection]:
    from duplexeval.benchmarks.mtr.report_charts import feature_curves, round_curves
    from duplexeval.benchmarks.mtr.report_latex import (
        latex_mtr_cell,
        latex_mtr_latency,
        latex_mtr_no_response,
        latex_mtr_value,
        latex_pct,
    )

    results = inputs.results
    data = {"mtr": mtr_table(results), "mtr_main": mtr_main(results, inputs.published),
            "feature_curves": feature_curves(results),
            "curves": [c for c in (round_curves(r) for r in results) if c is not None],
            "paper_tables": build_all(PAPER_TABLES, inputs.papers, inputs.run, results)}
    names = ("headline.html", "notes.html", "charts.html", "details.html", "headline.tex", "details.tex")
    return [ReportSection(family="mtr-duplexbench", id="mtr", title="MTR-DuplexBench", data=data,
                          template_dir=TEMPLATES,
                          templates={**{n: f"{n}.j2" for n in names},
                                     "papers.html": "_papers.html.j2", "papers.tex": "_papers.tex.j2"},
                          filters={".tex": {"pct": latex_pct, "mtrcell": latex_mtr_cell, "mtrvalue": latex_mtr_value,
                                            "mtrlatency": latex_mtr_latency,
                                            "mtrnoresponse": latex_mtr_no_response}})]
