"""Bounded retries with exponential backoff, jitter and Retry-After, each one logged.

inspect_ai users saw unlimited retries as a hang; here the count is bounded by the
spec's `transport.max_retries`, every retry is logged with its cause and delay, and the
SDKs' own retries are switched off (max_retries=0) so these are the only ones.
Rate limits (429) wait what the server's Retry-After says; transient failures (5xx,
408/409, timeouts, dropped connections, malformed response bodies) back off
exponentially with jitter; anything else (400, 401, 403, 404) fails at once.
"""

from __future__ import annotations

import email.utils
import logging
import random
import time
from dataclasses import dataclass
from typing import Callable, TypeVar

log = logging.getLogger("duplexeval.judges.retry")
T = TypeVar("T")
MAX_RETRY_AFTER_S = 300.0  # a server asking for longer is treated as a failure, not a hang


class JudgeCallError(RuntimeError):
    """A provider call failed for good (retries exhausted or a permanent error). Never cached."""


@dataclass(frozen=True)
class Failure:
    retryable: bool
    kind: str  # "rate-limit", "transient", "permanent"
    retry_after: float | None
    message: str


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 4
    backoff_base_s: float = 1.0
    backoff_max_s: float = 30.0

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """Equal jitter: half the exponential delay fixed, half random (attempt counts from 0)."""
        delay = min(self.backoff_max_s, self.backoff_base_s * (2 ** attempt))
        return delay / 2 + rng.uniform(0, delay / 2)


def parse_retry_after(headers) -> float | None:
    """Seconds from `retry-after-ms`, `Retry-After` (seconds or an HTTP date), or None."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(float(ms) / 1000.0, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        if parsed is None:
            return None
        return max(parsed.timestamp() - time.time(), 0.0)


def call_with_retries(fn: Callable[[], T], *, policy: RetryPolicy, classify: Callable[[BaseException], Failure],
                      what: str, redact: Callable[[str], str] = lambda s: s,
                      sleep: Callable[[float], None] = time.sleep, rng: random.Random | None = None) -> T:
    rng = rng or random.Random()
    for attempt in range(policy.max_retries + 1):
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - classified below, re-raised as JudgeCallError
            failure = classify(exc)
            message = redact(failure.message)
            if not failure.retryable:
                raise JudgeCallError(f"{what}: {failure.kind} error, not retried: {message}") from None
            if attempt == policy.max_retries:
                raise JudgeCallError(f"{what}: gave up after {attempt + 1} attempts; last error "
                                     f"({failure.kind}): {message}") from None
            if failure.retry_after is not None:
                if failure.retry_after > MAX_RETRY_AFTER_S:
                    raise JudgeCallError(f"{what}: server asked to retry after {failure.retry_after:.0f} s "
                                         f"(> {MAX_RETRY_AFTER_S:.0f} s); giving up: {message}") from None
                delay = failure.retry_after
            else:
                delay = policy.backoff(attempt, rng)
            log.warning("%s: attempt %d/%d failed (%s: %s); retrying in %.2f s", what, attempt + 1,
                        policy.max_retries + 1, failure.kind, message, delay)
            sleep(delay)
    raise AssertionError("unreachable")
