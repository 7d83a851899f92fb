"""Run a planned suite: each job cut into work units, the units played by an executor, each job scored, a summary.

Every stage writes files (docs/architecture.md), so an interrupted run resumes where it
stopped: finished units are skipped, scoring is cheap and re-done. Which executor plays
the units (serial, local processes, Ray) changes no recorded byte (docs/runner.md).
Nothing here names a benchmark: each job's plan, and the outputs a benchmark adds after
the run, come from the plug-in of its spec's family (duplexeval/benchmarks/).
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from duplexeval.benchmarks import benchmark_for
from duplexeval.executors.base import CannotRun, JobPlan
from duplexeval.io import atomic_write_json
from duplexeval.runfolder.plan import Job
from duplexeval.runfolder.verify import seal_manifest
from duplexeval.runs.statistics import write_statistics

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


def with_runner(jobs: list[Job], run_id: str, backend: str | None = None, endpoint: str | None = None,
                max_sessions: int | None = None) -> list[Job]:
    """Jobs whose model starts as this run asks (`--backend`, `--endpoint`, `--max-sessions`) and carries the run label.

    Raises ValueError (naming the model) when the spec cannot run that way.
    """
    from duplexeval.specs.modelspec import model_spec_from

    if endpoint and len({j.model.id for j in jobs}) > 1:
        raise ValueError(f"--endpoint names one server, but the plan has models {sorted({j.model.id for j in jobs})}; "
                         "narrow it with --models")
    return [replace(j, runner=replace(model_spec_from(j.model).with_backend(backend, endpoint)
                                      .with_max_sessions(max_sessions), run_id=run_id))
            for j in jobs]


def sessions_record(jobs: list[Job], cap: int | None) -> dict[str, Any]:
    """The manifest's `max_sessions`: the run's cap and the sessions each model's server holds."""
    return {"cap": cap, "models": {j.model.id: j.runner.max_sessions for j in jobs if j.runner is not None}}


def run_context(job: Job, clock: str) -> dict[str, Any] | None:
    """The manifest's `jobs[].context`: how the job's items reach its model on `clock`, where
    its family has a choice (the `run_context` hook); None where it has none."""
    model = job.model.data
    return benchmark_for(job.bench, job.benchmark.path).run_context(
        job.bench, capabilities=tuple(model.get("capabilities", [])), clock=clock)


def plan_job(job: Job, bench_dir: Path, *, clock: str, seed: int, cache_mode: str, limit: int | None) -> JobPlan:
    """The job's work units, from its family's plug-in (duplexeval/benchmarks/); CannotRun says why it cannot run."""
    clock = job.clock or clock
    if clock not in job.model.data["clocks"]:
        raise CannotRun(f"model {job.model.id} does not support the {clock} clock")
    family = benchmark_for(job.bench, job.benchmark.path)
    limit = min((n for n in (limit, job.limit) if n is not None), default=None)
    plan = family.plan(job, bench_dir, clock=clock, seed=seed, cache_mode=cache_mode, limit=limit)
    plan.units()  # loads the data now: a job whose data is missing is "not run" before anything starts
    return plan


def execute(jobs: list[Job], run_dir: Path, *, clock: str, seed: int, cache_mode: str,
            limit: int | None = None, progress: Progress = print, pool: Any = None) -> list[JobOutcome]:
    """Plans every job, plays their units on `pool` (default: serial), scores each job, writes the summary.

    A pool that plays units in other processes (`plans_ahead`: local, ray) starts on the
    first job's units while the later jobs are planned in a thread (Planner): a family whose plans
    render and segment dialogues (~30 s of `make reproduce`) would leave every
    worker idle. The serial pool plans every job first, as it always has.
    """
    from duplexeval.executors import make_pool, run_plans

    families = {job.key: benchmark_for(job.bench, job.benchmark.path) for job in jobs}  # no plug-in: fail before any unit
    if pool is None:
        pool = make_pool("serial", run_dir, scoring_progress=getattr(progress, "scoring", None))
    planner = Planner(jobs, run_dir, progress, clock=clock, seed=seed, cache_mode=cache_mode, limit=limit)
    if getattr(pool, "plans_ahead", False):
        planner.start()
        try:
            results = run_plans([], pool, run_dir, progress, feed=planner)
        finally:
            planner.stop()
    else:
        try:
            planner.run(echo=True)
            plans = planner.take(0)
        except BaseException:
            pool.close()
            raise
        results = run_plans(plans, pool, run_dir, progress)
    outcomes = dict(planner.not_run)
    for key, job_results in results.items():
        job = planner.jobs[key]
        outcomes[key] = JobOutcome(job, "scored", None, job_results, job_dir(run_dir, job))
    ordered = [outcomes[j.key] for j in jobs]
    for family in dict.fromkeys(families.values()):  # outputs per benchmark, not per model (e.g. a reference row)
        family.after_run(run_dir, [j for j in jobs if families[j.key] is family], cache_mode=cache_mode, limit=limit,
                         progress=progress)
    atomic_write_json(run_dir / "summary.json", summary(run_dir, ordered))
    write_statistics(run_dir)  # every family's statistics across the run's folders (statistics.json)
    seal_manifest(run_dir)  # manifest.json records the sha256 of every results file
    return ordered


