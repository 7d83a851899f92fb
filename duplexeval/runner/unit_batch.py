"""Several work units at once on one model server: the batched sessions of a run.

A server whose spec declares `launch.max_sessions: N` holds N sessions at once
(docs/runner.md, "Batched sessions in runs"). An executor hands one worker a queue of
units of that model (executors/core.py counts the slots) and the worker plays them here,
N at a time, each freed slot taken by the next unit at once: each unit is one session
(an item, or a forked group of rounds), with its own socket, its own stimulus (so its own
adaptive MPE scheduler) and its own seed (`item_seed` of its id, as when played alone).
What differs from playing them one after another is only when a fault tears the server
down:

- a session that faults ends as its own items' `error` (with the reason), while the
  sessions beside it keep playing on the same server; no new session starts;
- once every running session has ended, a server that faulted is stopped (its exit
  status and stderr tail are added to each fault's reason, as for a lone item) and a
  fresh one is started for the units still queued;
- an item is written the moment its session ends well, so a run killed mid-batch keeps
  every item finished so far and a resume replays only the others.
"""

from __future__ import annotations

import asyncio
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from duplexeval.runner.batch import BUSY_RETRY_S, probe_max_sessions, refused_busy, run_session_when_free
from duplexeval.runner.errors import ModelFault
from duplexeval.runner.fork import add_group_diagnostics, run_forked_session
from duplexeval.runner.items import (
    ItemResult,
    ModelHost,
    StimulusFactory,
    finished_status,
    item_seed,
    startup_failure,
    write_item,
)
from duplexeval.runner.one_pass import run_one_pass_session
from duplexeval.runner.session import SessionOutcome
from duplexeval.runner.stimulus import Stimulus


@dataclass
class UnitSession:
    """One unit as a session to play: its items (one, or a forked group) and the job's settings."""

    out: Path                                   # the job folder (prepared: `prepare_out_dir`)
    unit_id: str                                # the item id, or the fork group's id
    items: list[tuple[str, StimulusFactory]]
    forked: bool
    clock: str
    rate: int
    seed: int                                   # the run seed; the session's is item_seed(seed, unit_id)
    prompt: str | None
    one_pass: bool = False                      # a one-pass group: one session, each item a prefix (runner/one_pass.py)

    @property
    def session_seed(self) -> int:
        return item_seed(self.seed, self.unit_id)

    def dirs(self) -> dict[str, Path]:
        return {i: self.out / "items" / i for i, _ in self.items}

    def skipped(self) -> list[ItemResult] | None:
        """The unit's results when every item is finished on disk, else None."""
        done = {i: finished_status(d) for i, d in self.dirs().items()}
        if any(st is None for st in done.values()):
            return None
        return [ItemResult(i, st["status"], st.get("reason"), self.dirs()[i], skipped=True) for i, st in done.items()]

    def clear(self) -> None:
        """An unfinished attempt (and its temp files) is redone from scratch, the whole unit."""
        for d in self.dirs().values():
            if d.exists():
                shutil.rmtree(d)

    def write(self, host: ModelHost, outcomes: list[tuple[str, SessionOutcome]]) -> list[ItemResult]:
        dirs, clock = self.dirs(), "lockstep" if self.forked else self.clock
        return [write_item(dirs[i], out, host.spec, clock, self.session_seed) for i, out in outcomes]


def play_units(host: ModelHost, units: Sequence[UnitSession]) -> list[list[ItemResult]]:
    """Plays `units` on `host`, at most its width (`spec.max_sessions`) at once; one list of
    ItemResults per unit, in order.

    More units than the width is a queue: a session slot is refilled the moment its session
    ends, so a short conversation's slot does not sit idle until the longest one of its
    batch ends. Units finished on disk are skipped; the others are cleared and played. A
    model that cannot start makes STARTUP errors of every item, as `play_item` does.
    """
    results: list[list[ItemResult] | None] = [u.skipped() for u in units]
    todo = [k for k, r in enumerate(results) if r is None]
    for k in todo:
        units[k].clear()
    if not todo:
        return results  # type: ignore[return-value]
    retried = host.start_error is None
    if host.start_error is None:
        _start(host)
    if host.start_error is not None:
        for k in todo:
            results[k] = _startup_errors(host, units[k], retried)
        return results  # type: ignore[return-value]
    for k, written in zip(todo, asyncio.run(_play_together(host, [units[k] for k in todo]))):
        results[k] = written
    return results  # type: ignore[return-value]


def _start(host: ModelHost) -> None:
    """`host.ensure()`; a server that cannot start leaves its reason in `host.start_error`."""
    try:
        host.ensure()
    except Exception as exc:  # ModelFault(STARTUP), docker.errors.DockerException, OSError
        host.close()
        host.start_error = f"model {host.spec.id} could not be started ({host.spec.backend} backend): {exc}"


def _startup_errors(host: ModelHost, unit: UnitSession, retried: bool) -> list[ItemResult]:
    assert host.start_error is not None
    return unit.write(host, [(i, startup_failure(unit.rate, host.start_error, retried)) for i, _ in unit.items])


