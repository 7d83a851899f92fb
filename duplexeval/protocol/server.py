"""Server side of protocol v1: a model shim subclasses `DuplexServer` and writes `step()`.

Everything that is protocol (handshake, frame checks, end/done, reset, fork, errors,
how many sessions at a time) lives here once, so a shim is only model code and every
shim behaves the same on the wire (docs/protocol.md: one protocol for every model).

Batched sessions (docs/protocol.md, "Batched sessions"): a server started with
`--max-sessions N` serves N connections at once, each with its own session object
(`session_model`), and steps the sessions that have a frame waiting together through
`step_batch`, so a model with a real batch dimension overrides that one method.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import os
import signal
import sys
import threading
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


class _Hub:
    """What the sessions of one server share: free slots, the model lock, the batcher."""

    def __init__(self, server: DuplexServer):
        self.server = server
        self.free = list(range(server.max_sessions))
        # One model call at a time: control calls run in worker threads, steps on the loop
        # thread, and a batched model's state is shared by every slot.
        self.model_lock = threading.Lock()
        self.batcher = _Batcher(self) if server.max_sessions > 1 else None

    def acquire(self) -> int | None:
        return self.free.pop(0) if self.free else None

    def release(self, slot: int) -> None:
        self.free.append(slot)
        self.free.sort()

    def locked_call(self, fn: Callable, *args: Any) -> Any:
        with self.model_lock:
            return fn(*args)


class _Batcher:
    """Collects one waiting frame per streaming session and steps them in one `step_batch`.

    A batch runs when every session that is streaming has a frame waiting, or when the
    first waiting frame has waited `batch_wait_s` (a session busy with a snapshot, or
    one that went quiet, must not stall the others). Which frames share a batch changes
    nothing for a model whose sessions are independent (the reference agents).
    """

    def __init__(self, hub: _Hub):
        self.hub = hub
        self.waiting: list[tuple[_Session, int, np.ndarray, np.ndarray | None, asyncio.Future]] = []
        self.streaming: set[_Session] = set()
        self.timer: asyncio.TimerHandle | None = None
        self.running = False

    async def step(self, session: "_Session", idx: int, audio: np.ndarray, forced: np.ndarray | None) -> np.ndarray:
        fut = asyncio.get_running_loop().create_future()
        self.waiting.append((session, idx, audio, forced, fut))
        self.streaming.add(session)
        self._poke()
        return await fut

    def leave(self, session: "_Session") -> None:
        """The session stops streaming (end, close): the others no longer wait for it."""
        self.streaming.discard(session)
        self._poke()

    def _poke(self) -> None:
        if self.running or not self.waiting:
            return
        if len(self.waiting) >= len(self.streaming):
            self._start()
        elif self.timer is None:
            self.timer = asyncio.get_running_loop().call_later(self.hub.server.batch_wait_s, self._start)

    def _start(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.running or not self.waiting:
            return
        batch, self.waiting = self.waiting, []
        self.running = True
        asyncio.get_running_loop().create_task(self._run(batch))

    async def _run(self, batch: list) -> None:
        srv = self.hub.server
        calls = [(sess.model, idx, audio, forced) for sess, idx, audio, forced, _ in batch]
        try:
            try:
                if all(sess.clock == "lockstep" for sess, *_ in batch):
                    outs = self.hub.locked_call(srv.step_batch, calls)
                else:
                    outs = await asyncio.to_thread(self.hub.locked_call, srv.step_batch, calls)
                if len(outs) != len(calls):
                    raise RuntimeError(f"step_batch returned {len(outs)} outputs for {len(calls)} sessions")
            except Exception as exc:  # a model failure is reported to every session in the batch
                err = ProtocolViolation(ErrorCode.INTERNAL, f"{type(exc).__name__}: {exc}")
                for *_, fut in batch:
                    if not fut.done():
                        fut.set_exception(err)
                return
            for (*_, fut), out in zip(batch, outs):
                if not fut.done():
                    fut.set_result(out)
        finally:
            self.running = False
            self._poke()


class _Session:
    """State of one WebSocket connection; `model` is the object that serves it (session_model)."""

    def __init__(self, server: DuplexServer, ws: ServerConnection, hub: _Hub, model: DuplexServer | None = None):
        self.server, self.ws, self.hub = server, ws, hub
        self.model = model if model is not None else server
        self.clock = "lockstep"
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
        finally:
            if self.hub.batcher is not None:
                self.hub.batcher.leave(self)

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
            return await asyncio.to_thread(self.hub.locked_call, fn, *args)
        except (ProtocolViolation, CloseSession):
            raise
        except Exception as exc:  # a model failure is reported, never hidden
            raise ProtocolViolation(ErrorCode.INTERNAL, f"{type(exc).__name__}: {exc}") from exc

    def call_inline(self, fn: Callable, *args: Any) -> Any:
        # Lockstep: the client is waiting for this very frame and nothing else can arrive
        # that needs an answer first, so the step runs on the loop thread (a thread hop
        # per frame was a third of the server's cost against `silent`, py-spy).
        try:
            return self.hub.locked_call(fn, *args)
        except (ProtocolViolation, CloseSession):
            raise
        except Exception as exc:
            raise ProtocolViolation(ErrorCode.INTERNAL, f"{type(exc).__name__}: {exc}") from exc

    async def on_text(self, text: str) -> None:
        try:
            msg = control.parse_control(text)
        except ControlError as exc:
            raise ProtocolViolation(ErrorCode.BAD_MESSAGE, str(exc)) from None
        kind = msg["type"]
        srv, model = self.server, self.model
        if kind == "hello":
            if msg["clock"] not in srv.clocks:
                raise ProtocolViolation(ErrorCode.UNSUPPORTED_CLOCK,
                                        f"clock {msg['clock']!r} not supported; this server offers {list(srv.clocks)}"
                                        + (f": {srv.clock_note}" if srv.clock_note else ""))
            await self.call(model.reset)
            await self.call(model.start_session, msg["clock"], msg["seed"], msg.get("prompt"))
            self._restart()
            self.clock = msg["clock"]
            self.started = True
            await self.ws.send(control.dump_control(srv.ready_message()))
            return
        if not self.started:
            raise ProtocolViolation(ErrorCode.NOT_READY, f"{kind!r} before hello")
        if kind == "reset":
            await self.call(model.reset)
            self._restart()
            await self.ws.send(control.dump_control(srv.ready_message()))
        elif kind == "end":
            await self.on_end(msg["tail_frames"])
        elif kind in ("snapshot", "restore"):
            await self.on_fork(kind, msg["id"])
        elif kind == "label":
            if "labels" not in srv.capabilities:
                raise ProtocolViolation(ErrorCode.UNSUPPORTED, "label message to a server without capability labels", fatal=False)
            await self.call(model.on_label, msg)
        else:
            raise ProtocolViolation(ErrorCode.BAD_MESSAGE, f"{kind!r} is a server-to-client message")

    def _restart(self) -> None:
        self.ended = False
        self.next_idx = self.frames_in = self.frames_out = 0
        self.forced.clear()
        self.snapshots.clear()

    async def on_fork(self, kind: str, snap_id: str) -> None:
        srv, model = self.server, self.model
        if "fork" not in srv.capabilities:
            raise ProtocolViolation(ErrorCode.UNSUPPORTED, f"{kind} needs capability fork", fatal=False)
        if kind == "snapshot":
            self.snapshots[snap_id] = (await self.call(model.snapshot), self.next_idx)
        else:
            if snap_id not in self.snapshots:
                raise ProtocolViolation(ErrorCode.BAD_MESSAGE, f"restore of unknown snapshot id {snap_id!r}", fatal=False)
            state, idx = self.snapshots[snap_id]
            await self.call(model.restore, state)
            self.next_idx, self.ended = idx, False
            self.forced = {k: v for k, v in self.forced.items() if k < idx}
        await self.ws.send(control.dump_control({"type": kind, "id": snap_id, "frame_idx": self.next_idx}))

    async def on_end(self, tail_frames: int) -> None:
        srv = self.server
        silence = np.zeros(srv.in_frame_samples, dtype=np.float32)
        for _ in range(tail_frames):
            await self.produce(self.next_idx, silence)
        self.ended = True
        if self.hub.batcher is not None:
            self.hub.batcher.leave(self)
        self.model._pending = []
        extra = await self.call(self.model.end_session)
        for msg in self.model._pending:
            await self.ws.send(control.dump_control(msg))
        self.model._pending = []
        done = {**(extra or {}), "type": "done", "frames_in": self.frames_in, "frames_out": self.frames_out}
        await self.ws.send(control.dump_control(done))

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
        model = self.model
        forced = self.forced.pop(idx, None)
        model._pending = []
        if self.hub.batcher is not None:
            out = await self.hub.batcher.step(self, idx, audio, forced)
        elif self.clock == "lockstep":
            out = self.call_inline(model.step, idx, audio, forced)
        else:
            out = await self.call(model.step, idx, audio, forced)
        try:
            data = model.encode_output(idx, out)
        except (ProtocolViolation, CloseSession):
            raise
        except Exception as exc:
            raise ProtocolViolation(ErrorCode.INTERNAL, f"encoding frame {idx}: {type(exc).__name__}: {exc}") from exc
        await self.ws.send(data)
        self.frames_out += 1
        self.next_idx = idx + 1
        if model._pending:
            for msg in model._pending:
                await self.ws.send(control.dump_control(msg))
            model._pending = []


def _handler_for(server: DuplexServer) -> Callable:
    hub = _Hub(server)

    async def handler(ws: ServerConnection) -> None:
        slot = hub.acquire()
        if slot is None:
            n = server.max_sessions
            busy = "another session is running on this server" if n == 1 else f"all {n} sessions of this server are in use"
            await _Session(server, ws, hub).send_error(ErrorCode.BUSY, busy, True)
            return
        try:
            await _Session(server, ws, hub, server.session_model(slot)).run()
        finally:
            hub.release(slot)

    return handler


async def serve_forever(server: DuplexServer, socket_path: str | None = None,
                        host: str = "127.0.0.1", port: int | None = None) -> int:
    """Serves until SIGTERM/SIGINT; returns the signal. A Unix socket is made world-writable so a host user
    can connect to a socket created by root inside a container (docs/protocol.md, "Transport")."""
    handler = _handler_for(server)
    opts = dict(max_size=MAX_MESSAGE_BYTES, compression=None, ping_interval=None)
    stop = asyncio.get_running_loop().create_future()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, lambda s=sig: stop.done() or stop.set_result(int(s)))
    if socket_path:
        if os.path.exists(socket_path):
            os.unlink(socket_path)  # a stale socket from a killed run would make bind fail
        async with unix_serve(handler, socket_path, **opts):
            os.chmod(socket_path, 0o666)
            print(f"{server.model_name}: listening on unix:{socket_path}", file=sys.stderr, flush=True)
            return await stop
    async with serve(handler, host, port, **opts):
        print(f"{server.model_name}: listening on ws://{host}:{port}", file=sys.stderr, flush=True)
        return await stop


def run_server(factory: Callable[[argparse.Namespace], DuplexServer], argv: Sequence[str] | None = None,
               description: str = "", add_arguments: Callable[[argparse.ArgumentParser], None] | None = None) -> None:
    """Command-line entry of a server: `--socket PATH` (default transport) or `--port N` (TCP loopback)."""
    parser = argparse.ArgumentParser(description=description)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--socket", help="Unix domain socket path to listen on")
    where.add_argument("--port", type=int, help="TCP port on --host (loopback by default)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--max-sessions", type=int, default=1,
                        help="sessions served at once, stepped together (batched sessions; default 1)")
    parser.add_argument("--batch-wait-ms", type=float, default=None,
                        help="how long a frame waits for the other sessions' frames before its batch runs")
    if add_arguments:
        add_arguments(parser)
    args = parser.parse_args(argv)
    server = factory(args)
    try:
        server.set_max_sessions(args.max_sessions)
    except ValueError as exc:
        parser.error(str(exc))
    if args.batch_wait_ms is not None:
        if args.batch_wait_ms < 0:
            parser.error(f"--batch-wait-ms must be >= 0, got {args.batch_wait_ms:g}")
        server.batch_wait_s = args.batch_wait_ms / 1000.0
    stopped_by = asyncio.run(serve_forever(server, args.socket, args.host, args.port))
    # 128 + signal, as a shell reports it: the harness tells a server stopped from outside (an
    # item it must replay) from one that ended on its own (docs/reliability.md, "Signals").
    sys.exit(128 + stopped_by)
