"""A protocol v1 server in front of a Realtime-API endpoint: the runner drives it like any model.

Each input frame is forwarded at once as an `input_audio_buffer.append` (the harness
sends frames on the wall clock, so the appends leave on it too); each output frame is
what a listener's client plays then (duplexeval/realtime/playback.py): the server's
deltas through a jitter buffer of `launch.realtime.jitter_buffer_ms`, every gap in a
reply counted, nothing of a reply that was cut (the session interrupts on user speech)
or that the server cancelled. Server events (speech started/stopped, response
created/done, errors, rate limits) go to the harness as `remote_event` messages and
land in events.jsonl; `done` carries the session's timing (duplexeval/realtime/timing.py).

Realtime clock only: a remote model hears audio as it arrives and answers when it is
ready, so there is no output frame n to wait for after input frame n, and a lockstep
session would only measure the network. `hello{clock: lockstep}` is refused with that
reason (UNSUPPORTED_CLOCK).

Started by the `realtime-api` backend as `python -m duplexeval.realtime.bridge --socket
PATH`, with its configuration in $DUPLEXEVAL_REALTIME_CONFIG and the key in the
variable the spec names.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import sys
import threading

import numpy as np

from duplexeval.protocol.server import DuplexServer, ProtocolViolation, run_server
from duplexeval.protocol.wire import ErrorCode
from duplexeval.realtime.cost import Budget, BudgetExceeded
from duplexeval.realtime.playback import Playback
from duplexeval.realtime.remote import RemoteFault, RemoteSession
from duplexeval.realtime.timing import SessionTiming
from duplexeval.specs.realtime_config import RealtimeConfig, RealtimeConfigError

LOCKSTEP_REFUSAL = ("a realtime API runs on the wall clock: the remote model hears audio as it arrives and answers "
                    "when it is ready, so no output frame belongs to an input frame; run it with --clock realtime")


class RemoteLoop:
    """An event loop in its own thread: the remote connection lives here, steps run in the server's threads."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="realtime-remote", daemon=True)
        self.thread.start()

    def run(self, coro, timeout: float):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, fn, *args) -> None:
        self.loop.call_soon_threadsafe(fn, *args)


def pricing_fields(cfg: RealtimeConfig) -> dict:
    return {"token_prices": cfg.token_prices, "token_estimate": cfg.token_estimate, "price_per_minute": cfg.price_per_minute}


