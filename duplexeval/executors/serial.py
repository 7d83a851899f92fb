"""The serial executor: one worker in this process, units in plan order, each job scored when its units are done.

The reference the other executors are compared with byte for byte: job 1's units on one
model server (a batch of up to `launch.max_sessions` of them at once), job 1 scored, job
2's units, and so on.
"""

from __future__ import annotations

from typing import Any, Callable

from duplexeval.executors.base import JobPlan, Unit, UnitWorker
from duplexeval.executors.core import Batches, Event


class SerialPool:
    """Runs each submitted unit (or scoring) at once; the result waits for the loop's next `wait`."""

    def __init__(self, scoring_progress: Callable[[int, int, str], None] | None = None):
        self.worker = UnitWorker("serial")
        self.batches = Batches()
        self.events: list[Event] = []
        self.scoring_progress = scoring_progress

    def pending(self) -> bool:
        return False

    def free(self, unit: Unit, plan: JobPlan | None = None) -> bool:
        # One batch at a time, and a finished job is scored before the next batch.
        if self.events:
            return False
        return not self.batches.filling or self.batches.room(unit)

    def submit(self, plan: JobPlan, unit: Unit) -> None:
        self.batches.add(plan, unit, lambda: None if self.batches.filling else self.worker)

    def flush(self) -> None:
        for _, batch in self.batches.take():
            for (_, unit), report in zip(batch, self.worker.run_batch(batch)):
                self.events.append(Event("unit", unit=unit, report=report))

    def score(self, plan: JobPlan) -> None:
        self.worker.release(plan.host_key)  # the model server is not needed while its job is scored
        self.events.append(Event("scored", job_key=plan.key, results=plan.score(self.scoring_progress)))

    def retire(self, host_key: str) -> None:
        pass

    def wait(self, timeout: float | None) -> list[Event]:
        events, self.events = self.events, []
        return events

    def close(self) -> None:
        self.worker.close()

    def describe(self) -> dict[str, Any]:
        return {"name": "serial", "jobs": 1}
