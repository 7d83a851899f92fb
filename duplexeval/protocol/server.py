"""Server side of protocol v1: a model shim subclasses `DuplexServer` and writes `step()`.

Everything that is protocol (handshake, frame checks, end/done, reset, fork, errors,
one session at a time) lives here once, so a shim is only model code and every shim
behaves the same on the wire (DESIGN.md: "one protocol for every model").
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from typing import Any, Callable, Sequence

import numpy as np
from websockets.asyncio.server import ServerConnection, serve, unix_serve
from websockets.exceptions import ConnectionClosed

from duplexeval.protocol import control
from duplexeval.protocol.control import CLOCKS, ControlError
from duplexeval.protocol.wire import (
    PROTOCOL_VERSION,
    ErrorCode,
    FrameError,
    FrameKind,
    decode_frame,
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
    """

    model_name: str = "unnamed"
    in_rate: int = 16000
    out_rate: int = 16000
    frame_ms: float = 80.0
    capabilities: tuple[str, ...] = ()
    clocks: tuple[str, ...] = CLOCKS

    def __init__(self) -> None:
        self._pending: list[dict] = []
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

    def snapshot(self) -> Any:
        """Capability fork: return an object that `restore` can return the model to."""
        raise NotImplementedError

    def restore(self, state: Any) -> None:
        raise NotImplementedError

    def on_label(self, msg: dict) -> None:
        """Capability labels: a scene label message (reference oracle only)."""

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
        }

    def encode_output(self, frame_idx: int, audio: np.ndarray) -> bytes:
        """Checks a step's output and encodes it; a shim bug becomes an INTERNAL error, not noise."""
        audio = np.asarray(audio, dtype=np.float32)
        if audio.shape != (self.out_frame_samples,):
            raise ProtocolViolation(ErrorCode.INTERNAL,
                                    f"step returned shape {audio.shape} at frame {frame_idx}, expected ({self.out_frame_samples},)")
        if not np.all(np.isfinite(audio)):
            raise ProtocolViolation(ErrorCode.INTERNAL, f"step returned NaN or infinite audio at frame {frame_idx}")
        return encode_audio(FrameKind.OUTPUT, frame_idx, audio)


