"""The serial executor: one worker in this process, units in plan order, each job scored when its units are done.

Today's behaviour (and the reference the other executors are compared with byte for
byte): job 1's items on one model server, job 1 scored, job 2's items, and so on.
"""

from __future__ import annotations

from typing import Any, Callable

from duplexeval.executors.base import JobPlan, Unit, UnitWorker
from duplexeval.executors.core import Event


class SerialPool:
    """Runs each submitted unit (or scoring) at once; the result waits for the loop's next `wait`."""

    def __init__(self, scoring_progress: Callable[[int, int, str], None] | None = None):
        self.worker = UnitWorker("serial")
        self.events: list[Event] = []
        self.scoring_progress = scoring_progress

    def pending(self) -> bool:
        return False

    def free(self, unit: Unit, plan: JobPlan | None = None) -> bool:
        return not self.events  # one at a time, and a finished job is scored before the next unit

    def submit(self, plan: JobPlan, unit: Unit) -> None:
        self.events.append(Event("unit", unit=unit, report=self.worker.run(plan, unit)))

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