def _add_diagnostics(unit: UnitSession, outs: list[tuple[str, SessionOutcome]], diag: str) -> None:
    """As a lone item or group gets them (runner/items.py `run_one`, runner/fork.py `play_group`)."""
    if unit.forked or unit.one_pass:
        add_group_diagnostics(outs, diag)
        return
    for _, out in outs:
        if out.fault is not None:
            out.events[-1]["code"] = out.fault.code  # after_fault may have made it INTERRUPTED
            if diag and diag not in out.fault.reason:
                out.fault.reason = f"{out.fault.reason}; {diag}"
                out.events[-1]["reason"] = out.fault.reason


class _Slots:
    """A server's session slots while a queue of units plays on it.

    At most `width` sessions at once; a slot freed by a session that ended is taken by the
    next unit at once. After a fault no session starts until every running one has ended:
    then the server is stopped (its diagnostics join each fault's reason, as for a lone
    item), the faulted units are written, and a fresh server is started for the units
    still waiting (a sibling never plays on a server that may be dying).
    """

    def __init__(self, host: ModelHost, width: int, waiting: int):
        self.host = host
        self.gate = asyncio.Semaphore(width)
        self.ahead = asyncio.Semaphore(width)   # units built and waiting for a slot
        self.building = asyncio.Lock()
        self.open = asyncio.Event()
        self.open.set()
        self.running = 0
        self.waiting = waiting                  # units not yet started
        self.faulted: list[tuple[UnitSession, list[tuple[str, SessionOutcome]], asyncio.Future]] = []

    async def play(self, unit: UnitSession) -> list[ItemResult]:
        await self.ahead.acquire()
        try:
            stimuli = await self._build(unit)
        except BaseException:
            self.ahead.release()
            raise
        async with self.gate:
            self.ahead.release()
            await self.open.wait()
            self.waiting -= 1
            if self.host.start_error is not None:  # the restart after a fault failed
                return await asyncio.to_thread(_startup_errors, self.host, unit, True)
            self.running += 1
            try:
                outs = await _play_unit(self.host, unit, stimuli)
            finally:
                self.running -= 1
            faulted = any(o.fault is not None for _, o in outs)
            if faulted:
                self.open.clear()  # no session starts until the server is torn down
                done: asyncio.Future[list[ItemResult]] = asyncio.get_running_loop().create_future()
                self.faulted.append((unit, outs, done))
            if self.faulted and self.running == 0:
                await self._tear_down()
        if faulted:
            return await done
        # Written at once (a kill mid-batch keeps this unit), with its slot already free for
        # the next unit, and off the event loop: the other sessions' frames must not wait
        # for a WAV's write and fsync.
        return await asyncio.to_thread(unit.write, self.host, outs)

    async def _build(self, unit: UnitSession) -> list[tuple[str, Stimulus]]:
        """The unit's stimuli, built before its slot is free and off the event loop: rendering
        a conversation (TTS, scene audio) must not stall the frames of the sessions playing
        (on the realtime clock a stall would be heard as their latency). One build at a time,
        so a factory never runs beside another."""
        async with self.building:
            return await asyncio.to_thread(lambda: [(i, factory()) for i, factory in unit.items])

    async def _tear_down(self) -> None:
        faulted, self.faulted = self.faulted, []
        first = next(o.fault for _, outs, _ in faulted for _, o in outs if o.fault is not None)
        diag = await asyncio.to_thread(self.host.after_fault, first)  # every session has ended
        for unit, outs, done in faulted:
            _add_diagnostics(unit, outs, diag)
            done.set_result(await asyncio.to_thread(unit.write, self.host, outs))
        if self.waiting:
            await asyncio.to_thread(_start, self.host)
        self.open.set()


async def _play_together(host: ModelHost, units: list[UnitSession]) -> list[list[ItemResult]]:
    """The units' written items, in order."""
    endpoint = host.endpoint
    assert endpoint is not None
    width = min(len(units), max(1, host.spec.max_sessions))
    if host.spec.backend == "endpoint":
        try:  # a server someone else started may hold fewer sessions than the spec says
            width = min(width, await probe_max_sessions(endpoint, host.spec))
        except ModelFault:
            pass  # the sessions themselves will say what is wrong
    slots = _Slots(host, width, len(units))
    return list(await asyncio.gather(*(slots.play(u) for u in units)))


async def _play_unit(host: ModelHost, unit: UnitSession,
                     stimuli: list[tuple[str, Stimulus]]) -> list[tuple[str, SessionOutcome]]:
    endpoint, spec = host.endpoint, host.spec
    if unit.one_pass:
        for wait in (*BUSY_RETRY_S, None):
            outs = await run_one_pass_session(endpoint, spec, stimuli, unit.clock, unit.rate, unit.session_seed,
                                              unit.prompt)
            if wait is None or not refused_busy([o for _, o in outs]):
                break
            await asyncio.sleep(wait)
        return outs
    if not unit.forked:
        (item_id, stimulus), = stimuli
        out = await run_session_when_free(endpoint, spec, stimulus, unit.clock, unit.rate, unit.session_seed,
                                          unit.prompt)
        return [(item_id, out)]
    for wait in (*BUSY_RETRY_S, None):
        outs = await run_forked_session(endpoint, spec, stimuli, unit.rate, unit.session_seed, unit.prompt)
        if wait is None or not refused_busy([o for _, o in outs]):
            break
        await asyncio.sleep(wait)
    return outs


__all__ = ["UnitSession", "play_units"]