class _Session:
    """State of one WebSocket connection; the server admits one at a time (error BUSY)."""

    def __init__(self, server: DuplexServer, ws: ServerConnection):
        self.server, self.ws = server, ws
        self.started = False
        self.ended = False
        self.next_idx = 0
        self.frames_in = 0
        self.frames_out = 0
        self.forced: dict[int, np.ndarray] = {}
        self.snapshots: dict[str, tuple[Any, int]] = {}

    async def run(self) -> None:
        try:
            async for message in self.ws:
                if isinstance(message, bytes):
                    await self.on_binary(message)
                else:
                    await self.on_text(message)
        except ProtocolViolation as exc:
            await self.send_error(exc.code, exc.message, exc.fatal)
        except CloseSession:
            await self.ws.close()
        except ConnectionClosed:
            pass

    async def send_error(self, code: str, message: str, fatal: bool) -> None:
        try:
            await self.ws.send(control.dump_control(control.error(code, message, fatal)))
            if fatal:
                await self.ws.close()
        except ConnectionClosed:
            pass

    async def call(self, fn: Callable, *args: Any) -> Any:
        # In a thread: a slow model must not stall the socket (realtime keeps receiving).
        try:
            return await asyncio.to_thread(fn, *args)
        except (ProtocolViolation, CloseSession):
            raise
        except Exception as exc:  # a model failure is reported, never hidden
            raise ProtocolViolation(ErrorCode.INTERNAL, f"{type(exc).__name__}: {exc}") from exc

    async def on_text(self, text: str) -> None:
        try:
            msg = control.parse_control(text)
        except ControlError as exc:
            raise ProtocolViolation(ErrorCode.BAD_MESSAGE, str(exc)) from None
        kind = msg["type"]
        srv = self.server
        if kind == "hello":
            if msg["clock"] not in srv.clocks:
                raise ProtocolViolation(ErrorCode.UNSUPPORTED_CLOCK,
                                        f"clock {msg['clock']!r} not supported; this server offers {list(srv.clocks)}")
            await self.call(srv.reset)
            await self.call(srv.start_session, msg["clock"], msg["seed"], msg.get("prompt"))
            self._restart()
            self.started = True
            await self.ws.send(control.dump_control(srv.ready_message()))
            return
        if not self.started:
            raise ProtocolViolation(ErrorCode.NOT_READY, f"{kind!r} before hello")
        if kind == "reset":
            await self.call(srv.reset)
            self._restart()
            await self.ws.send(control.dump_control(srv.ready_message()))
        elif kind == "end":
            await self.on_end(msg["tail_frames"])
        elif kind in ("snapshot", "restore"):
            await self.on_fork(kind, msg["id"])
        elif kind == "label":
            if "labels" not in srv.capabilities:
                raise ProtocolViolation(ErrorCode.UNSUPPORTED, "label message to a server without capability labels", fatal=False)
            await self.call(srv.on_label, msg)
        else:
            raise ProtocolViolation(ErrorCode.BAD_MESSAGE, f"{kind!r} is a server-to-client message")

    def _restart(self) -> None:
        self.ended = False
        self.next_idx = self.frames_in = self.frames_out = 0
        self.forced.clear()
        self.snapshots.clear()

    async def on_fork(self, kind: str, snap_id: str) -> None:
        srv = self.server
        if "fork" not in srv.capabilities:
            raise ProtocolViolation(ErrorCode.UNSUPPORTED, f"{kind} needs capability fork", fatal=False)
        if kind == "snapshot":
            self.snapshots[snap_id] = (await self.call(srv.snapshot), self.next_idx)
        else:
            if snap_id not in self.snapshots:
                raise ProtocolViolation(ErrorCode.BAD_MESSAGE, f"restore of unknown snapshot id {snap_id!r}", fatal=False)
            state, idx = self.snapshots[snap_id]
            await self.call(srv.restore, state)
            self.next_idx, self.ended = idx, False
            self.forced = {k: v for k, v in self.forced.items() if k < idx}
        await self.ws.send(control.dump_control({"type": kind, "id": snap_id, "frame_idx": self.next_idx}))

    async def on_end(self, tail_frames: int) -> None:
        srv = self.server
        silence = np.zeros(srv.in_frame_samples, dtype=np.float32)
        for _ in range(tail_frames):
            await self.produce(self.next_idx, silence)
        self.ended = True
        await self.ws.send(control.dump_control({"type": "done", "frames_in": self.frames_in, "frames_out": self.frames_out}))

    async def on_binary(self, data: bytes) -> None:
        srv = self.server
        if not self.started:
            raise ProtocolViolation(ErrorCode.NOT_READY, "audio frame before hello")
        if self.ended:
            raise ProtocolViolation(ErrorCode.NOT_READY, "audio frame after end; send reset first")
        try:
            frame = decode_frame(data)
        except FrameError as exc:
            raise ProtocolViolation(ErrorCode.BAD_FRAME, str(exc)) from None
        if frame.frame_idx != self.next_idx:
            raise ProtocolViolation(ErrorCode.BAD_FRAME, f"frame_idx {frame.frame_idx} out of order; expected {self.next_idx}")
        if frame.kind == FrameKind.FORCED:
            if "teacher_forcing" not in srv.capabilities:
                raise ProtocolViolation(ErrorCode.UNSUPPORTED, "forced frame to a server without capability teacher_forcing")
            if frame.n_samples != srv.out_frame_samples:
                raise ProtocolViolation(ErrorCode.BAD_FRAME, f"forced frame {frame.frame_idx} has {frame.n_samples} samples, expected {srv.out_frame_samples}")
            self.forced[frame.frame_idx] = frame.audio()
            return
        if frame.kind != FrameKind.INPUT:
            raise ProtocolViolation(ErrorCode.BAD_FRAME, f"frame kind {int(frame.kind)} is not sent by a client")
        if frame.n_samples != srv.in_frame_samples:
            raise ProtocolViolation(ErrorCode.BAD_FRAME, f"input frame {frame.frame_idx} has {frame.n_samples} samples, expected {srv.in_frame_samples}")
        self.frames_in += 1
        await self.produce(frame.frame_idx, frame.audio())

    async def produce(self, idx: int, audio: np.ndarray) -> None:
        srv = self.server
        forced = self.forced.pop(idx, None)
        srv._pending = []
        out = await self.call(srv.step, idx, audio, forced)
        try:
            data = srv.encode_output(idx, out)
        except (ProtocolViolation, CloseSession):
            raise
        except Exception as exc:
            raise ProtocolViolation(ErrorCode.INTERNAL, f"encoding frame {idx}: {type(exc).__name__}: {exc}") from exc
        await self.ws.send(data)
        self.frames_out += 1
        self.next_idx = idx + 1
        for msg in srv._pending:
            await self.ws.send(control.dump_control(msg))
        srv._pending = []


def _handler_for(server: DuplexServer) -> Callable:
    lock = asyncio.Lock()

    async def handler(ws: ServerConnection) -> None:
        if lock.locked():
            await _Session(server, ws).send_error(ErrorCode.BUSY, "another session is running on this server", True)
            return
        async with lock:
            await _Session(server, ws).run()

    return handler


async def serve_forever(server: DuplexServer, socket_path: str | None = None,
                        host: str = "127.0.0.1", port: int | None = None) -> None:
    """Serves until SIGTERM/SIGINT. A Unix socket is made world-writable so a host user can
    connect to a socket created by root inside a container (docs/protocol.md, "Transport")."""
    handler = _handler_for(server)
    opts = dict(max_size=MAX_MESSAGE_BYTES, compression=None, ping_interval=None)
    stop = asyncio.get_running_loop().create_future()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, lambda: stop.done() or stop.set_result(None))
    if socket_path:
        if os.path.exists(socket_path):
            os.unlink(socket_path)  # a stale socket from a killed run would make bind fail
        async with unix_serve(handler, socket_path, **opts):
            os.chmod(socket_path, 0o666)
            print(f"{server.model_name}: listening on unix:{socket_path}", file=sys.stderr, flush=True)
            await stop
    else:
        async with serve(handler, host, port, **opts):
            print(f"{server.model_name}: listening on ws://{host}:{port}", file=sys.stderr, flush=True)
            await stop


def run_server(factory: Callable[[argparse.Namespace], DuplexServer], argv: Sequence[str] | None = None,
               description: str = "", add_arguments: Callable[[argparse.ArgumentParser], None] | None = None) -> None:
    """Command-line entry of a server: `--socket PATH` (default transport) or `--port N` (TCP loopback)."""
    parser = argparse.ArgumentParser(description=description)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--socket", help="Unix domain socket path to listen on")
    where.add_argument("--port", type=int, help="TCP port on --host (loopback by default)")
    parser.add_argument("--host", default="127.0.0.1")
    if add_arguments:
        add_arguments(parser)
    args = parser.parse_args(argv)
    server = factory(args)
    asyncio.run(serve_forever(server, args.socket, args.host, args.port))
