"""Cost before and while spending: what a paid realtime API bills, an estimate, and a hard cap.

Judge calls have a cache; a realtime session cannot be cached (the model hears the audio
as it arrives), so the only ways not to overspend are to know the bill first and to stop
before it grows past a limit. One cost model serves both:

- **What is billed.** OpenAI bills a realtime session by the tokens of each reply: the
  `usage` block of every `response.done` (input text/audio tokens, the cached part of
  them, output text/audio tokens; the whole conversation is re-read for each reply, and
  audio generated then cut off is billed too). `usage_cost` prices that block with the
  spec's `launch.realtime.token_prices` (per million tokens). A server billed by the
  streamed minute instead (`price_per_minute`, or the run's `--price-per-minute`) costs
  the session's input minutes x that price.
- **The estimate** (`session_estimate`, the dry run and each reservation): the same token
  model over an assumed session of the unit's audio length (the family says how long a
  unit is, duplexeval/benchmarks/base.py `unit_audio_s`): a reply every `turn_s` seconds of
  user audio, `reply_s` seconds long, each reply re-reading everything said before it at
  `input_audio_tokens_per_s`, writing `output_audio_tokens_per_s`; no cache discount (an
  upper bound for the conversation it assumes).
- **The cap** (`Budget`, `--max-cost`): the bridges of a run share a ledger file. Opening
  a session reserves its estimate (spent + every open reservation + this one must stay
  within the limit, checked and written under one file lock, so parallel jobs cannot
  each take the last share); a session that grows past its reservation asks for more
  before it goes on, and is stopped (BUDGET) when the limit has no more; the end of a
  session settles it at its real cost. An item the cap stopped or never started is not
  finished: a resume with a higher limit plays it (runner/items.py).
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LEDGER_ENV = "DUPLEXEVAL_COST_LEDGER"        # the ledger file (JSON lines)
MAX_COST_ENV = "DUPLEXEVAL_MAX_COST"         # the limit, in the price's currency
PRICE_ENV = "DUPLEXEVAL_PRICE_PER_MINUTE"    # the run's --price-per-minute (overrides the spec's prices)
NEXT_ITEM_ENV = "DUPLEXEVAL_NEXT_ITEM_S"     # seconds of audio the next item is assumed to stream
LEDGER_NAME = "cost-ledger.jsonl"
DEFAULT_NEXT_ITEM_S = 132.0                  # only when a run gave none (a bridge started by hand)


class BudgetExceeded(Exception):
    pass


def check_amount(value: float, what: str) -> float:
    """A price or limit: a finite number >= 0 (NaN or inf would make every comparison lie)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{what} must be a finite number >= 0, got {value!r}")
    return float(value)


# ---- what is billed ---------------------------------------------------------------------------
def _int(block: Any, key: str) -> int:
    value = block.get(key, 0) if isinstance(block, dict) else 0
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def usage_tokens(usage: dict[str, Any]) -> dict[str, int]:
    """A response.done `usage` block as token counts per price class (tokens.TOKEN_CLASSES).

    Cached tokens are split into text and audio by `cached_tokens_details`; without that
    breakdown none is counted as cached (never an underestimate).
    """
    inp, out = usage.get("input_token_details") or {}, usage.get("output_token_details") or {}
    cached = inp.get("cached_tokens_details") if isinstance(inp, dict) else None
    cached_text, cached_audio = _int(cached, "text_tokens"), _int(cached, "audio_tokens")
    text_in, audio_in = _int(inp, "text_tokens"), _int(inp, "audio_tokens")
    if not text_in and not audio_in:  # no breakdown: all input at the audio (dearer) price
        audio_in = _int(usage, "input_tokens")
    text_out, audio_out = _int(out, "text_tokens"), _int(out, "audio_tokens")
    if not text_out and not audio_out:
        audio_out = _int(usage, "output_tokens")
    return {"input_text": max(0, text_in - cached_text), "input_audio": max(0, audio_in - cached_audio),
            "cached_input_text": cached_text, "cached_input_audio": cached_audio,
            "output_text": text_out, "output_audio": audio_out}


