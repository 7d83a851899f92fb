"""Live fuzzing of protocol v1, both ends over a real socket.

Server side: hypothesis-drawn sequences of binary and text messages (garbage bytes, frames
with bad kinds, sizes, indices and reserved bits, bad JSON, schema-violating and
out-of-order control messages) go into a running reference agent (`silent`, local
backend). Every answer the server sends is a valid control message or output frame, every
`error` carries a protocol code (fatal ones close the socket), a `hello` afterwards is
answered within a bounded time (no hang), the server process never dies, and a clean
session afterwards still works.

Client side: the harness (run_session over ProtocolClient) against a deliberately
misbehaving in-process server that answers with drawn bytes, JSON, frames and silences:
the session always returns, within a bounded time, either `ok` or a fault with a code and
a reason; it never hangs and never raises.

Fixed seed (derandomize), bounded examples: tests/fuzz_settings.py; `make fuzz` runs more.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import struct
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
from fuzz_settings import fuzz
from hypothesis import event, given, strategies as st
from websockets.asyncio.client import unix_connect
from websockets.asyncio.server import unix_serve
from websockets.exceptions import ConnectionClosed

from duplexeval.protocol import control
from duplexeval.protocol.control import ControlError
from duplexeval.protocol.wire import HEADER, ErrorCode, FrameError, FrameKind, decode_frame, encode_audio
from duplexeval.runner import FileStimulus, load_model_spec
from duplexeval.runner.backends import make_backend
from duplexeval.runner.client import Endpoint
from duplexeval.runner.session import run_session
from duplexeval.specs.modelspec import model_spec_from

IN_SAMPLES = 1280  # silent: 16 kHz, 80 ms
ANSWER_TIMEOUT_S = 5.0  # a hello must be answered within this, whatever came before
TYPES = ["hello", "ready", "end", "done", "reset", "snapshot", "restore", "error", "text", "state", "label", "x"]

# ---- strategies ----------------------------------------------------------------------

json_scalar = st.none() | st.booleans() | st.integers(-3, 2**33) | st.floats(allow_nan=False) | st.text(max_size=12)
json_value = st.recursive(json_scalar, lambda inner: st.lists(inner, max_size=3)
                          | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=6)
# Keys the control schema knows, so drawn dicts get close to (and past) the validator.
KEYS = ["type", "proto", "clock", "seed", "prompt", "tail_frames", "id", "frame_idx", "phase", "label",
        "code", "fatal", "message", "text", "state", "in_rate"]


@st.composite
def control_like(draw) -> dict:
    msg = draw(st.dictionaries(st.sampled_from(KEYS), json_value, max_size=5))
    if draw(st.booleans()):
        msg["type"] = draw(st.sampled_from(TYPES))
    if msg.get("type") == "end" and isinstance(msg.get("tail_frames"), int):
        msg["tail_frames"] = min(msg["tail_frames"], 8) if draw(st.booleans()) else msg["tail_frames"]
    return msg


@st.composite
def frame_like(draw, samples: int = IN_SAMPLES) -> bytes:
    kind = draw(st.sampled_from([1, 1, 1, 3, 2, 0, 4, 255]))
    reserved = draw(st.sampled_from([0, 0, 0, 1, 0xFFFF]))
    idx = draw(st.integers(0, 6) | st.integers(0, 2**32 - 1))
    n = draw(st.sampled_from([samples, samples, 0, 1, samples - 1, samples + 1]))
    odd = draw(st.sampled_from([b"", b"", b"\x01"]))
    return HEADER.pack(kind, draw(st.integers(0, 255)), reserved, idx) + b"\x00\x00" * n + odd


hello_msg = st.builds(lambda clock, seed: control.dump_control({"type": "hello", "proto": 1, "clock": clock, "seed": seed}),
                      st.sampled_from(["lockstep", "lockstep", "realtime", "warp"]), st.integers(0, 2**31))
good_frames = st.integers(0, 4).map(lambda i: encode_audio(FrameKind.INPUT, i, np.zeros(IN_SAMPLES, np.float32)))

client_message = st.one_of(
    st.binary(max_size=64),                                   # garbage bytes
    frame_like(),                                             # almost-frames
    good_frames,                                              # well-formed input, any order
    st.text(max_size=40),                                     # not JSON
    st.sampled_from(["{", "[]", "null", "1", '"hello"', "{}", '{"type": "hello"}', "\x00"]),
    control_like().map(lambda m: json.dumps(m)),              # JSON, mostly not schema-valid
    hello_msg,
    st.sampled_from([control.dump_control(m) for m in (
        {"type": "end", "tail_frames": 0}, {"type": "end", "tail_frames": 2}, {"type": "reset"},
        {"type": "snapshot", "id": "a"}, {"type": "restore", "id": "b"},
        {"type": "label", "frame_idx": 0, "phase": "start", "label": "T"})]),
)


# ---- the server side -----------------------------------------------------------------

@pytest.fixture(scope="module")
def silent_server():
    backend = make_backend(load_model_spec("silent"))
    endpoint = backend.start()
    try:
        yield backend, endpoint
    finally:
        backend.stop()


async def _connect(path: str):
    """A session; retries while the server still holds the previous one (BUSY)."""
    deadline = time.monotonic() + ANSWER_TIMEOUT_S
    while True:
        ws = await unix_connect(path, uri="ws://localhost/", max_size=None, compression=None, ping_interval=None)
        try:
            first = await asyncio.wait_for(ws.recv(), timeout=0.02)
        except asyncio.TimeoutError:
            return ws, []
        except ConnectionClosed:
            first = None
        await ws.close()
        if first is not None:
            msg = control.parse_control(first)
            assert msg["type"] == "error" and msg["code"] == ErrorCode.BUSY, msg
        assert time.monotonic() < deadline, "the server stayed BUSY after the previous session closed"
        await asyncio.sleep(0.01)


def _check_answer(data) -> dict | None:
    """Whatever the server sends is a valid control message or a valid output frame."""
    if isinstance(data, bytes):
        frame = decode_frame(data)
        assert frame.kind == FrameKind.OUTPUT and frame.n_samples == IN_SAMPLES, frame
        return None
    msg = control.parse_control(data)
    if msg["type"] == "error":
        assert msg["code"] in ErrorCode.ALL, msg
    return msg


async def _fuzz_session(path: str, messages: list) -> None:
    ws, _ = await _connect(path)
    closed = False
    fatal_seen = False
    try:
        for m in messages:
            try:
                await ws.send(m)
            except ConnectionClosed:
                closed = True
                break
        # Drain, then probe: an open session must answer hello with ready in bounded time.
        if not closed:
            try:
                await ws.send(control.dump_control(control.hello("lockstep", 0)))
            except ConnectionClosed:
                closed = True
        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        while not closed:
            left = deadline - time.monotonic()
            assert left > 0, "the server answered nothing to hello within the bound (hang)"
            try:
                data = await asyncio.wait_for(ws.recv(), timeout=left)
            except asyncio.TimeoutError:
                raise AssertionError("the server answered nothing to hello within the bound (hang)") from None
            except ConnectionClosed:
                closed = True
                break
            msg = _check_answer(data)
            if msg is not None and msg["type"] == "error" and msg["fatal"]:
                fatal_seen = True
            if msg is not None and msg["type"] == "ready" and not fatal_seen:
                break
        if fatal_seen:  # a fatal error closes the session
            with pytest.raises(ConnectionClosed):
                await asyncio.wait_for(ws.recv(), timeout=ANSWER_TIMEOUT_S)
    finally:
        await ws.close()


async def _clean_session(endpoint: Endpoint):
    stim = FileStimulus(np.zeros(4000, dtype=np.float32), 16000)
    return await run_session(endpoint, load_model_spec("silent"), stim, "lockstep")


@fuzz(0.3)
@given(messages=st.lists(client_message, min_size=1, max_size=8))
def test_a_live_server_answers_any_message_sequence_with_errors_never_a_hang_or_crash(silent_server, messages):
    backend, endpoint = silent_server
    asyncio.run(_fuzz_session(endpoint.unix_path, messages))
    assert backend.alive(), backend.diagnostics()


def test_after_the_fuzzing_the_server_is_alive_and_a_clean_session_works(silent_server):
    backend, endpoint = silent_server
    # Runs after the fuzz test in this module (same server); also alone, as a baseline.
    out = asyncio.run(_clean_session(endpoint))
    assert out.ok, out.fault
    assert out.frames == 4 and len(out.said) == 4 * IN_SAMPLES
    assert backend.alive()


@pytest.mark.parametrize("garbage", [b"\xde\xad\xbe\xef", b"", HEADER.pack(1, 0, 0, 7) + b"\0" * 2560, "{", '{"type":"end"}'])
def test_each_kind_of_garbage_before_hello_or_in_session_gets_its_error_code(silent_server, garbage):
    _, endpoint = silent_server

    async def go() -> list[str]:
        ws, _ = await _connect(endpoint.unix_path)
        try:
            await ws.send(control.dump_control(control.hello("lockstep", 0)))
            assert control.parse_control(await asyncio.wait_for(ws.recv(), 5))["type"] == "ready"
            await ws.send(garbage)
            msg = control.parse_control(await asyncio.wait_for(ws.recv(), 5))
            return [msg["type"], msg["code"]]
        finally:
            await ws.close()

    kind, code = asyncio.run(go())
    expected = ErrorCode.BAD_FRAME if isinstance(garbage, bytes) else ErrorCode.BAD_MESSAGE
    assert (kind, code) == ("error", expected)


# ---- the client side -----------------------------------------------------------------

READY = {"type": "ready", "proto": 1, "model": "mis", "in_rate": 16000, "out_rate": 16000, "frame_ms": 80,
         "in_frame_samples": IN_SAMPLES, "out_frame_samples": IN_SAMPLES, "capabilities": [], "clocks": ["lockstep"]}


@st.composite
def weird_ready(draw) -> str:
    msg = dict(READY)
    for key in draw(st.lists(st.sampled_from(["in_rate", "out_rate", "frame_ms", "in_frame_samples",
                                               "out_frame_samples", "capabilities", "proto", "model"]), max_size=2)):
        if key in ("capabilities",):
            msg[key] = draw(st.lists(st.sampled_from(["fork", "labels", "teacher_forcing", "bogus"]), max_size=2))
        elif key == "model":
            msg[key] = draw(st.text(max_size=4))
        elif key == "frame_ms":
            msg[key] = draw(st.sampled_from([0, -1, 1e-9, 40, 80.0, 79.99, 1e6, 1e300]))
        else:
            msg[key] = draw(st.sampled_from([0, 1, 999, 8000, 16000, 24000, 1280, 640, 2**20, -5, "16000"]))
    return json.dumps(msg)


output_frame = st.tuples(st.integers(0, 6), st.sampled_from([IN_SAMPLES, IN_SAMPLES, 0, 7, IN_SAMPLES + 1])).map(
    lambda t: encode_audio(FrameKind.OUTPUT, t[0], np.zeros(t[1], np.float32)))
server_message = st.one_of(
    st.binary(max_size=64), frame_like(), output_frame, st.text(max_size=40), weird_ready(),
    st.just(json.dumps(READY)), control_like().map(json.dumps),
    st.sampled_from([control.dump_control(m) for m in (
        {"type": "done", "frames_in": 5, "frames_out": 5}, {"type": "done", "frames_in": 0, "frames_out": 0},
        {"type": "text", "frame_idx": 0, "text": "hi"}, {"type": "state", "frame_idx": 1, "state": "speak"},
        {"type": "error", "code": "INTERNAL", "fatal": True, "message": "boom"},
        {"type": "error", "code": "BUSY", "fatal": False, "message": "later"})]),
)
# A script: ("send", msg) | ("recv",) (wait for what the client sends) | ("close",) | ("hang",)
action = st.one_of(server_message.map(lambda m: ("send", m)), st.just(("recv",)), st.just(("close",)))


@st.composite
def script(draw) -> tuple[list, str]:
    """A prefix that behaves (a ready, plain or weird, then k good output frames), then drawn actions."""
    prefix: list = []
    if draw(st.integers(0, 3)):
        prefix += [("recv",), ("send", draw(st.just(json.dumps(READY)) | weird_ready()))]
        for i in range(draw(st.integers(0, 5))):
            prefix += [("recv",), ("send", encode_audio(FrameKind.OUTPUT, i, np.zeros(IN_SAMPLES, np.float32)))]
    return prefix + draw(st.lists(action, max_size=8)), draw(st.sampled_from(["close", "hang", "vanish"]))


FAULT_BOUND_S = 6.0  # step and startup timeouts are 0.3 s; a session ends well within this


def _misbehaving(actions: list, end: str, stop: asyncio.Event):
    async def handler(ws) -> None:
        try:
            for act in actions:
                if act[0] == "send":
                    await ws.send(act[1])
                elif act[0] == "recv":
                    try:
                        await asyncio.wait_for(ws.recv(), timeout=0.2)
                    except asyncio.TimeoutError:
                        pass
                elif act[0] == "close":
                    await ws.close()
                    return
            if end == "hang":
                await stop.wait()  # until the harness has given up on it
            elif end == "vanish":
                ws.transport.abort()  # no close frame at all
            else:
                await ws.close()
        except ConnectionClosed:
            pass
    return handler


SPEC = model_spec_from({"id": "misbehaving", "launch": {"backend": "endpoint", "endpoint": "unix:/x",
                                                        "step_timeout_s": 0.3, "startup_timeout_s": 0.3},
                        "audio": {"in_rate": 16000, "out_rate": 16000, "frame_ms": 80}, "clocks": ["lockstep", "realtime"]})


async def _against(actions: list, end: str, clock: str):
    folder = tempfile.mkdtemp(prefix="dxf-")
    path = str(Path(folder) / "s")
    try:
        stop = asyncio.Event()
        async with unix_serve(_misbehaving(actions, end, stop), path, max_size=None, compression=None, ping_interval=None):
            stim = FileStimulus(np.zeros(6400, dtype=np.float32), 16000)  # 5 frames
            t0 = time.monotonic()
            try:
                out = await asyncio.wait_for(run_session(Endpoint(unix_path=path), SPEC, stim, clock), timeout=FAULT_BOUND_S)
            finally:
                stop.set()
            return out, time.monotonic() - t0
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@fuzz(0.3)
@given(script=script(), clock=st.sampled_from(["lockstep", "lockstep", "realtime"]))
def test_the_harness_against_a_misbehaving_server_ends_with_a_reason_never_a_hang_or_raise(script, clock):
    actions, end = script
    try:
        out, took = asyncio.run(_against(actions, end, clock))
    except asyncio.TimeoutError:
        raise AssertionError(f"run_session hung past {FAULT_BOUND_S} s") from None
    event(out.fault.code if out.fault else "ok")  # pytest --hypothesis-show-statistics
    if out.fault is None:
        assert out.frames == 5 and len(out.said) == 5 * IN_SAMPLES
    else:
        assert out.fault.code and out.fault.reason, out.fault
        assert out.events[-1]["type"] == "error" and out.events[-1]["reason"] == out.fault.reason


def test_the_misbehaving_server_strategies_decode_as_intended():
    """The strategies really produce what the docstrings say (guards the fuzzers themselves)."""
    with pytest.raises(FrameError):
        decode_frame(struct.pack("<BBHI", 9, 0, 0, 0))
    with pytest.raises(ControlError):
        control.parse_control('{"type": "ready"}')
    assert control.parse_control(json.dumps(READY))["type"] == "ready"
