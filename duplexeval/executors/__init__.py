"""Executors: how a run's work units reach model servers (docs/runner.md, "Executors").

- `serial`: one model server in this process, units in plan order (the reference);
- `local`: `--jobs N` worker processes on this machine, each with its own model server;
- `ray`: one Ray actor per model server on a Ray cluster, scoring as Ray tasks.

All three share the plan (executors/base.py), the claims (executors/claims.py) and the
scheduling loop (executors/core.py), so they write the same bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from duplexeval.executors.base import JobPlan, Unit, UnitReport, UnitWorker
from duplexeval.executors.claims import Claims
from duplexeval.executors.core import PlanFeed, UnitFailed, schedule

EXECUTORS = ("serial", "local", "ray")


def make_pool(name: str, run_dir: Path, *, jobs: int = 1, ray_address: str | None = None,
              scoring_progress: Callable[[int, int, str], None] | None = None) -> Any:
    """The pool of an executor; raises ValueError (naming the option) for what cannot be."""
    if name == "serial":
        if jobs != 1:
            raise ValueError(f"--jobs {jobs} needs --executor local or ray (serial runs one model server)")
        from duplexeval.executors.serial import SerialPool

        return SerialPool(scoring_progress)
    if ray_address and name != "ray":
        raise ValueError("--ray-address needs --executor ray")
    if name == "local":
        from duplexeval.executors.local import LocalPool

        return LocalPool(jobs, run_dir)
    if name == "ray":
        from duplexeval.executors.ray import RayPool

        return RayPool(jobs, run_dir, ray_address)
    raise ValueError(f"unknown executor {name!r}; choose one of {', '.join(EXECUTORS)}")


def run_plans(plans: list[JobPlan], pool: Any, run_dir: Path, progress: Callable[[str], None],
              feed: PlanFeed | None = None) -> dict[str, dict[str, Any]]:
    """Every unit of `plans` (and of the plans `feed` hands over) played and every job scored on
    `pool` (closed afterwards); results per job key."""
    try:
        return schedule(plans, pool, Claims(run_dir), progress, feed)
    finally:
        pool.close()


__all__ = ["EXECUTORS", "JobPlan", "Unit", "UnitReport", "UnitWorker", "UnitFailed", "make_pool", "run_plans"]
