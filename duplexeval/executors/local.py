"""The local executor: N worker processes on this machine, each keeping its own model server.

A worker takes a batch of up to its model's `max_sessions` units at once (executors/core.py).

Processes, not threads: the harness's frame loop is Python (the GIL would serialise N
sessions), and a worker can die (SIGKILL, OOM) without taking the driver with it: the
driver sees the process's sentinel, requeues the unit and starts a fresh worker. Workers
are started with `spawn` (the driver may hold onnxruntime/torch threads by then, which
`fork` would copy mid-state) and die with the driver (PR_SET_PDEATHSIG), as their model
servers die with them, so a killed driver leaves nothing running. Scoring runs on a free
worker too, ahead of any unit, so it uses the second core while the other plays units.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import signal
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait as wait_any
from pathlib import Path
from typing import Any

from duplexeval.executors.base import JobPlan, Unit, UnitWorker
from duplexeval.executors.core import UNIT_ATTEMPTS, Batches, Event
from duplexeval.executors.registry import WorkerRegistry
from duplexeval.processes import PARALLEL_WORKERS_ENV


def portable_error(exc: BaseException) -> BaseException:
    """`exc` if it survives pickling (so the driver raises the same type), else a RuntimeError
    with its text; the worker's traceback rides along as a note."""
    tb = "".join(traceback.format_exception(exc))
    try:
        out = pickle.loads(pickle.dumps(exc))
    except Exception:
        out = RuntimeError(f"{type(exc).__name__}: {exc}")
    out.add_note(f"in a worker process:\n{tb}")
    return out


def _worker_main(conn: Connection, name: str, registry: WorkerRegistry, jobs: int) -> None:
    from duplexeval.runner.backends.local import _die_with_parent

    _die_with_parent()
    # The workers share the cores: the ASR sizes its thread pool by this (processes.cores_per_worker).
    os.environ[PARALLEL_WORKERS_ENV] = str(jobs)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle; we stop when it closes the pipe
    registry.register(name)
    worker = UnitWorker(name)
    try:
        while True:
            try:
                msg = conn.recv()
            except EOFError:
                break
            if msg is None:
                break
            kind, payload = msg
            try:
                out: tuple[str, Any] = (("units", worker.run_batch(payload)) if kind == "units"
                                        else ("scored", payload.score()))
            except BaseException as exc:  # sent to the driver, which stops the run with it
                out = ("error", portable_error(exc))
            conn.send(out)
    finally:
        worker.close()
        registry.unregister(name)


@dataclass
class _Slot:
    name: str
    process: Any
    conn: Connection
    task: tuple[str, Any] | None = None   # ("units", [(plan, unit), ...]) | ("score", plan)


class LocalPool:
    """`jobs` worker processes; a unit or a scoring task per idle worker."""

    plans_ahead = True  # units play in the workers while the driver plans later jobs (runs/execute.py)

    def __init__(self, jobs: int, run_dir: Path):
        if jobs < 1:
            raise ValueError(f"--jobs must be at least 1, got {jobs}")
        self.jobs = jobs
        self.ctx = mp.get_context("spawn")
        self.registry = WorkerRegistry(run_dir)
        self.started = 0
        self.slots = [self._start() for _ in range(jobs)]
        self.pending_scores: list[JobPlan] = []
        self.batches = Batches()
        self.score_attempts: dict[str, int] = {}

    def _start(self) -> _Slot:
        self.started += 1
        name = f"local-{self.started}"
        parent, child = self.ctx.Pipe()
        proc = self.ctx.Process(target=_worker_main, args=(child, name, self.registry, self.jobs), name=name,
                                daemon=True)
        proc.start()
        child.close()
        return _Slot(name, proc, parent)

    def _idle(self) -> list[_Slot]:
        return [s for s in self.slots if s.task is None and not self.batches.reserved(s)]

    def pending(self) -> bool:
        return False

    def free(self, unit: Unit, plan: JobPlan | None = None) -> bool:
        return self.batches.room(unit) or len(self._idle()) > len(self.pending_scores)

    def _send(self, slot: _Slot, task: tuple[str, Any]) -> None:
        slot.task = task
        slot.conn.send(task)

    def submit(self, plan: JobPlan, unit: Unit) -> None:
        self.batches.add(plan, unit, lambda: next(iter(self._idle()), None))

    def flush(self) -> None:
        for slot, batch in self.batches.take():
            self._send(slot, ("units", batch))

    def score(self, plan: JobPlan) -> None:
        self.pending_scores.append(plan)
        self._dispatch_scores()

    def _dispatch_scores(self) -> None:
        while self.pending_scores and self._idle():
            self._send(self._idle()[0], ("score", self.pending_scores.pop(0)))

    def retire(self, host_key: str) -> None:
        pass  # workers serve any model; a worker's server is closed when it gets another model's unit

    def wait(self, timeout: float | None) -> list[Event]:
        busy = [s for s in self.slots if s.task is not None]
        handles: list[Any] = [s.conn for s in busy] + [s.process.sentinel for s in self.slots]
        ready = set(wait_any(handles, timeout))
        events: list[Event] = []
        for i, slot in enumerate(list(self.slots)):
            if slot.task is not None and slot.conn in ready:
                try:
                    kind, payload = slot.conn.recv()
                except (EOFError, OSError):  # died mid-send: handled as lost below
                    kind, payload = None, None
                if kind is not None:
                    events += self._events(slot, kind, payload)
                    slot.task = None
            if slot.process.exitcode is not None or (slot.process.sentinel in ready and not slot.process.is_alive()):
                events += self._lost(slot)
                self.slots[i] = self._start()
        self._dispatch_scores()
        return events

    def _events(self, slot: _Slot, kind: str, payload: Any) -> list[Event]:
        assert slot.task is not None   # a slot reports only on a task it was sent
        _, task = slot.task
        if kind == "units":
            return [Event("unit", unit=unit, report=report) for (_, unit), report in zip(task, payload)]
        if kind == "scored":
            return [Event("scored", job_key=task.key, results=payload)]
        return [Event("error", error=payload)]

    def _lost(self, slot: _Slot) -> list[Event]:
        slot.process.join(0)
        if self.started >= self.jobs * (UNIT_ATTEMPTS + 2):
            return [Event("error", error=RuntimeError(
                f"local workers keep dying (worker {slot.name} exited with {slot.process.exitcode}); giving up"))]
        reason = f"worker {slot.name} (pid {slot.process.pid}) exited with {slot.process.exitcode}"
        self.registry.unregister(slot.name)
        task, slot.task = slot.task, None
        if task is None:
            return []
        kind, payload = task
        if kind == "units":  # every unit of the batch; those it finished are skipped when replayed
            return [Event("lost", unit=unit, reason=reason) for _, unit in payload]
        plan = payload
        n = self.score_attempts[plan.key] = self.score_attempts.get(plan.key, 0) + 1
        if n >= 2:
            return [Event("error", error=RuntimeError(f"scoring {plan.key} lost its worker twice ({reason})"))]
        self.pending_scores.insert(0, plan)
        return []

    def close(self) -> None:
        for slot in self.slots:
            try:
                slot.conn.send(None)
            except OSError:
                pass
        for slot in self.slots:
            slot.process.join(10)
            if slot.process.is_alive():
                slot.process.kill()
                slot.process.join(5)
            slot.conn.close()
            self.registry.unregister(slot.name)

    def describe(self) -> dict[str, Any]:
        return {"name": "local", "jobs": self.jobs, "cpus": os.cpu_count()}
