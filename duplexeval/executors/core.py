"""The scheduling loop every executor shares: units to free worker slots, scoring once a job is done.

An executor is this loop plus a `Pool` (serial: in-process; local: worker processes;
ray: actors and tasks). The loop owns the bookkeeping that makes a run exact:

- a unit is claimed (duplexeval/executors/claims.py) before it is handed to a worker,
  and handed to exactly one worker at a time;
- a worker has as many slots as its model's server holds sessions (`launch.max_sessions`,
  capped by `--max-sessions`): units of one model go to it as one batch (`Batches`
  below), at most that many playing at once and the rest refilling slots as sessions
  end (runner/unit_batch.py), each reported on its own;
- a unit whose worker died (SIGKILL, OOM, a lost node) goes back to the front of the
  queue, up to UNIT_ATTEMPTS times; its half-written item folders are removed when it is
  replayed (runner/items.py), so a finished run holds exactly one attempt per item;
- a unit already finished on disk is skipped without a worker;
- a unit claimed by another live driver is waited for, not played;
- a job is scored once all its units are finished; scoring reads the folder in sorted
  order, so results never depend on which unit finished first.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from duplexeval.executors.base import JobPlan, Unit, UnitReport
from duplexeval.executors.claims import Claims

# A unit that takes its worker down this many times stops the run (it would again).
UNIT_ATTEMPTS = 3
# How often units held by another driver are looked at again, in seconds.
FOREIGN_POLL_S = 0.5
# How often a busy loop looks for newly planned jobs, in seconds.
FEED_POLL_S = 0.2

Progress = Callable[[str], None]


@dataclass
class Event:
    """What a pool reports: a unit done, a unit lost with its worker, a job scored, or an error."""

    kind: str                      # "unit" | "lost" | "scored" | "error"
    unit: Unit | None = None
    job_key: str | None = None
    report: UnitReport | None = None
    results: dict[str, Any] | None = None
    error: BaseException | None = None
    reason: str = ""


class Pool(Protocol):
    def free(self, unit: Unit, plan: JobPlan) -> bool: ...
    def pending(self) -> bool: ...
    def submit(self, plan: JobPlan, unit: Unit) -> None: ...  # into a batch (Batches); sent by flush
    def flush(self) -> None: ...
    def score(self, plan: JobPlan) -> None: ...
    def retire(self, host_key: str) -> None: ...
    def wait(self, timeout: float | None) -> list[Event]: ...
    def close(self) -> None: ...


# A worker of a batched server (width N > 1) takes up to N x BATCH_DEPTH units at once
# and refills a session slot the moment its session ends (runner/unit_batch.py): its
# slots idle only at the tail of the queue, once per N x BATCH_DEPTH units, instead of
# after every N. Idle workers are filled to width first, so depth never starves them.
BATCH_DEPTH = 8


class Batches:
    """Units gathered for workers during one pass of the scheduling loop, one batch per worker.

    A batch holds units of one model server (host key): first up to its width
    (`JobPlan.max_sessions`) per worker, spread over idle workers; once no worker is idle,
    batched servers' queues deepen up to width x `depth` (the least filled first).
    `reserved` workers have a batch being filled and are not idle.
    """

    def __init__(self, depth: int = BATCH_DEPTH) -> None:
        self.depth = depth
        self.filling: list[tuple[Any, str, int, list[tuple[JobPlan, Unit]]]] = []  # (worker, host key, width, batch)

    def _capacity(self, width: int) -> int:
        return width if width == 1 else width * self.depth  # a one-session server stays one unit per worker

    def room(self, unit: Unit) -> bool:
        return any(key == unit.host_key and len(batch) < self._capacity(width) for _, key, width, batch in self.filling)

    def reserved(self, worker: Any) -> bool:
        return any(w is worker for w, *_ in self.filling)

    def add(self, plan: JobPlan, unit: Unit, new_worker: Callable[[], Any | None]) -> None:
        """Into a batch of its server under its width, else onto an idle worker (`new_worker()`,
        None when there is none), else into the least filled batch of its server with room."""
        mine = [(len(batch), k) for k, (_, key, _, batch) in enumerate(self.filling) if key == unit.host_key]
        for n, k in mine:
            if n < self.filling[k][2]:
                self.filling[k][3].append((plan, unit))
                return
        worker = new_worker()
        if worker is not None:
            self.filling.append((worker, unit.host_key, max(1, plan.max_sessions), [(plan, unit)]))
            return
        room = [(n, k) for n, k in mine if n < self._capacity(self.filling[k][2])]
        if not room:
            raise RuntimeError(f"no worker has room for unit {unit.key}")  # the pool's `free` said there was
        self.filling[min(room)[1]][3].append((plan, unit))

    def take(self) -> list[tuple[Any, list[tuple[JobPlan, Unit]]]]:
        out, self.filling = [(w, batch) for w, _, _, batch in self.filling], []
        return out


class UnitFailed(RuntimeError):
    """A unit kept taking its worker down."""


class PlanFeed(Protocol):
    """Plans that arrive while units play (runs/execute.py's Planner): a parallel pool starts
    on the first job while later ones are still being planned."""

    done: bool  # every plan has been handed over

    def take(self, timeout: float | None) -> list[JobPlan]: ...  # raises what planning raised


def schedule(plans: list[JobPlan], pool: Pool, claims: Claims, progress: Progress,
             feed: PlanFeed | None = None) -> dict[str, dict[str, Any]]:
    """Runs every unit of `plans` (and of those `feed` hands over) on `pool`, scores each job; returns results per job key."""
    by_key: dict[str, JobPlan] = {}
    units: dict[str, list[Unit]] = {}
    queue: deque[Unit] = deque()
    remaining: dict[str, int] = {}
    per_host: dict[str, int] = {}
    idle_hosts: set[str] = set()  # out of units while plans may still bring more: retired once the feed is done
    attempts: dict[str, int] = {}
    foreign: list[Unit] = []
    in_flight = 0
    scoring: set[str] = set()
    results: dict[str, dict[str, Any]] = {}
    done = total = 0
    started = time.monotonic()

    def add(plan: JobPlan) -> None:
        nonlocal total
        by_key[plan.key] = plan
        units[plan.key] = plan.units()
        remaining[plan.key] = len(units[plan.key])
        total += len(units[plan.key])
        for u in units[plan.key]:
            per_host[u.host_key] = per_host.get(u.host_key, 0) + 1
            idle_hosts.discard(u.host_key)
            queue.append(u)

    def feeding() -> bool:
        return feed is not None and not feed.done

    def take(timeout: float | None) -> None:
        for plan in feed.take(timeout):
            add(plan)
        if not feeding():
            for host in sorted(idle_hosts):
                pool.retire(host)
            idle_hosts.clear()

    def finish(unit: Unit, state: str) -> None:
        nonlocal done
        done += 1
        remaining[unit.job_key] -= 1
        per_host[unit.host_key] -= 1
        if per_host[unit.host_key] == 0:
            if feeding():
                idle_hosts.add(unit.host_key)
            else:
                pool.retire(unit.host_key)  # e.g. give a GPU back once a model has nothing left
        progress(f"  {done}/{total} {unit.key} {state} [{time.monotonic() - started:.0f} s]")

    for plan in plans:
        add(plan)
    try:
        while len(results) < len(by_key) or feeding():
            if feeding():
                take(0)
            for key, plan in by_key.items():
                if remaining[key] == 0 and key not in scoring:
                    scoring.add(key)
                    progress(f"  scoring {key}")
                    pool.score(plan)
            waiting = deque()
            while queue:
                unit = queue.popleft()
                plan = by_key[unit.job_key]
                if plan.finished(unit):
                    finish(unit, "skipped (done)")
                    continue
                if not pool.free(unit, plan):
                    waiting.append(unit)
                    continue
                if not claims.try_claim(unit):
                    foreign.append(unit)
                    continue
                pool.submit(plan, unit)
                in_flight += 1
            pool.flush()  # the batches gathered in this pass go to their workers
            queue = waiting
            if foreign and in_flight == 0 and not queue:
                _recheck(foreign, queue, by_key, finish, claims)
            if len(results) == len(by_key) and not feeding():
                break
            busy = in_flight or len(scoring) > len(results) or pool.pending()
            if not busy:
                if feeding():
                    take(None)  # nothing to do until the next plan arrives
                elif foreign:
                    time.sleep(FOREIGN_POLL_S)
                    _recheck(foreign, queue, by_key, finish, claims)
                elif queue and not any(pool.free(u, by_key[u.job_key]) for u in queue):
                    raise RuntimeError(f"no worker can take unit {queue[0].key} and nothing is running")
                continue
            for ev in pool.wait(FEED_POLL_S if feeding() else FOREIGN_POLL_S if foreign else None):
                if ev.kind == "unit":
                    in_flight -= 1
                    claims.release(ev.unit)
                    finish(ev.unit, ev.report.state)
                elif ev.kind == "lost":
                    in_flight -= 1
                    n = attempts[ev.unit.key] = attempts.get(ev.unit.key, 0) + 1
                    progress(f"  {ev.unit.key}: worker lost ({ev.reason}); unit requeued (attempt {n + 1})")
                    if n >= UNIT_ATTEMPTS:
                        raise UnitFailed(f"unit {ev.unit.key} lost its worker {n} times ({ev.reason}); "
                                         "its items are unfinished and a resume will try again")
                    queue.appendleft(ev.unit)  # still claimed by us
                elif ev.kind == "scored":
                    results[ev.job_key] = ev.results
                elif ev.kind == "error":
                    raise ev.error
            if foreign:
                _recheck(foreign, queue, by_key, finish, claims)
    finally:
        for job_units in units.values():
            for unit in job_units:
                claims.release(unit)
        claims.cleanup()
    return results


def _recheck(foreign: list[Unit], queue: deque, by_key: dict[str, JobPlan], finish, claims: Claims) -> None:
    """Units another driver held: finished by it -> done; its claim gone or stale -> ours to play."""
    for unit in list(foreign):
        if by_key[unit.job_key].finished(unit) and claims.owner_of(unit) is None:
            foreign.remove(unit)
            finish(unit, "skipped (done by another driver)")
        elif claims.owner_of(unit) is None or claims.stale(claims.owner_of(unit)):
            foreign.remove(unit)
            queue.append(unit)