def tokens_cost(tokens: dict[str, float], prices: dict[str, float]) -> float:
    """Tokens x price per million; a cached class without its own price costs the uncached one."""
    total = 0.0
    for klass, n in tokens.items():
        price = prices.get(klass)
        if price is None and klass.startswith("cached_"):
            price = prices.get(klass[len("cached_"):])
        total += n * (price or 0.0) / 1e6
    return total


def usage_cost(usage: dict[str, Any], prices: dict[str, float]) -> float:
    return tokens_cost(dict(usage_tokens(usage)), prices)


# ---- the estimate -----------------------------------------------------------------------------
def session_tokens(unit_s: float, est: dict[str, float]) -> dict[str, float]:
    """Tokens of an assumed session of `unit_s` seconds (see the module's docstring)."""
    turn_s, reply_s = est["turn_s"], est["reply_s"]
    replies = max(1, math.ceil(unit_s / turn_s)) if turn_s > 0 else 1
    # Reply k re-reads k user turns and the k-1 replies before it.
    context_s = sum(k * turn_s + (k - 1) * reply_s for k in range(1, replies + 1))
    return {"input_audio": context_s * est["input_audio_tokens_per_s"],
            "output_audio": replies * reply_s * est["output_audio_tokens_per_s"]}


@dataclass(frozen=True)
class Pricing:
    """How one model's sessions are billed: by tokens (a price table) or by streamed minute."""

    per_minute: float | None = None
    token_prices: dict[str, float] = field(default_factory=dict)
    token_estimate: dict[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, realtime: dict[str, Any], price_override: float | None) -> "Pricing | None":
        """From a spec's launch.realtime (or a RealtimeConfig's fields); None: no price at all."""
        if price_override is not None:
            return cls(per_minute=check_amount(price_override, "--price-per-minute"))
        if realtime.get("token_prices"):
            return cls(token_prices=dict(realtime["token_prices"]), token_estimate=dict(realtime.get("token_estimate") or {}))
        if realtime.get("price_per_minute") is not None:
            return cls(per_minute=float(realtime["price_per_minute"]))
        return None

    @property
    def unit(self) -> str:
        return "per minute" if self.per_minute is not None else "tokens"

    def estimate(self, unit_s: float) -> float:
        """The cost of one session of `unit_s` seconds of audio."""
        if self.per_minute is not None:
            return unit_s / 60.0 * self.per_minute
        return tokens_cost(session_tokens(unit_s, self.token_estimate), self.token_prices)

    def actual(self, audio_in_s: float, usage: list[dict[str, Any]]) -> float:
        """What a session cost: its minutes, or the tokens of its responses."""
        if self.per_minute is not None:
            return audio_in_s / 60.0 * self.per_minute
        return sum(usage_cost(u, self.token_prices) for u in usage)


@dataclass(frozen=True)
class JobEstimate:
    model: str
    benchmark: str
    units: int | None            # None: the data size is unknown
    unit_s: float | None         # None: the family cannot say how long a unit is
    pricing: Pricing | None      # None: not a paid API (or no price given)

    @property
    def minutes(self) -> float | None:
        return None if self.units is None or self.unit_s is None else self.units * self.unit_s / 60.0

    @property
    def cost(self) -> float | None:
        if self.units is None or self.unit_s is None or self.pricing is None:
            return None
        return self.units * self.pricing.estimate(self.unit_s)