class RealtimeBridge(DuplexServer):
    capabilities = ("prompt",)
    clocks = ("realtime",)
    clock_note = LOCKSTEP_REFUSAL

    def __init__(self, cfg: RealtimeConfig):
        self.cfg = cfg
        self.model_name = f"{cfg.model_id} ({cfg.model} via {cfg.base_url})"
        self.in_rate, self.out_rate, self.frame_ms = cfg.in_rate, cfg.out_rate, cfg.frame_ms
        super().__init__()
        self.remote_loop = RemoteLoop()
        self.remote: RemoteSession | None = None
        self.timing = SessionTiming(cfg.frame_ms / 1000.0)
        self.lock = threading.Lock()
        self.playback = self._new_playback()
        self.events: list[dict] = []
        self.opened = False  # a session was opened on this connection: `reset` opens the next one lazily
        self.prompt: str | None = None
        self.budget = Budget.from_env(pricing_fields(cfg))  # the run's --max-cost, or None
        self.reservation: str | None = None  # the open session's reservation in the ledger (None: nothing open)
        self.reserved = 0.0
        atexit.register(self.bill)

    def _new_playback(self) -> Playback:
        return Playback.for_config(self.out_frame_samples, self.out_rate, self.cfg.jitter_buffer_ms, self.cfg.frame_ms)

    # ---- cost ----------------------------------------------------------------------------------
    def session_cost(self, extra_in_s: float = 0.0) -> float:
        if self.budget is None:
            return 0.0
        usage = self.remote.usage if self.remote is not None else []
        return self.budget.pricing.actual(self.timing.audio_in_s + extra_in_s, usage)

    def bill(self) -> None:
        """The session's real cost into the run's ledger, once (end, reset or exit), replacing its reservation."""
        if self.budget is not None and self.reservation is not None:
            rid, self.reservation = self.reservation, None
            usage = self.remote.usage if self.remote is not None else []
            self.budget.settle(rid, self.cfg.model_id, self.session_cost(), self.timing.audio_in_s, usage)

    def _keep_within_budget(self, frame_s: float) -> None:
        """Before more is spent: a session past its reservation reserves more, or stops (BUDGET)."""
        if self.budget is None or self.reservation is None:
            return
        cost = self.session_cost(frame_s)
        if cost <= self.reserved + 1e-9:
            return
        # A tenth of an item at a time: enough not to lock the ledger every frame, little enough
        # not to refuse a session that needs only a little more than its estimate.
        more = max(cost - self.reserved, 0.1 * self.budget.pricing.estimate(self.budget.next_item_s))
        try:
            self.budget.reserve(more, self.reservation)
        except BudgetExceeded as exc:
            raise ProtocolViolation(ErrorCode.BUDGET, f"{self.cfg.model_id}: stopped mid-session: {exc}") from None
        self.reserved += more

    # ---- session ----------------------------------------------------------------------------
    def reset(self) -> None:
        self.bill()
        if self.remote is not None:
            try:
                self.remote_loop.run(self.remote.close(), timeout=5.0)
            except Exception:  # noqa: BLE001 - a connection that is already gone
                pass
            self.remote = None
        with self.lock:
            self.playback = self._new_playback()
            self.events = []
        self.timing = SessionTiming(self.cfg.frame_ms / 1000.0)

    def start_session(self, clock: str, seed: int, prompt: str | None) -> None:
        self.prompt = prompt
        self.open_remote()

    def open_remote(self) -> None:
        """A fresh remote session (hello, or the first frame after a reset: a new conversation)."""
        prompt = self.prompt
        if self.budget is not None:
            estimate = self.budget.pricing.estimate(self.budget.next_item_s)
            try:
                self.reservation = self.budget.reserve(estimate)
            except BudgetExceeded as exc:
                raise ProtocolViolation(ErrorCode.BUDGET, f"{self.cfg.model_id}: {exc}") from None
            self.reserved = estimate
        remote = RemoteSession(self.cfg, self.timing, self)
        self.remote = remote
        wait_s = (self.cfg.connect_timeout_s + 60.0) * (self.cfg.connect_retries + 1) + self.cfg.stall_timeout_s
        try:
            self.remote_loop.run(remote.open(prompt), timeout=wait_s)
        except RemoteFault as fault:
            raise ProtocolViolation(fault.code, f"{self.cfg.model_id}: {fault.message}") from None
        except TimeoutError:
            raise ProtocolViolation(ErrorCode.REMOTE_STALL, f"{self.cfg.model_id}: session not open after {wait_s:g} s") from None
        self.opened = True
        for retry in remote.retries:  # bounded connect retries, on the record
            self.event({"event": "bridge.connect_retry", **retry})

    def step(self, frame_idx: int, input_audio: np.ndarray, forced: np.ndarray | None) -> np.ndarray:
        if self.remote is None:
            if not self.opened:
                raise ProtocolViolation(ErrorCode.NOT_READY, "no remote session (hello first)")
            self.open_remote()  # after `reset`: frame 0's deadline counts from after the connection
        remote = self.remote
        assert remote is not None
        self.timing.frame_arrived(frame_idx, self.timing.now())
        if remote.fault is not None:
            raise ProtocolViolation(remote.fault.code, f"{self.cfg.model_id}: {remote.fault.message}")
        self._keep_within_budget(len(input_audio) / self.in_rate)
        pcm = (np.clip(input_audio, -1.0, 1.0) * 32767.0).round().astype("<i2").tobytes()
        self.remote_loop.call(remote.queue_append, frame_idx, pcm)
        with self.lock:
            gaps = self.playback.underruns
            out = self.playback.pull(frame_idx)
            if self.playback.underruns > gaps:
                gap = self.playback.gaps[-1]
                self.events.append({"event": "bridge.underrun", "reply": gap["reply"],
                                    "buffered_samples": self.playback.buffered_samples()})
            events, self.events = self.events, []
        for ev in events:
            self.emit({"type": "remote_event", "frame_idx": frame_idx, **ev})
        return out

    def end_session(self) -> dict:
        self.bill()
        if self.remote is not None and self.remote.fault is not None:  # a fault after the last frame is still one
            raise ProtocolViolation(self.remote.fault.code, f"{self.cfg.model_id}: {self.remote.fault.message}")
        summary = self.timing.summary()
        summary["remote_errors"] = self.remote.errors if self.remote is not None else 0
        with self.lock:
            summary["playback"] = self.playback.summary()
            events, self.events = self.events, []
        usage = self.remote.usage if self.remote is not None else []
        if usage:
            from duplexeval.realtime.cost import usage_tokens

            summary["tokens"] = {k: sum(usage_tokens(u)[k] for u in usage) for k in usage_tokens({})}
            summary["responses_billed"] = len(usage)
        if self.budget is not None:
            summary["cost"] = round(self.session_cost(), 6)
        last = max(0, len(self.timing.lateness) - 1)
        for ev in events + [{"event": "bridge.session_timing", **summary}]:
            self.emit({"type": "remote_event", "frame_idx": last, **ev})
        return {"remote_timing": summary}

    # ---- the remote session's sink (called on the remote loop) ----------------------------------
    def audio(self, rid: str, pcm: bytes) -> bool:
        with self.lock:
            return self.playback.add(rid, pcm)

    def finished(self, rid: str) -> None:
        with self.lock:
            self.playback.finish(rid)

    def cancelled(self, rid: str) -> int:
        with self.lock:
            return self.playback.drop(rid)

    def cut(self) -> tuple[int, str | None, int]:
        with self.lock:
            return self.playback.cut()

    def event(self, event: dict) -> None:
        with self.lock:
            self.events.append(event)


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    logging.getLogger("websockets").setLevel(logging.WARNING)  # one line per connection would crowd out error reasons
    try:
        cfg = RealtimeConfig.from_env()
    except (RealtimeConfigError, TypeError, ValueError) as exc:
        sys.exit(f"realtime bridge: bad configuration: {exc}")
    if cfg.api_key_env and not cfg.api_key():
        # A start-up failure (STARTUP items, redone on resume), not a model's behaviour.
        sys.exit(f"realtime bridge for {cfg.model_id}: environment variable {cfg.api_key_env} is not set "
                 "(launch.realtime.api_key_env); export the key there")
    try:
        budget = Budget.from_env(pricing_fields(cfg))
        if budget is not None:
            # Over the limit already: no start, so the run's remaining items of this model fail
            # fast as STARTUP (redone on resume) instead of one bridge start each.
            budget.check()
    except (BudgetExceeded, ValueError) as exc:
        sys.exit(f"realtime bridge for {cfg.model_id}: {exc}")
    run_server(lambda args: RealtimeBridge(cfg), argv, description=__doc__.splitlines()[0])


if __name__ == "__main__":
    main()
