"""What a model shim writes against: `DuplexServer` (subclass it, write `step()`) and the
exceptions a shim raises. The rest of the server side of protocol v1 is protocol/session.py
(one connection, the hub its sessions share, the batcher) and protocol/transport.py (the
socket or port it listens on, the command line); protocol/server.py gathers the public names.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from duplexeval.protocol import control
from duplexeval.protocol.control import CLOCKS
from duplexeval.protocol.wire import (
    PROTOCOL_VERSION,
    ErrorCode,
    FrameError,
    FrameKind,
    encode_audio,
)

# Large enough for 1 s frames at 48 kHz with room to spare; frames are never compressed.
MAX_MESSAGE_BYTES = 16 * 1024 * 1024


class ProtocolViolation(Exception):
    """Raised inside a session to send `error{code, fatal, message}` to the client."""

    def __init__(self, code: str, message: str, fatal: bool = True):
        super().__init__(message)
        self.code, self.message, self.fatal = code, message, fatal


class CloseSession(Exception):
    """Raised by a shim to drop the connection without a message (its upstream model went away)."""


class DuplexServer:
    """Base of every protocol v1 server. Subclasses set the audio attributes and write `step`.

    Only `step` is required. `reset` is called on every hello and reset, so a session
    never inherits state from the previous one (resume must give the same bytes, which
    needs items to be independent of the order they ran in).

    Batched sessions: a shim whose `reset` reassigns every per-session attribute (so a
    shallow copy shares only read-only things such as weights or a synthesized loop)
    raises `max_sessions_supported`; `--max-sessions N` then serves N sessions, each on
    its own `session_model(slot)`. `step_batch` steps several of them in one call.
    """

    model_name: str = "unnamed"
    in_rate: int = 16000
    out_rate: int = 16000
    frame_ms: float = 80.0
    capabilities: tuple[str, ...] = ()
    clocks: tuple[str, ...] = CLOCKS
    clock_note: str = ""  # why a clock is not offered, appended to UNSUPPORTED_CLOCK's message
    max_sessions_supported: int = 1  # the most concurrent sessions this class can keep apart
    max_sessions: int = 1  # what this server offers (`--max-sessions`, declared in ready)
    batch_wait_s: float = 0.005  # how long a waiting frame waits for the other sessions' (`--batch-wait-ms`)
    session_slot: int = 0  # which concurrent session this object serves (0 when there is one)

    def __init__(self) -> None:
        self._pending: list[dict] = []
        self._slots: dict[int, DuplexServer] = {}
        for name, rate in (("in_rate", self.in_rate), ("out_rate", self.out_rate)):
            samples = rate * self.frame_ms / 1000.0
            if abs(samples - round(samples)) > 1e-9:
                raise ValueError(f"{type(self).__name__}: {name}={rate} x frame_ms={self.frame_ms} is not whole samples")

    # ---- what a shim writes -------------------------------------------------------------
    def step(self, frame_idx: int, input_audio: np.ndarray, forced: np.ndarray | None) -> np.ndarray:
        """One frame in, one frame out: float32 `out_frame_samples` long (zeros when silent).

        `forced` is assistant audio at `out_rate` (teacher forcing); a model that forces
        it should treat it as what it said during this frame.
        """
        raise NotImplementedError

    def reset(self) -> None:
        """Forget everything about the session."""

    def start_session(self, clock: str, seed: int, prompt: str | None) -> None:
        """Called on hello, after `reset()`; seed any randomness here for lockstep determinism."""

    def step_batch(self, calls: list[tuple["DuplexServer", int, np.ndarray, np.ndarray | None]]) -> list[np.ndarray]:
        """Steps several sessions one frame each: `(session_model, frame_idx, input, forced)` -> outputs, in order.

        The default steps them one after another (outputs are exactly those of separate
        runs); a model with a batch dimension overrides this to run them as one batch.
        If it raises, every session in the batch gets error{INTERNAL}.
        """
        return [model.step(idx, audio, forced) for model, idx, audio, forced in calls]

    def session_model(self, slot: int) -> "DuplexServer":
        """The object whose reset/step/snapshot/... serve concurrent session `slot`.

        With one session that is the server itself (every shim as it always was); with
        more, a shallow twin per slot, made once and reused (`reset` runs on every hello).
        """
        if self.max_sessions == 1:
            return self
        if slot not in self._slots:
            twin = copy.copy(self)
            twin._pending, twin._slots, twin.session_slot = [], {}, slot
            twin.reset()
            self._slots[slot] = twin
        return self._slots[slot]

    def set_max_sessions(self, n: int) -> None:
        if not 1 <= n <= self.max_sessions_supported:
            raise ValueError(f"{type(self).__name__}: --max-sessions {n} is outside 1..{self.max_sessions_supported} "
                             "(the sessions this server can keep apart)")
        self.max_sessions = int(n)

    def snapshot(self) -> Any:
        """Capability fork: return an object that `restore` can return the model to."""
        raise NotImplementedError

    def restore(self, state: Any) -> None:
        raise NotImplementedError

    def on_label(self, msg: dict) -> None:
        """Capability labels: a scene label message (reference oracle only)."""

    def end_session(self) -> dict:
        """Called on `end`, after the tail frames: extra fields for `done` (v1 allows unknown fields).

        Events emitted here go out before `done`, the last moment a session's own account
        (a bridge's timing figures) can reach the harness's records.
        """
        return {}

    def emit(self, msg: dict) -> None:
        """Queue a `text` or `state` event; it is sent right after the current output frame."""
        self._pending.append(control.validate_control(msg))

    # ---- derived ------------------------------------------------------------------------
    @property
    def in_frame_samples(self) -> int:
        return round(self.in_rate * self.frame_ms / 1000.0)

    @property
    def out_frame_samples(self) -> int:
        return round(self.out_rate * self.frame_ms / 1000.0)

    def ready_message(self) -> dict:
        return {
            "type": "ready", "proto": PROTOCOL_VERSION, "model": self.model_name,
            "in_rate": self.in_rate, "out_rate": self.out_rate, "frame_ms": self.frame_ms,
            "in_frame_samples": self.in_frame_samples, "out_frame_samples": self.out_frame_samples,
            "capabilities": list(self.capabilities), "clocks": list(self.clocks),
            "max_sessions": self.max_sessions,
        }

    def encode_output(self, frame_idx: int, audio: np.ndarray) -> bytes:
        """Checks a step's output and encodes it; a shim bug becomes an INTERNAL error, not noise."""
        audio = np.asarray(audio, dtype=np.float32)
        if audio.shape != (self.out_frame_samples,):
            raise ProtocolViolation(ErrorCode.INTERNAL,
                                    f"step returned shape {audio.shape} at frame {frame_idx}, expected ({self.out_frame_samples},)")
        try:
            return encode_audio(FrameKind.OUTPUT, frame_idx, audio)  # refuses NaN/inf (one check, not two)
        except FrameError:
            raise ProtocolViolation(ErrorCode.INTERNAL, f"step returned NaN or infinite audio at frame {frame_idx}") from None
