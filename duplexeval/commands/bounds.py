"""Bounds and conflicts of command-line options, checked before anything runs (issue 25).

Every number a user gives is finite and in range, a run id is a name (never a path), a
job count cannot start hundreds of model servers on two cores, and two options that
cannot both hold are refused with both names instead of one being silently dropped.
Each check raises click.BadParameter / UsageError: exit 2, the option named.
"""

from __future__ import annotations

import os

import click

from duplexeval.cli_params import (
    NAME as RUN_ID,  # noqa: F401  (re-exported: the run id rule)
    Finite,
    name_option,
)

# Worker processes per core beyond which a local run only thrashes: each is a model server.
LOCAL_JOBS_PER_CORE = 8
MAX_JOBS = 1024  # Ray actors per model: a cluster can hold more than this machine's cores, not unboundedly
HARNESS_RATES = (8000, 96000)  # Hz of the recording; models declare their own rates, the harness resamples


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def run_id_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A run id names a folder inside --runs-dir: a plain name (duplexeval.cli_params.safe_name), never a path."""
    return name_option("run id")(ctx, param, value)


def finite(low: float | None = None, high: float | None = None, *, low_open: bool = False) -> Finite:
    """The click type of a float option: finite and within [low, high] (duplexeval.cli_params.Finite)."""
    return Finite(low, high, low_open=low_open)


def check_executor(executor: str, jobs: int, ray_address: str | None) -> None:
    """--jobs and --ray-address against --executor: conflicts refused, absurd counts refused, many warned."""
    if ray_address and executor != "ray":
        raise click.UsageError(f"--ray-address {ray_address} needs --executor ray, not --executor {executor}")
    if jobs != 1 and executor == "serial":
        raise click.UsageError(f"--jobs {jobs} needs --executor local or ray (--executor serial runs one model server)")
    if jobs > MAX_JOBS:
        raise click.BadParameter(f"{jobs} model servers at once is more than {MAX_JOBS}", param_hint="--jobs")
    n = cores()
    if executor == "local" and jobs > LOCAL_JOBS_PER_CORE * n:
        raise click.BadParameter(f"{jobs} local model servers on {n} core(s) (more than {LOCAL_JOBS_PER_CORE} a core) "
                                 f"would only thrash; use at most {LOCAL_JOBS_PER_CORE * n}", param_hint="--jobs")
    if executor == "local" and jobs > n:
        click.echo(f"warning: --jobs {jobs} is more than this machine's {n} core(s): the servers will share them",
                   err=True)


def check_backend(backend: str | None, endpoint: str | None) -> None:
    """--endpoint drives a server that already runs: a --backend that would start one contradicts it."""
    if endpoint and backend:
        raise click.UsageError(f"--endpoint {endpoint} drives a server that is already running; --backend {backend} "
                               "would start one: give one of them")
