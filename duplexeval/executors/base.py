"""Work units, job plans and the worker that plays units: what every executor shares.

A job (one model x one benchmark) is cut into **work units**: one item, or, for forked
and one-pass jobs, one group of items that share a session (runner/fork.py,
runner/one_pass.py). A unit writes only under its own item folders, so units of one job
can run on different model servers at once.
The driver plans units up front; a worker receives a unit together with its (small,
picklable) `JobPlan` and builds the unit's stimulus itself, so no audio or closure is
ever shipped between processes or nodes. The executor knows units and plans, never a
benchmark's name (each benchmark family's plan lives in its package, duplexeval/benchmarks/).
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from duplexeval.runner.fork import Group, play_group
from duplexeval.runner.items import ITEM_ID, ItemResult, ModelHost, finished_status, play_item, prepare_out_dir
from duplexeval.runner.unit_batch import UnitSession, play_units
from duplexeval.specs.modelspec import ModelSpec, model_spec_from


class CannotRun(Exception):
    """A job that cannot run here (a clock the model lacks, data not on this machine, a
    capability the spec requires): an outcome with a reason, recorded as "not-run" in the
    summary, never a crash. A plan raises it from its constructor or `build_groups`."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Unit:
    """One schedulable piece of a job: its items share a session (one item unless grouped)."""

    job_key: str                  # "<model>/<benchmark>"
    unit_id: str                  # the item id, or the fork group id
    item_ids: tuple[str, ...]
    host_key: str                 # which model server runs it: units with one host_key can share a server

    @property
    def key(self) -> str:
        return f"{self.job_key}/{self.unit_id}"


@dataclass
class UnitReport:
    """What a worker sends back for a unit: one (item_id, status, reason, skipped) per item."""

    unit_key: str
    items: list[tuple[str, str, str | None, bool]]
    worker: str

    @property
    def state(self) -> str:
        """'ok', 'skipped (done)', or the first item that did not finish ok, with its reason."""
        if all(skipped for *_, skipped in self.items):
            return "skipped (done)"
        for item_id, status, reason, _ in self.items:
            if status != "ok":
                where = f"{item_id} " if len(self.items) > 1 else ""
                return f"{where}{status}" + (f": {reason}" if reason else "")
        return "ok"


class JobPlan:
    """A job as units: the driver calls `prepare` and `units`, a worker `play`, a scorer `score`.

    Subclasses (one per benchmark family, duplexeval/benchmarks/<family>/plan.py) give
    `build_groups` (the items with lazy stimulus factories, grouped when forked or one-pass),
    `write_job_files` and `score`. Raising `CannotRun(reason)` from the constructor or
    `build_groups` means "this job cannot run". Only the constructor's arguments are pickled: the factories
    are rebuilt where the unit runs.
    """

    forked = False      # units are groups played as one forked session (lockstep; runner/fork.py)
    one_pass = False    # units are groups played as one session, each item a prefix (runner/one_pass.py)
    prompt: str | None = None

    def __init__(self, job: Any, bench_dir: Path, *, clock: str, seed: int, cache_mode: str, limit: int | None):
        self.job = job
        self.bench_dir = Path(bench_dir).resolve()  # a worker on another node (or cwd) writes the same folder
        self.clock, self.seed, self.cache_mode, self.limit = clock, seed, cache_mode, limit
        self.rate = int(job.bench["audio"]["rate"])
        self._groups: list[Group] | None = None
        self._by_unit: dict[str, list[tuple[str, Any]]] | None = None

    # -- benchmark hooks -------------------------------------------------------------
    def build_groups(self) -> list[Group]:
        raise NotImplementedError

    def write_job_files(self) -> None:
        """Files of the job folder besides items/ (benchmark.json, model.json, ...)."""

    def score(self, progress: Callable[[int, int, str], None] | None = None) -> dict[str, Any]:
        raise NotImplementedError

    def resume_identity(self) -> dict[str, Any]:
        """Settings of how the units are played that a resume must not mix (session_config.json);
        empty by default. MTR's one-pass history-as-heard says so: a folder begun per-round is
        not finished one-pass."""
        return {}

    def summary(self) -> str:
        """A progress line saying what the job holds."""
        return f"  {len(self._unit_items())} units"

    # -- shared ------------------------------------------------------------------------
    @property
    def key(self) -> str:
        return self.job.key

    @property
    def spec(self) -> ModelSpec:
        return model_spec_from(self.job.runner_model)

    @property
    def host_key(self) -> str:
        """Units with the same host key can be played on one model server (of one width)."""
        s = self.spec
        width = f"x{s.max_sessions}" if s.max_sessions > 1 else ""
        return f"{s.id}@{s.sha256[:12]}:{s.backend}{width}"

    @property
    def max_sessions(self) -> int:
        """Units one server of this job's model plays at once (the spec's, capped by the run)."""
        return self.spec.max_sessions

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_groups": None, "_by_unit": None}

    def groups(self) -> list[Group]:
        if self._groups is None:
            self._groups = [(g, list(items)) for g, items in self.build_groups()]
        return self._groups

    def _unit_items(self) -> dict[str, list[tuple[str, Any]]]:
        if self._by_unit is None:
            if self.forked or self.one_pass:
                self._by_unit = {g: items for g, items in self.groups()}
            else:
                self._by_unit = {i: [(i, f)] for _, items in self.groups() for i, f in items}
        return self._by_unit

    def units(self) -> list[Unit]:
        out = []
        for unit_id, items in self._unit_items().items():
            if not ITEM_ID.match(unit_id):
                raise ValueError(f"job {self.key}: unit id {unit_id!r} is not a safe file name (letters, digits, . _ -)")
            out.append(Unit(self.key, unit_id, tuple(i for i, _ in items), self.host_key))
        return out

    def prepare(self) -> None:
        """Driver side, once per run: job files, and the folder's resume identity (refuses a mismatch)."""
        self.bench_dir.mkdir(parents=True, exist_ok=True)
        self.write_job_files()
        ids = [i for _, items in self.groups() for i, _ in items]
        prepare_out_dir(self.spec, ids, self.bench_dir, self.clock, self.rate, self.seed, self.prompt,
                        self.resume_identity())

    def finished(self, unit: Unit) -> bool:
        return all(finished_status(self.bench_dir / "items" / i) is not None for i in unit.item_ids)

    def play(self, host: ModelHost, unit: Unit) -> list[ItemResult]:
        items = self._unit_items()[unit.unit_id]
        kw = dict(rate=self.rate, seed=self.seed, prompt=self.prompt)
        if self.forked or self.one_pass:
            return play_group(host, self.bench_dir, unit.unit_id, items, **kw,
                              one_pass_clock=self.clock if self.one_pass else None)
        (item_id, factory), = items
        return [play_item(host, self.bench_dir, item_id, factory, self.clock, **kw)]

    def session(self, unit: Unit) -> UnitSession:
        """The unit as one session of a batch (runner/unit_batch.py)."""
        return UnitSession(self.bench_dir, unit.unit_id, list(self._unit_items()[unit.unit_id]), self.forked,
                           self.clock, self.rate, self.seed, self.prompt, one_pass=self.one_pass)


