"""Run a planned suite: each job's items through the runner, then scoring, then a summary.

Every stage writes files (docs/architecture.md), so an interrupted run resumes where it
stopped: finished items are skipped by the runner, scoring is cheap and re-done.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from duplexeval.io import atomic_write_json
from duplexeval.runner import run_items
from duplexeval.runs.job_files import write_job_files
from duplexeval.runs.plan import Job
from duplexeval.runs.verify import seal_manifest

Progress = Callable[[str], None]


@dataclass
class JobOutcome:
    job: Job
    status: str                     # "scored" | "not-run"
    reason: str | None
    results: dict[str, Any] | None
    bench_dir: Path


def job_dir(run_dir: Path, job: Job) -> Path:
    return run_dir / job.model.id / job.benchmark.id


def with_runner(jobs: list[Job], run_id: str, backend: str | None = None, endpoint: str | None = None) -> list[Job]:
    """Jobs whose model starts as this run asks (`--backend`, `--endpoint`) and carries the run label.

    Raises ValueError (naming the model) when the spec cannot run that way.
    """
    from duplexeval.runner.modelspec import model_spec_from

    if endpoint and len({j.model.id for j in jobs}) > 1:
        raise ValueError(f"--endpoint names one server, but the plan has models {sorted({j.model.id for j in jobs})}; "
                         "narrow it with --models")
    return [replace(j, runner=replace(model_spec_from(j.model).with_backend(backend, endpoint), run_id=run_id))
            for j in jobs]


def execute(jobs: list[Job], run_dir: Path, *, clock: str, seed: int, cache_mode: str,
            limit: int | None = None, progress: Progress = print) -> list[JobOutcome]:
    outcomes = []
    for n, job in enumerate(jobs, 1):
        bench_dir = job_dir(run_dir, job)
        progress(f"[{n}/{len(jobs)}] {job.key}")
        try:
            outcomes.append(_execute_job(job, bench_dir, clock=clock, seed=seed, cache_mode=cache_mode,
                                         limit=limit, progress=progress))
        except NotImplementedError as exc:
            progress(f"  not run: {exc}")
            outcomes.append(JobOutcome(job, "not-run", str(exc), None, bench_dir))
    for bench in _mpe_benchmarks(jobs):
        progress(f"text-only reference on {bench['id']} ({bench['judges']['text_reference']})")
        _text_reference(run_dir, bench, cache_mode, limit)
    atomic_write_json(run_dir / "summary.json", summary(run_dir, outcomes))
    seal_manifest(run_dir)  # manifest.json records the sha256 of every results file
    return outcomes


def _mpe_benchmarks(jobs: list[Job]) -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    for job in jobs:
        if job.bench["dimension"] == "mpe" and "text_reference" in job.bench["judges"]:
            seen.setdefault(job.bench["id"], job.bench)
    return list(seen.values())


def _text_reference(run_dir: Path, bench: dict[str, Any], cache_mode: str, limit: int | None) -> None:
    """Duplex-MPE's text-only reference row (§4.2): per benchmark, not per model."""
    from duplexeval.judges.cache import JudgeCache
    from duplexeval.judges.llm import load_judge
    from duplexeval.runs.mpe_items import load_bench_scenes
    from duplexeval.scoring.text_reference import write_text_reference

    judge_id = bench["judges"]["text_reference"]
    judge = load_judge(judge_id, JudgeCache(mode=cache_mode))
    write_text_reference(run_dir, bench, load_bench_scenes(bench, limit), judge, judge_id)


def _execute_job(job: Job, bench_dir: Path, *, clock: str, seed: int, cache_mode: str, limit: int | None,
                 progress: Progress) -> JobOutcome:
    dimension = job.bench["dimension"]
    if clock not in job.model.data["clocks"]:
        raise NotImplementedError(f"model {job.model.id} does not support the {clock} clock")
    if dimension.startswith("mtr-"):
        from duplexeval.runs.mtr_job import run_mtr_job

        results = run_mtr_job(job, bench_dir, clock=clock, seed=seed, cache_mode=cache_mode, limit=limit,
                              progress=progress)
        return JobOutcome(job, "scored", None, results, bench_dir)
    if dimension != "mpe":
        raise NotImplementedError(f"{dimension} dimensions are not wired into `run` yet")
    from duplexeval.runs.mpe_items import mpe_items
    from duplexeval.scoring.mpe_results import judges_from_spec, score_bench_dir

    write_job_files(bench_dir, job)
    items = mpe_items(job.bench, limit)
    started = time.monotonic()

    def on_item(result) -> None:
        done = sum(1 for _ in (bench_dir / "items").glob("*/status.json"))
        state = "skipped (done)" if result.skipped else result.status
        reason = f": {result.reason}" if result.reason else ""
        progress(f"  {done}/{len(items)} {result.item_id} {state}{reason} [{time.monotonic() - started:.0f} s]")

    run_items(job.runner_model, items, bench_dir, clock, rate=int(job.bench["audio"]["rate"]), seed=seed, on_item=on_item)
    progress("  scoring")
    results = score_bench_dir(bench_dir, job.bench, judges_from_spec(job.bench, cache_mode),
                              progress=getattr(progress, "scoring", None))  # a bar where the CLI gives one
    return JobOutcome(job, "scored", None, results, bench_dir)


def summary(run_dir: Path, outcomes: list[JobOutcome]) -> dict[str, Any]:
    return {
        "schema": "duplexeval.summary/1",
        "jobs": [{"model": o.job.model.id, "benchmark": o.job.benchmark.id, "status": o.status, "reason": o.reason,
                  "results": str((o.bench_dir / "results.json").relative_to(run_dir)) if o.results else None}
                 for o in outcomes],
    }
