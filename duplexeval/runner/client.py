"""Client side of protocol v1: one WebSocket session with a model server.

Every way a model can misbehave on the wire is turned into a `ModelFault` here, with a
reason a person can act on; the session loop above never has to look at bytes.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import numpy as np
from websockets.asyncio.client import ClientConnection, connect, unix_connect
from websockets.exceptions import ConnectionClosed, WebSocketException

from duplexeval.protocol import control
from duplexeval.protocol.control import ControlError
from duplexeval.protocol.wire import FrameError, FrameKind, decode_frame, encode_audio
from duplexeval.runner.errors import ModelFault

MAX_MESSAGE_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Endpoint:
    """Where a model server listens: a Unix socket path (default) or TCP on loopback."""

    unix_path: str | None = None
    host: str = "127.0.0.1"
    port: int | None = None

    def describe(self) -> str:
        return f"unix:{self.unix_path}" if self.unix_path else f"ws://{self.host}:{self.port}"


class ProtocolClient:
    """One session. Text/state events the model sends are collected in `model_events`."""

    def __init__(self, ws: ClientConnection, step_timeout_s: float):
        self.ws = ws
        self.step_timeout_s = step_timeout_s
        self.ready: dict | None = None
        self.model_events: list[dict] = []

    @classmethod
    async def open(cls, endpoint: Endpoint, step_timeout_s: float, connect_timeout_s: float = 10.0) -> "ProtocolClient":
        opts = dict(max_size=MAX_MESSAGE_BYTES, compression=None, ping_interval=None, open_timeout=connect_timeout_s)
        try:
            if endpoint.unix_path:
                ws = await unix_connect(endpoint.unix_path, uri="ws://localhost/", **opts)
            else:
                ws = await connect(f"ws://{endpoint.host}:{endpoint.port}/", **opts)
        except (OSError, WebSocketException, asyncio.TimeoutError) as exc:
            raise ModelFault("CONNECT", f"cannot open a session on {endpoint.describe()}: {exc}") from None
        return cls(ws, step_timeout_s)

    async def close(self) -> None:
        try:
            await asyncio.wait_for(self.ws.close(), timeout=2.0)
        except Exception:
            pass
        finally:
            # A server stuck in a step never answers the close handshake, and a cancelled
            # close leaves the socket open: drop it, or every hung item leaks one.
            transport = getattr(self.ws, "transport", None)
            if transport is not None and not transport.is_closing():
                transport.abort()

    # ---- sending ------------------------------------------------------------------------
    async def send_control(self, msg: dict) -> None:
        await self._send(control.dump_control(msg))

    async def send_audio(self, kind: FrameKind, frame_idx: int, audio: np.ndarray) -> None:
        await self._send(encode_audio(kind, frame_idx, audio))

    async def _send(self, data: str | bytes) -> None:
        try:
            await self.ws.send(data)
        except ConnectionClosed as exc:
            raise await self._fault_after_close(exc) from None

    async def _fault_after_close(self, exc: ConnectionClosed) -> ModelFault:
        """A server that refuses a session (BUSY) says why and closes at once, so a send can
        fail before the reason is read: the reason is still buffered, and it is the fault."""
        try:
            async with asyncio.timeout(0.5):
                data = await self.ws.recv()  # messages that arrived before the close come first
            msg = control.parse_control(data) if isinstance(data, str) else None
        except (ConnectionClosed, TimeoutError, ControlError):
            msg = None
        if msg is not None and msg["type"] == "error":
            return _reported_fault(msg)
        return ModelFault("CLOSED", f"model closed the socket ({_close_reason(exc)})")

    # ---- receiving ----------------------------------------------------------------------
    async def recv_message(self, waiting_for: str, frame_idx: int | None = None, timeout: float | None = None) -> dict | tuple[int, np.ndarray]:
        """Next message: a validated control dict, or (frame_idx, audio) of an output frame."""
        timeout = self.step_timeout_s if timeout is None else timeout
        try:
            # asyncio.timeout, not wait_for: wait_for wraps recv in a new Task per frame.
            async with asyncio.timeout(timeout):
                data = await self.ws.recv()
        except TimeoutError:
            raise ModelFault("TIMEOUT", f"no {waiting_for} within {timeout:g} s (model hung or too slow)", frame_idx) from None
        except ConnectionClosed as exc:
            raise ModelFault("CLOSED", f"model closed the socket while the harness waited for {waiting_for} ({_close_reason(exc)})", frame_idx) from None
        if isinstance(data, bytes):
            try:
                frame = decode_frame(data)
            except FrameError as exc:
                raise ModelFault("BAD_FRAME", f"garbage binary message: {exc}", frame_idx) from None
            if frame.kind != FrameKind.OUTPUT:
                raise ModelFault("BAD_FRAME", f"model sent frame kind {int(frame.kind)}, only 2 (output) is allowed", frame_idx)
            return frame.frame_idx, frame.audio()
        try:
            msg = control.parse_control(data)
        except ControlError as exc:
            raise ModelFault("BAD_MESSAGE", f"garbage text message: {exc}", frame_idx) from None
        if msg["type"] == "error":
            raise _reported_fault(msg, frame_idx)
        return msg

    async def recv_control(self, expected: str, timeout: float | None = None) -> dict:
        """Waits for control message `expected`, keeping text/state events that arrive first."""
        while True:
            msg = await self.recv_message(f"'{expected}'", timeout=timeout)
            if isinstance(msg, tuple):
                raise ModelFault("BAD_FRAME", f"unexpected output frame {msg[0]} while waiting for '{expected}'")
            if msg["type"] == expected:
                return msg
            self._keep_event(msg, expected)

    async def recv_output(self, frame_idx: int, out_samples: int, timeout: float | None = None) -> np.ndarray:
        """Waits for output frame `frame_idx` (lockstep: exactly one per input frame, in order)."""
        while True:
            msg = await self.recv_message(f"output frame {frame_idx}", frame_idx, timeout)
            if isinstance(msg, dict):
                self._keep_event(msg, f"output frame {frame_idx}")
                continue
            idx, audio = msg
            check_output_frame(idx, audio, frame_idx, out_samples)
            return audio

    def _keep_event(self, msg: dict, waiting_for: str) -> None:
        if msg["type"] not in ("text", "state", "remote_event"):
            raise ModelFault("BAD_MESSAGE", f"unexpected {msg['type']!r} message while waiting for {waiting_for}")
        self.model_events.append(msg)

    # ---- requests -----------------------------------------------------------------------
    async def hello(self, clock: str, seed: int, prompt: str | None = None, timeout: float | None = None) -> dict:
        await self.send_control(control.hello(clock, seed, prompt))
        self.ready = await self.recv_control("ready", timeout)
        return self.ready


def _reported_fault(msg: dict, frame_idx: int | None = None) -> ModelFault:
    return ModelFault(msg["code"], f"model reported error ({'fatal' if msg['fatal'] else 'non-fatal'}): {msg['message']}", frame_idx)


def check_output_frame(idx: int, audio: np.ndarray, expected_idx: int | None, out_samples: int) -> None:
    if expected_idx is not None and idx != expected_idx:
        raise ModelFault("BAD_FRAME", f"output frame_idx {idx}, expected {expected_idx} (one output per input, in order)", expected_idx)
    if len(audio) != out_samples:
        raise ModelFault("BAD_FRAME", f"output frame {idx} has {len(audio)} samples, the model declared {out_samples}", idx)


def _close_reason(exc: ConnectionClosed) -> str:
    rcvd = exc.rcvd
    if rcvd is None:
        return "no close frame: the connection dropped"
    return f"close code {rcvd.code}{': ' + rcvd.reason if rcvd.reason else ''}"


__all__ = ["Endpoint", "ModelFault", "ProtocolClient", "check_output_frame"]
