"""An MTR-DuplexBench job of a run: dialogues -> scored rounds -> items (forked or replayed) -> scores.

Mirrors the Duplex-MPE path in execute.py. How round k's history reaches the model
(docs/mtr.md, "Context consistency") is recorded in context.json and results.json:
`fork` (teacher forcing, snapshot per round: linear), `replay` (teacher forcing, a fresh
session per round: quadratic, same bytes), `history-as-heard` (no teacher forcing: the
model's own replies are its history; flagged, not comparable).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from duplexeval.io import atomic_write_json
from duplexeval.mtr.items import context_mode, item_factories, load_dialogues, scored_rounds
from duplexeval.mtr.score import judges_for, score_bench_dir, write_rounds_file
from duplexeval.runner import run_items
from duplexeval.runner.fork import run_forked_items
from duplexeval.runs.job_files import write_job_files

HISTORY_FLAG = ("history as heard: the model lacks teacher_forcing, so its own earlier replies are its context; "
                "not comparable with teacher-forced results")


def context_record(mode: str) -> dict[str, Any]:
    return {"mode": mode, "teacher_forcing": mode in ("fork", "replay"),
            "flag": HISTORY_FLAG if mode == "history-as-heard" else None}


def run_mtr_job(job, bench_dir: Path, *, clock: str, seed: int, cache_mode: str, limit: int | None,
                progress: Callable[[str], None]) -> dict[str, Any]:
    bench = job.bench
    mode = context_mode(bench, list(job.model.data.get("capabilities", [])), clock)
    if mode == "skip":
        raise NotImplementedError(f"model {job.model.id} lacks teacher_forcing and the spec says skip")
    judges = judges_for(bench, cache_mode)
    from duplexeval.mtr.datasets import DatasetUnavailable

    try:
        dialogues = load_dialogues(bench, limit)
    except DatasetUnavailable as exc:  # offline, or a licensed corpus not supplied: the job is not run, the run goes on
        raise NotImplementedError(str(exc)) from None
    scored = scored_rounds(bench, dialogues, judges)
    if not scored:
        raise NotImplementedError(f"benchmark {bench['id']}: no rounds selected from {len(dialogues)} dialogues")
    bench_dir.mkdir(parents=True, exist_ok=True)
    write_job_files(bench_dir, job, bench)
    write_rounds_file(bench_dir, scored)
    context = context_record(mode)
    atomic_write_json(bench_dir / "context.json", context)
    groups = item_factories(bench, scored, teacher_forcing=context["teacher_forcing"])
    n_items = len(scored)
    started = time.monotonic()

    def on_item(result) -> None:
        state = "skipped (done)" if result.skipped else result.status
        reason = f": {result.reason}" if result.reason else ""
        progress(f"  {result.item_id} {state}{reason} [{time.monotonic() - started:.0f} s]")

    rate = int(bench["audio"]["rate"])
    progress(f"  {n_items} rounds from {len(dialogues)} dialogues, context {mode}")
    if mode == "fork":
        run_forked_items(job.runner_model, groups, bench_dir, clock, rate=rate, seed=seed, on_item=on_item)
    else:
        run_items(job.runner_model, [i for _, items in groups for i in items], bench_dir, clock, rate=rate, seed=seed,
                  on_item=on_item)
    progress("  scoring")
    return score_bench_dir(bench_dir, bench, judges, context=context, progress=getattr(progress, "scoring", None))
