"""Run a planned suite: each job cut into work units, the units played by an executor, each job scored, a summary.

Every stage writes files (docs/architecture.md), so an interrupted run resumes where it
stopped: finished units are skipped, scoring is cheap and re-done. Which executor plays
the units (serial, local processes, Ray) changes no recorded byte (docs/runner.md).
Nothing here names a benchmark: each job's plan, and the outputs a benchmark adds after
the run, come from the plug-in of its spec's family (duplexeval/benchmarks/).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from duplexeval.benchmarks import benchmark_for
from duplexeval.executors.base import CannotRun, JobPlan
from duplexeval.io import atomic_write_json
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


def plan_job(job: Job, bench_dir: Path, *, clock: str, seed: int, cache_mode: str, limit: int | None) -> JobPlan:
    """The job's work units, from its family's plug-in (duplexeval/benchmarks/); CannotRun says why it cannot run."""
    if clock not in job.model.data["clocks"]:
        raise CannotRun(f"model {job.model.id} does not support the {clock} clock")
    family = benchmark_for(job.bench, job.benchmark.path)
    limit = min((n for n in (limit, job.limit) if n is not None), default=None)
    plan = family.plan(job, bench_dir, clock=clock, seed=seed, cache_mode=cache_mode, limit=limit)
    plan.units()  # loads the data now: a job whose data is missing is "not run" before anything starts
    return plan


def execute(jobs: list[Job], run_dir: Path, *, clock: str, seed: int, cache_mode: str,
            limit: int | None = None, progress: Progress = print, pool: Any = None) -> list[JobOutcome]:
    """Plans every job, plays their units on `pool` (default: serial), scores each job, writes the summary."""
    from duplexeval.executors import make_pool, run_plans

    families = {job.key: benchmark_for(job.bench, job.benchmark.path) for job in jobs}  # no plug-in: fail before any unit
    if pool is None:
        pool = make_pool("serial", run_dir, scoring_progress=getattr(progress, "scoring", None))
    outcomes: dict[str, JobOutcome] = {}
    plans: list[JobPlan] = []
    try:
        for n, job in enumerate(jobs, 1):
            bench_dir = job_dir(run_dir, job)
            progress(f"[{n}/{len(jobs)}] {job.key}")
            try:
                plan = plan_job(job, bench_dir, clock=clock, seed=seed, cache_mode=cache_mode, limit=limit)
            except CannotRun as exc:
                progress(f"  not run: {exc.reason}")
                outcomes[job.key] = JobOutcome(job, "not-run", exc.reason, None, bench_dir)
                continue
            plan.prepare()
            progress(plan.summary())
            plans.append(plan)
    except BaseException:
        pool.close()
        raise
    results = run_plans(plans, pool, run_dir, progress)
    for plan in plans:
        outcomes[plan.key] = JobOutcome(plan.job, "scored", None, results[plan.key], job_dir(run_dir, plan.job))
    ordered = [outcomes[j.key] for j in jobs]
    for family in dict.fromkeys(families.values()):  # outputs per benchmark, not per model (e.g. a reference row)
        family.after_run(run_dir, [j for j in jobs if families[j.key] is family], cache_mode=cache_mode, limit=limit,
                         progress=progress)
    atomic_write_json(run_dir / "summary.json", summary(run_dir, ordered))
    seal_manifest(run_dir)  # manifest.json records the sha256 of every results file
    return ordered


def summary(run_dir: Path, outcomes: list[JobOutcome]) -> dict[str, Any]:
    return {
        "schema": "duplexeval.summary/1",
        "jobs": [{"model": o.job.model.id, "benchmark": o.job.benchmark.id, "status": o.status, "reason": o.reason,
                  "results": str((o.bench_dir / "results.json").relative_to(run_dir)) if o.results else None}
                 for o in outcomes],
    }