class Planner(threading.Thread):
    """Plans jobs in order (plan_job, then the job folder's files) and hands each plan over.

    `run()` in the caller's thread plans all of them at once; `start()` plans in a thread
    while `take()` (executors/core.py's PlanFeed) hands over what is ready. Progress lines
    are queued with their plan and printed by `take`, in the caller's thread, so a job's
    header always precedes its units' lines. What planning raises is raised by `take`.
    """

    def __init__(self, jobs: list[Job], run_dir: Path, progress: Progress, **plan_kw: Any):
        super().__init__(name="duplexeval-planner", daemon=True)
        self.job_list, self.run_dir, self.progress, self.plan_kw = jobs, run_dir, progress, plan_kw
        self.jobs = {j.key: j for j in jobs}
        self.not_run: dict[str, JobOutcome] = {}
        self.done = False
        self._ready: queue.Queue = queue.Queue()
        self._stopping = threading.Event()

    def run(self, echo: bool = False) -> None:
        """Plans every job; `echo`: print progress at once (planning in the caller's thread)."""
        def say(lines: list[str]) -> list[str]:
            if not echo:
                return lines
            for line in lines:
                self.progress(line)
            return []

        try:
            for n, job in enumerate(self.job_list, 1):
                if self._stopping.is_set():
                    return
                bench_dir = job_dir(self.run_dir, job)
                lines = say([f"[{n}/{len(self.job_list)}] {job.key}"])
                try:
                    plan = plan_job(job, bench_dir, **self.plan_kw)
                except CannotRun as exc:
                    lines += say([f"  not run: {exc.reason}"])
                    self.not_run[job.key] = JobOutcome(job, "not-run", exc.reason, None, bench_dir)
                    self._ready.put((lines, None))
                    continue
                plan.prepare()
                self._ready.put((lines + say([plan.summary()]), plan))
        except BaseException as exc:
            self._ready.put(exc)
        finally:
            self._ready.put(None)

    def take(self, timeout: float | None) -> list[JobPlan]:
        """The plans ready now (`timeout` 0), or once at least one is (None: however long planning takes)."""
        plans: list[JobPlan] = []
        block = timeout != 0
        while not self.done:
            try:
                got = self._ready.get(block=block, timeout=None if timeout == 0 else timeout)
            except queue.Empty:
                break
            if got is None:
                self.done = True
            elif isinstance(got, BaseException):
                self.done = True
                raise got
            else:
                lines, plan = got
                for line in lines:
                    self.progress(line)
                if plan is not None:
                    plans.append(plan)
                    block = False  # one plan is enough to go on with; take the rest that are ready
        return plans

    def stop(self) -> None:
        """No further jobs are planned (the run stopped): the job being planned is finished first."""
        self._stopping.set()


def summary(run_dir: Path, outcomes: list[JobOutcome]) -> dict[str, Any]:
    return {
        "schema": "duplexeval.summary/1",
        "jobs": [{"model": o.job.model.id, "benchmark": o.job.benchmark.id, "status": o.status, "reason": o.reason,
                  "results": str((o.bench_dir / "results.json").relative_to(run_dir)) if o.results else None}
                 for o in outcomes],
    }