def worker_identity(name: str) -> dict[str, Any]:
    return {"worker": name, "host": socket.gethostname(), "pid": os.getpid()}


@dataclass
class UnitWorker:
    """Plays units on one model server at a time, kept across the jobs of its model.

    Every session starts from `hello` and an item's seed depends on its id alone, so which
    server process plays a unit changes no byte (the parallel executors rely on it); a
    worker moving from one of a model's jobs to the next therefore keeps the server instead
    of starting another (~0.5 s of CPU per reference agent, 37 jobs in `make reproduce`).
    A server that could not start is not reused by the next job, which tries again, as a
    job of its own would. A model whose spec says `launch.max_sessions: N` gets batches of
    units of that model (`run_batch`), played as up to N concurrent sessions on its server.
    """

    name: str
    plans: dict[str, JobPlan] = field(default_factory=dict)
    hosts: dict[str, ModelHost] = field(default_factory=dict)        # by host key
    host_jobs: dict[str, str] = field(default_factory=dict)          # host key -> the job it last served

    def plan(self, plan: JobPlan) -> JobPlan:
        """The worker's own copy of a job's plan, so its stimulus factories are built once."""
        return self.plans.setdefault(plan.key, plan)

    def _host(self, plan: JobPlan) -> ModelHost:
        key = plan.host_key
        for other in [k for k in self.hosts if k != key]:
            self.release(other)  # one live model server per worker
        host = self.hosts.get(key)
        if host is not None and host.start_error is not None and self.host_jobs.get(key) != plan.key:
            self.release(key)
            host = None
        if host is None:
            host = self.hosts[key] = ModelHost(plan.spec)
        self.host_jobs[key] = plan.key
        return host

    def run(self, plan: JobPlan, unit: Unit) -> UnitReport:
        plan = self.plan(plan)
        results = plan.play(self._host(plan), unit)
        return UnitReport(unit.key, [(r.item_id, r.status, r.reason, r.skipped) for r in results], self.name)

    def run_batch(self, batch: list[tuple[JobPlan, Unit]]) -> list[UnitReport]:
        """Units of one model (one host key) on its server, up to `max_sessions` playing at once.

        A server of width 1 plays them one after another, exactly as `run` does; a wider one
        refills a session slot as soon as its session ends (runner/unit_batch.py).
        """
        plans = [self.plan(p) for p, _ in batch]
        if len({p.host_key for p in plans}) != 1:
            raise ValueError(f"a batch mixes model servers: {sorted({p.host_key for p in plans})}")
        if plans[0].max_sessions == 1:
            return [self.run(p, u) for p, u in zip(plans, (u for _, u in batch))]
        host = self._host(plans[0])
        results = play_units(host, [p.session(u) for p, (_, u) in zip(plans, batch)])
        return [UnitReport(u.key, [(r.item_id, r.status, r.reason, r.skipped) for r in rs], self.name)
                for (_, u), rs in zip(batch, results)]

    def release(self, host_key: str) -> None:
        host = self.hosts.pop(host_key, None)
        self.host_jobs.pop(host_key, None)
        if host is not None:
            host.close()

    def close(self) -> None:
        for key in list(self.hosts):
            self.release(key)
