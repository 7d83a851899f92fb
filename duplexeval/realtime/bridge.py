"""A protocol v1 server in front of a Realtime-API endpoint: the runner drives it like any model.

Each input frame is forwarded at once as an `input_audio_buffer.append` (the harness
sends frames on the wall clock, so the appends leave on it too); each output frame is
the audio the server's deltas have brought so far, in arrival order, silence when none
has arrived. So what the remote model says is recorded when it reached us, one frame
period of quantisation at most. Server events (speech started/stopped, response
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
        self.buffer = bytearray()
        self.events: list[dict] = []
        self.opened = False  # a session was opened on this connection: `reset` opens the next one lazily
        self.prompt: str | None = None
        self.budget = Budget.from_env(cfg.price_per_minute)  # the run's --max-cost, or None
        self.billed = True  # the current session's audio is in the ledger (nothing streamed yet)
        atexit.register(self.bill)

    # ---- session ----------------------------------------------------------------------------
    def bill(self) -> None:
        """The session's streamed audio into the run's cost ledger, once (end, reset or exit)."""
        if self.budget is not None and not self.billed:
            self.billed = True
            self.budget.record(self.cfg.model_id, self.timing.audio_in_s)

    def reset(self) -> None:
        self.bill()
        if self.remote is not None:
            try:
                self.remote_loop.run(self.remote.close(), timeout=5.0)
            except Exception:  # noqa: BLE001 - a connection that is already gone
                pass
            self.remote = None
        with self.lock:
            self.buffer = bytearray()
            self.events = []
        self.timing = SessionTiming(self.cfg.frame_ms / 1000.0)

    def start_session(self, clock: str, seed: int, prompt: str | None) -> None:
        self.prompt = prompt
        self.open_remote()

    def open_remote(self) -> None:
        """A fresh remote session (hello, or the first frame after a reset: a new conversation)."""
        prompt = self.prompt
        if self.budget is not None:
            try:
                self.budget.check()
            except BudgetExceeded as exc:
                raise ProtocolViolation(ErrorCode.BUDGET, f"{self.cfg.model_id}: {exc}") from None
            self.billed = False
        remote = RemoteSession(self.cfg, self.timing, self._on_audio, self._on_event, self._on_interrupt)
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
            self._on_event({"event": "bridge.connect_retry", **retry})

    def step(self, frame_idx: int, input_audio: np.ndarray, forced: np.ndarray | None) -> np.ndarray:
        if self.remote is None:
            if not self.opened:
                raise ProtocolViolation(ErrorCode.NOT_READY, "no remote session (hello first)")
            self.open_remote()  # after `reset`: frame 0's deadline counts from after the connection
        remote = self.remote
        self.timing.frame_arrived(frame_idx, self.timing.now())
        if remote.fault is not None:
            raise ProtocolViolation(remote.fault.code, f"{self.cfg.model_id}: {remote.fault.message}")
        pcm = (np.clip(input_audio, -1.0, 1.0) * 32767.0).round().astype("<i2").tobytes()
        self.remote_loop.call(remote.queue_append, frame_idx, pcm)
        n = self.out_frame_samples
        with self.lock:
            chunk = bytes(self.buffer[: 2 * n])
            del self.buffer[: 2 * n]
            events, self.events = self.events, []
        out = np.zeros(n, dtype=np.float32)
        if chunk:
            out[: len(chunk) // 2] = np.frombuffer(chunk, dtype="<i2").astype(np.float32) / 32768.0
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
            events, self.events = self.events, []
        last = max(0, len(self.timing.lateness) - 1)
        for ev in events + [{"event": "bridge.session_timing", **summary}]:
            self.emit({"type": "remote_event", "frame_idx": last, **ev})
        return {"remote_timing": summary}

    # ---- called on the remote loop --------------------------------------------------------------
    def _on_audio(self, pcm: bytes) -> None:
        with self.lock:
            self.buffer.extend(pcm)

    def _on_event(self, event: dict) -> None:
        with self.lock:
            self.events.append(event)

    def _on_interrupt(self) -> int:
        with self.lock:
            dropped = len(self.buffer) // 2
            self.buffer = bytearray()
        return dropped


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
        budget = Budget.from_env(cfg.price_per_minute)
        if budget is not None:
            # Over the limit already: no start, so the run's remaining items of this model fail
            # fast as STARTUP (redone on resume) instead of one bridge start each.
            budget.check()
    except (BudgetExceeded, ValueError) as exc:
        sys.exit(f"realtime bridge for {cfg.model_id}: {exc}")
    run_server(lambda args: RealtimeBridge(cfg), argv, description=__doc__.splitlines()[0])


if __name__ == "__main__":
    main()
