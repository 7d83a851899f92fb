"""One client connection of a protocol v1 server, and what the connections of one server share.

`_Session` runs the protocol for one connection (handshake, frame checks, end/done, reset,
fork, errors) over a `DuplexServer`; `_Hub` holds the free session slots and the model
lock; `_Batcher` steps the frames waiting across sessions together (docs/protocol.md,
"Batched sessions").
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Callable

import numpy as np
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from duplexeval.protocol import control
from duplexeval.protocol.control import ControlError
from duplexeval.protocol.shim_api import CloseSession, DuplexServer, ProtocolViolation
from duplexeval.protocol.wire import (
    ErrorCode,
    FrameError,
    FrameKind,
    decode_frame,
)


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