# ---- the cap ------------------------------------------------------------------------------------
def _alive(pid: Any) -> bool:
    if not isinstance(pid, int):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class Budget:
    """The run's guard, as a bridge reads it from its environment (None: no limit set)."""

    ledger: Path
    max_cost: float
    pricing: Pricing
    next_item_s: float

    @classmethod
    def from_env(cls, realtime: dict[str, Any]) -> "Budget | None":
        if not os.environ.get(MAX_COST_ENV) or not os.environ.get(LEDGER_ENV):
            return None
        override = float(os.environ[PRICE_ENV]) if os.environ.get(PRICE_ENV) else None
        pricing = Pricing.of(realtime, override)
        if pricing is None:
            raise BudgetExceeded("--max-cost needs a price: give --price-per-minute or set launch.realtime.token_prices")
        return cls(Path(os.environ[LEDGER_ENV]), check_amount(float(os.environ[MAX_COST_ENV]), "--max-cost"), pricing,
                   float(os.environ.get(NEXT_ITEM_ENV, DEFAULT_NEXT_ITEM_S)))

    def _entries(self) -> list[dict]:
        if not self.ledger.exists():
            return []
        out = []
        for line in self.ledger.read_text("utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # a line cut by a crash: what it held is unknown, the others still count
        return out

    def state(self) -> tuple[float, float]:
        """(spent, reserved by sessions still open): settled costs, and open reservations of live bridges."""
        spent = 0.0
        reserved: dict[str, float] = {}
        settled: set[Any] = set()
        for e in self._entries():
            if e.get("kind") == "reserve":
                if _alive(e.get("pid")):
                    reserved[e["id"]] = reserved.get(e["id"], 0.0) + float(e["cost"])
            else:  # a settled session (or a ledger line of an older run: {"cost": ...})
                spent += float(e.get("cost", 0.0))
                settled.add(e.get("id"))
        return spent, sum(v for k, v in reserved.items() if k not in settled)

    def spent(self) -> float:
        return self.state()[0]

    def _refusal(self, spent: float, reserved: float, amount: float, what: str) -> str:
        return (f"--max-cost {self.max_cost:g} reached: spent {spent:.4f}, {reserved:.4f} reserved by sessions in "
                f"flight, {what} ~{amount:.4f} ({self.pricing.unit}); not run: raise the limit and resume to play it")

    def check(self) -> None:
        """Refuses the next session when its estimate would cross the limit (no reservation made)."""
        spent, reserved = self.state()
        nxt = self.pricing.estimate(self.next_item_s)
        if spent + reserved + nxt > self.max_cost + 1e-12:
            raise BudgetExceeded(self._refusal(spent, reserved, nxt, f"the next item (~{self.next_item_s:g} s) would cost"))

    def _append(self, entry: dict) -> None:
        self.ledger.parent.mkdir(parents=True, exist_ok=True)
        with open(self.ledger, "a", encoding="utf-8") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            f.write(json.dumps(entry) + "\n")

    def reserve(self, amount: float, rid: str | None = None) -> str:
        """Reserves `amount` for a session (a new one, or more for `rid`); BudgetExceeded when it does not fit.

        Read, check and write happen under one exclusive lock on the ledger: two bridges
        cannot both take the last share.
        """
        what = "this session needs more:" if rid else "this session's estimate is"
        rid = rid or uuid.uuid4().hex
        self.ledger.parent.mkdir(parents=True, exist_ok=True)
        with open(self.ledger, "a+", encoding="utf-8") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            spent, reserved = self.state()
            if spent + reserved + amount > self.max_cost + 1e-12:
                raise BudgetExceeded(self._refusal(spent, reserved, amount, what))
            f.write(json.dumps({"kind": "reserve", "id": rid, "pid": os.getpid(), "cost": amount}) + "\n")
        return rid

    def settle(self, rid: str, model_id: str, cost: float, audio_s: float, usage: list[dict]) -> None:
        """A session's real cost replaces its reservation."""
        entry: dict[str, Any] = {"kind": "settle", "id": rid, "model": model_id, "audio_s": round(audio_s, 3),
                                 "cost": cost}
        if usage:
            entry["tokens"] = {k: sum(usage_tokens(u)[k] for u in usage) for k in usage_tokens({})}
        self._append(entry)


def budget_env(run_dir: Path, max_cost: float | None, price: float | None, estimates: list[JobEstimate]) -> dict[str, str]:
    """Environment for the bridges of a run with `--max-cost` (empty without one)."""
    env: dict[str, str] = {}
    if price is not None:
        env[PRICE_ENV] = repr(check_amount(price, "--price-per-minute"))
    if max_cost is None:
        return env
    paid = [e for e in estimates if e.pricing is not None and e.unit_s is not None]
    env[LEDGER_ENV] = str(Path(run_dir).resolve() / LEDGER_NAME)
    env[MAX_COST_ENV] = repr(check_amount(max_cost, "--max-cost"))
    # Each session reserves as if it were the longest unit of the run: never an underestimate.
    env[NEXT_ITEM_ENV] = repr(max((e.unit_s for e in paid if e.unit_s is not None), default=DEFAULT_NEXT_ITEM_S))
    return env


__all__ = ["Budget", "BudgetExceeded", "JobEstimate", "Pricing", "budget_env", "check_amount", "session_tokens",
           "usage_cost", "usage_tokens"]
