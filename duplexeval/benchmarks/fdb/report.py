"""Full-Duplex-Bench's part of the report: the v1.0 table as the authors publish it, the rows of
this run beside it, and per task every metric with the ASR engine that made its words.

The ASR moves Full-Duplex-Bench's scores (their turn-over rate counts words), so the engine
that transcribed a row (results.json `asr_engine`) is printed beside that row in every table
and in each of our cells' notes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from duplexeval.benchmarks.fdb.published import PAPER_TABLES
from duplexeval.reports.paper_tables import build_all
from duplexeval.reports.sections import ReportSection, SectionInputs
from duplexeval.runfolder.incomplete import marked
from duplexeval.runfolder.run_dir import ResultFile

TEMPLATES = Path(__file__).parent / "templates"
TASK_ORDER = ("fdb-pause-synthetic", "fdb-pause-candor", "fdb-backchannel", "fdb-smooth-turn-taking",
              "fdb-user-interruption")
METRIC_ORDER = ("tor", "frequency", "jsd", "latency_s", "relevance")


def _order(bench: str) -> tuple[int, str]:
    return (TASK_ORDER.index(bench) if bench in TASK_ORDER else len(TASK_ORDER), bench)


def task_tables(results: list[ResultFile]) -> list[dict[str, Any]]:
    """Per task: model x metric, each a rate with its numerator/denominator, the ASR engine beside it."""
    out = []
    for bench in sorted({r.benchmark for r in results}, key=_order):
        mine = [r for r in results if r.benchmark == bench]
        names = {k for r in mine for k, v in r.metrics().items() if isinstance(v, dict)}
        metrics = [k for k in METRIC_ORDER if k in names] + sorted(names - set(METRIC_ORDER))
        rows = [{"model": r.model, "asr": r.data.get("asr_engine") or "?", "judges": r.data.get("judges") or {},
                 "cells": {k: marked(r.data, k, r.metrics().get(k), r.metrics()) for k in metrics}} for r in mine]
        task = mine[0].data.get("task", "")
        out.append({"benchmark": bench, "task": task, "subset": mine[0].data.get("subset", ""),
                    "metrics": metrics, "rows": rows})
    return out


def with_asr(tables: list[dict[str, Any]], results: list[ResultFile]) -> list[dict[str, Any]]:
    """Our cells of the paper tables, each noting the ASR engine of the results it came from."""
    engines = {(r.model, r.benchmark): r.data.get("asr_engine") or "?" for r in results}
    for t in tables:
        used = set()
        for row in t["ours"]:
            for c in row.cells:
                if c and c.get("link"):
                    engine = engines.get((c["link"]["model"], c["link"]["benchmark"]), "?")
                    used.add(f"{row.model}: {engine}")
                    if f"ASR {engine}" not in (c.get("note") or ""):
                        c["note"] = "; ".join(x for x in (f"ASR {engine}", c.get("note")) if x)
        if used:
            t["note"] = " ".join(x for x in (t.get("note"), "ASR of this run's rows: " + ", ".join(sorted(used)) + ".") if x)
    return tables


def item_view(bench_dir: Path, item_id: str) -> dict[str, Any] | None:
    """A sample on its recording's axis: the annotated spans (the pause, the context and the
    interrupting turn) and, for the tasks with a latency, the window from its anchor to the end."""
    import json

    try:
        data = json.loads((Path(bench_dir) / "samples.json").read_text("utf-8"))
    except (OSError, ValueError):
        return None
    sample = next((s for s in data.get("samples", []) if isinstance(s, dict) and s.get("id") == item_id), None)
    if sample is None:
        return None
    ann, end = sample.get("annotation") or [], float(sample.get("input_duration_s") or 0.0)
    first = ann[0] if ann and isinstance(ann[0], dict) else {}
    stamp = first.get("timestamp") or [None, None]
    turns: list[dict[str, Any]] = []
    window = None
    task = data.get("task")
    if task == "pause":
        turns = [{"start": float(a["timestamp"][0]), "end": float(a["timestamp"][1]), "speaker": "user",
                  "label": "pause", "text": a.get("text")} for a in ann if isinstance(a, dict)]
    elif task == "smooth-turn-taking" and stamp[0] is not None:
        window = [float(stamp[0]), end]
    elif task == "user-interruption" and stamp[1] is not None:
        turns = [{"start": float(stamp[0]), "end": float(stamp[1]), "speaker": "user", "label": "interruption",
                  "text": first.get("interrupt")}]
        window = [float(stamp[1]), end]
    return {"turns": turns, "window": window}


def sections(inputs: SectionInputs) -> list[ReportSection]:
    results = inputs.results
    data = {"tasks": task_tables(results),
            "paper_tables": with_asr(build_all(PAPER_TABLES, inputs.papers, inputs.run, results), results)}
    return [ReportSection(family="full-duplex-bench", id="fdb", title="Full-Duplex-Bench v1.0", data=data,
                          template_dir=TEMPLATES,
                          templates={"headline.html": "headline.html.j2", "headline.tex": "headline.tex.j2",
                                     "papers.html": "_papers.html.j2", "papers.tex": "_papers.tex.j2"})]
