"""Cost before spending: the audio minutes a run would stream to a paid API, and a budget guard.

Judge calls have a cache; a realtime session cannot be cached (the model hears the audio
as it arrives), so the only ways not to overspend are to know the bill first and to stop
before it grows past a limit:

- `estimate_jobs` (the dry run, duplexeval/runs/cost_estimate.py: it plans the suite): per job, units x seconds of audio per unit, from the
  benchmark spec's `data.count` (or the run's limit) and the same per-unit assumptions
  as bench/project_paper_suites.py (printed with the table); cost = minutes x the price per
  minute (`--price-per-minute`, else the model spec's `launch.realtime.price_per_minute`).
- `Budget` (the guard, `--max-cost`): the bridge adds each session's streamed minutes to a
  ledger in the run folder and refuses a session (error BUDGET) when what is spent plus
  the next item's estimate would cross the limit. A BUDGET item is not finished: a resume
  with a higher limit plays it; a finished item is never played again (runner/items.py).
"""

from __future__ import annotations

import fcntl
import json
import os
from dataclasses import dataclass
from pathlib import Path

LEDGER_ENV = "DUPLEXEVAL_COST_LEDGER"        # the ledger file (JSON lines, one per session)
MAX_COST_ENV = "DUPLEXEVAL_MAX_COST"         # the limit, in the price's currency
PRICE_ENV = "DUPLEXEVAL_PRICE_PER_MINUTE"    # the run's --price-per-minute (overrides the spec's)
NEXT_ITEM_ENV = "DUPLEXEVAL_NEXT_ITEM_S"     # seconds of audio the next item is assumed to stream
LEDGER_NAME = "cost-ledger.jsonl"

# Seconds of audio per unit where no spec says: the assumptions of bench/project_paper_suites.py.
ASSUMED_UNIT_S = {"mpe": 132.0, "mtr-round": 12.0, "mtr-quality": 120.0, "mtr-query": 15.0}


@dataclass(frozen=True)
class JobEstimate:
    model: str
    benchmark: str
    units: int | None            # None: the data size is unknown (no data.count, no limit)
    unit_s: float
    price_per_minute: float | None  # None: not a paid API (or no price given)

    @property
    def minutes(self) -> float | None:
        return None if self.units is None else self.units * self.unit_s / 60.0

    @property
    def cost(self) -> float | None:
        if self.minutes is None or self.price_per_minute is None:
            return None
        return self.minutes * self.price_per_minute


class BudgetExceeded(Exception):
    pass


@dataclass(frozen=True)
class Budget:
    """The run's guard, as the bridge reads it from its environment (None: no limit set)."""

    ledger: Path
    max_cost: float
    price_per_minute: float
    next_item_s: float

    @classmethod
    def from_env(cls, spec_price: float | None) -> "Budget | None":
        if not os.environ.get(MAX_COST_ENV) or not os.environ.get(LEDGER_ENV):
            return None
        price = float(os.environ[PRICE_ENV]) if os.environ.get(PRICE_ENV) else spec_price
        if price is None:
            raise BudgetExceeded("--max-cost needs a price: give --price-per-minute or set launch.realtime.price_per_minute")
        return cls(Path(os.environ[LEDGER_ENV]), float(os.environ[MAX_COST_ENV]), price,
                   float(os.environ.get(NEXT_ITEM_ENV, ASSUMED_UNIT_S["mpe"])))

    def spent(self) -> float:
        if not self.ledger.exists():
            return 0.0
        return sum(json.loads(line)["cost"] for line in self.ledger.read_text("utf-8").splitlines() if line.strip())

    def check(self) -> None:
        """Refuses the next session when it would cross the limit (its estimate, not its actual length)."""
        spent = self.spent()
        nxt = self.next_item_s / 60.0 * self.price_per_minute
        if spent + nxt > self.max_cost + 1e-9:
            raise BudgetExceeded(f"--max-cost {self.max_cost:g} reached: spent {spent:.4f}, the next item "
                                 f"(~{self.next_item_s:g} s at {self.price_per_minute:g}/min) would cost ~{nxt:.4f}; "
                                 "raise the limit and resume to play it")

    def record(self, model_id: str, audio_s: float) -> None:
        """Adds a session's streamed audio to the ledger (appends under a lock: workers share it)."""
        if audio_s <= 0:
            return
        entry = {"model": model_id, "audio_s": round(audio_s, 3), "cost": audio_s / 60.0 * self.price_per_minute}
        self.ledger.parent.mkdir(parents=True, exist_ok=True)
        with open(self.ledger, "a", encoding="utf-8") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            f.write(json.dumps(entry) + "\n")


def budget_env(run_dir: Path, max_cost: float | None, price: float | None, estimates: list[JobEstimate]) -> dict[str, str]:
    """Environment for the bridges of a run with `--max-cost` (empty without one)."""
    env: dict[str, str] = {}
    if price is not None:
        env[PRICE_ENV] = repr(float(price))
    if max_cost is None:
        return env
    paid = [e for e in estimates if e.price_per_minute is not None]
    env[LEDGER_ENV] = str(Path(run_dir).resolve() / LEDGER_NAME)
    env[MAX_COST_ENV] = repr(float(max_cost))
    # The next item is assumed as long as the longest unit of the run: never an underestimate.
    env[NEXT_ITEM_ENV] = repr(max((e.unit_s for e in paid), default=ASSUMED_UNIT_S["mpe"]))
    return env


__all__ = ["Budget", "BudgetExceeded", "JobEstimate", "budget_env"]
