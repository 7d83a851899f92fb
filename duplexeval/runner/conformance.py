"""`duplexeval conformance`: the protocol checks any spec'd model must pass before a run.

Each check opens its own session, so one failure does not cascade into the next, and
reports pass / fail / skip with the reason. A model author runs this against a new shim
before anything is scored (docs/protocol.md, "Conformance").
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

import numpy as np

from duplexeval.protocol.wire import FrameKind, encode_frame
from duplexeval.runner.backends import make_backend
from duplexeval.runner.client import Endpoint, ProtocolClient
from duplexeval.runner.errors import ModelFault
from duplexeval.runner.session import harness_frame_samples, run_session
from duplexeval.runner.stimulus import FileStimulus
from duplexeval.specs.modelspec import ModelSpec

N_FRAMES = 12
TAIL_FRAMES = 2
# Long enough to reach the frames real items reach (issue 25: a fault from frame 20 on passed
# every 12- and 19-frame check and failed every item): 30 s is 375 frames of 80 ms in lockstep,
# cheap there; the wall-clock check is shorter by default (it costs its length in real time).
LONG_LOCKSTEP_S = 30.0
REALTIME_S = 3.0
SPOT_CHECKS = 16


@dataclass(frozen=True)
class CheckResult:
    name: str
    status: str  # "pass" | "fail" | "skip"
    detail: str = ""


class _Skip(Exception):
    pass


def test_signal(rate: int, n_samples: int, seed: int = 7) -> np.ndarray:
    """Deterministic tone + noise: exercises the model without being speech."""
    t = np.arange(n_samples) / rate
    rng = np.random.default_rng(seed)
    return (0.2 * np.sin(2 * np.pi * 220 * t) + 0.01 * rng.standard_normal(n_samples)).astype(np.float32)


def long_signal(rate: int, seconds: float, seed: int = 11) -> np.ndarray:
    """Tone bursts and pauses (1 s on, 0.5 s off) with noise: gives a VAD-driven model turns to take."""
    x = test_signal(rate, int(seconds * rate), seed)
    t = np.arange(len(x)) / rate
    return (x * ((t % 1.5) < 1.0)).astype(np.float32)


def spot_check(said: np.ndarray, heard_frames: list[np.ndarray], frame: int, seed: int, count: int = SPOT_CHECKS) -> str:
    """Randomly placed checks of the model channel over a whole session: one sample per heard
    sample (same rate as the input), every sample finite and within [-1, 1]. Raises on the
    first bad frame, naming it."""
    heard = sum(len(x) for x in heard_frames)
    if len(said) != heard:
        raise AssertionError(f"the model channel has {len(said)} samples for {heard} heard: its output rate or frame "
                             "size is not what ready declared")
    n = len(said) // frame
    rng = np.random.default_rng(seed)
    for i in sorted(rng.choice(n, size=min(count, n), replace=False)) if n else []:
        chunk = said[i * frame:(i + 1) * frame]
        if not np.all(np.isfinite(chunk)) or float(np.max(np.abs(chunk), initial=0.0)) > 1.0:
            raise AssertionError(f"output frame {i}: samples not finite or outside [-1, 1]")
    return f"{min(count, n)} random frames of {n} spot-checked"


class Conformance:
    def __init__(self, spec: ModelSpec, endpoint: Endpoint, long_lockstep_s: float = LONG_LOCKSTEP_S,
                 realtime_s: float = REALTIME_S):
        self.spec, self.endpoint = spec, endpoint
        self.long_lockstep_s, self.realtime_s = long_lockstep_s, realtime_s
        self.ready: dict | None = None

    async def session(self) -> ProtocolClient:
        return await ProtocolClient.open(self.endpoint, self.spec.step_timeout_s)

    @property
    def clock(self) -> str:
        """The clock the checks run on: lockstep where the spec offers it (a realtime-API model does not)."""
        return "lockstep" if "lockstep" in self.spec.clocks else self.spec.clocks[0]

    async def start(self, clock: str | None = None) -> ProtocolClient:
        clock = clock or self.clock
        # A server frees a slot once it has seen the previous session's close, which may
        # be just after this connection arrived: BUSY then is a race, retried briefly.
        for wait in (0.01, 0.05, 0.2, 0.5, None):
            client = await self.session()
            try:
                self.ready = await client.hello(clock, seed=1234,
                                                timeout=max(self.spec.startup_timeout_s, self.spec.step_timeout_s))
                return client
            except ModelFault as fault:
                await client.close()
                if fault.code != "BUSY" or wait is None:
                    raise
                await asyncio.sleep(wait)
        raise AssertionError("unreachable")

    def frames(self, start: int, count: int, seed: int = 7) -> list[np.ndarray]:
        r = self.ready
        n = r["in_frame_samples"]
        audio = test_signal(r["in_rate"], (start + count) * n, seed)
        return [audio[i * n : (i + 1) * n] for i in range(start, start + count)]

    async def run_frames(self, client: ProtocolClient, start: int, count: int, seed: int = 7) -> list[np.ndarray]:
        outs = []
        for i, x in enumerate(self.frames(start, count, seed), start):
            await client.send_audio(FrameKind.INPUT, i, x)
            outs.append(await client.recv_output(i, self.ready["out_frame_samples"]))
        return outs

    async def expect_error(self, client: ProtocolClient, code: str, what: str) -> str:
        try:
            msg = await client.recv_message(f"error {code} after {what}", timeout=self.spec.step_timeout_s)
        except ModelFault as fault:
            if fault.code == code:
                return f"{what} -> error {code}"
            raise AssertionError(f"{what}: expected error {code}, got {fault}") from None
        raise AssertionError(f"{what}: expected error {code}, got {str(msg)[:80]}")

    # ---- the checks ---------------------------------------------------------------------
    async def check_handshake(self) -> str:
        client = await self.start()
        try:
            r, spec = self.ready, self.spec
            frame = harness_frame_samples(r, 16000, spec)
            for key in ("in_rate", "out_rate", "frame_ms", "in_frame_samples", "out_frame_samples"):
                if key in spec.audio and spec.audio[key] != r[key]:
                    raise AssertionError(f"ready.{key}={r[key]} but the spec says audio.{key}={spec.audio[key]}")
            if set(r["capabilities"]) != set(spec.capabilities):
                raise AssertionError(f"ready.capabilities={sorted(r['capabilities'])}, spec says {sorted(spec.capabilities)}")
            if "clocks" in r and not set(spec.clocks) <= set(r["clocks"]):
                raise AssertionError(f"spec clocks {list(spec.clocks)} not all offered in ready.clocks {r['clocks']}")
            return f"{r['model']}: {r['in_rate']}/{r['out_rate']} Hz, {r['frame_ms']} ms frames ({frame} samples at 16 kHz)"
        finally:
            await client.close()

    async def check_lockstep(self) -> str:
        if self.clock != "lockstep":
            return await self.check_lockstep_refused()
        client = await self.start()
        try:
            outs = await self.run_frames(client, 0, N_FRAMES)
            await client.send_control({"type": "end", "tail_frames": TAIL_FRAMES})
            for i in range(N_FRAMES, N_FRAMES + TAIL_FRAMES):
                await client.recv_output(i, self.ready["out_frame_samples"])
            done = await client.recv_control("done")
            if (done["frames_in"], done["frames_out"]) != (N_FRAMES, N_FRAMES + TAIL_FRAMES):
                raise AssertionError(f"done reports {done['frames_in']} in / {done['frames_out']} out, "
                                     f"expected {N_FRAMES} / {N_FRAMES + TAIL_FRAMES}")
            return f"{len(outs)} frames in, {len(outs)} out in order; end(tail {TAIL_FRAMES}) -> {TAIL_FRAMES} frames + done"
        finally:
            await client.close()

    async def check_lockstep_refused(self) -> str:
        """A model without lockstep (a remote API on the wall clock) must refuse it and say why."""
        client = await self.session()
        try:
            await client.send_control({"type": "hello", "proto": 1, "clock": "lockstep", "seed": 0})
            try:
                msg = await client.recv_message("error UNSUPPORTED_CLOCK after hello lockstep", timeout=self.spec.step_timeout_s)
            except ModelFault as fault:
                if fault.code != "UNSUPPORTED_CLOCK":
                    raise AssertionError(f"hello lockstep: expected error UNSUPPORTED_CLOCK, got {fault}") from None
                return f"not in the spec's clocks; hello lockstep refused: {fault.reason}"
            raise AssertionError(f"the spec has no lockstep clock, but hello lockstep was answered with {str(msg)[:80]}")
        finally:
            await client.close()

    async def check_reset(self) -> str:
        client = await self.start()
        try:
            first = await self.run_frames(client, 0, N_FRAMES)
            await client.send_control({"type": "reset"})
            await client.recv_control("ready")
            second = await self.run_frames(client, 0, N_FRAMES)
            if self.clock != "lockstep":
                return f"reset -> ready, frame 0 again ({len(second)} frames; {self.clock} output is not compared)"
            if not all(np.array_equal(a, b) for a, b in zip(first, second)):
                raise AssertionError("the same input after reset gave different output (lockstep must be deterministic)")
            return "reset -> ready, frame 0 again, identical output (deterministic)"
        finally:
            await client.close()

    async def check_errors(self) -> str:
        notes = []
        client = await self.start()
        try:
            await client.ws.send(encode_frame(FrameKind.INPUT, 0, b"\x00\x00" * (self.ready["in_frame_samples"] - 3)))
            notes.append(await self.expect_error(client, "BAD_FRAME", "short input frame"))
        finally:
            await client.close()
        client = await self.session()
        try:
            await client.send_control({"type": "hello", "proto": 1, "clock": "sundial", "seed": 0})
            notes.append(await self.expect_error(client, "UNSUPPORTED_CLOCK", "clock 'sundial'"))
        finally:
            await client.close()
        client = await self.session()
        try:
            await client.ws.send(encode_frame(FrameKind.INPUT, 0, b"\x00\x00" * 16))
            notes.append(await self.expect_error(client, "NOT_READY", "frame before hello"))
        finally:
            await client.close()
        if self.ready.get("max_sessions", 1) > 1:
            return "; ".join(notes)  # a second session is served: batched_sessions checks BUSY at N + 1
        first = await self.start()
        try:
            second = await self.session()
            try:
                # The server refuses at once; no hello needed (sending it could race the close).
                notes.append(await self.expect_error(second, "BUSY", "second session"))
            finally:
                await second.close()
        finally:
            await first.close()
        return "; ".join(notes)

    async def check_batched_sessions(self) -> str:
        """max_sessions N > 1: N sessions at once give what N sessions one after another give,
        and session N+1 is BUSY; N = 1: a second session is BUSY (docs/protocol.md)."""
        probe = await self.start()
        n = self.ready.get("max_sessions", 1)
        if n == 1:
            try:
                second = await self.session()
                try:
                    return "max_sessions 1: " + await self.expect_error(second, "BUSY", "second session")
                finally:
                    await second.close()
            finally:
                await probe.close()
        await probe.close()
        alone = []
        for k in range(n):  # one after another: the reference outputs
            client = await self.start()
            try:
                alone.append(await self.run_frames(client, 0, N_FRAMES, seed=100 + k))
            finally:
                await client.close()
        clients = [await self.start() for _ in range(n)]
        try:
            together = await asyncio.gather(*(self.run_frames(c, 0, N_FRAMES, seed=100 + k) for k, c in enumerate(clients)))
            extra = await self.session()
            try:
                busy = await self.expect_error(extra, "BUSY", f"session {n + 1}")
            finally:
                await extra.close()
        finally:
            for c in clients:
                await c.close()
        for k, (a, b) in enumerate(zip(alone, together)):
            if not all(np.array_equal(x, y) for x, y in zip(a, b)):
                worst = max(float(np.max(np.abs(x - y))) for x, y in zip(a, b))
                raise AssertionError(f"session {k} of {n} at once differs from the same session alone "
                                     f"(max abs difference {worst:.3g})")
        return f"max_sessions {n}: {n} sessions at once = {n} separate sessions ({N_FRAMES} frames each); {busy}"

    async def check_fork(self) -> str:
        if "fork" not in self.spec.capabilities:
            raise _Skip("capability fork not declared")
        client = await self.start()
        try:
            half = N_FRAMES // 2
            await self.run_frames(client, 0, half)
            await client.send_control({"type": "snapshot", "id": "s1"})
            ack = await client.recv_control("snapshot")
            a = await self.run_frames(client, half, half)
            await client.send_control({"type": "restore", "id": "s1"})
            ack2 = await client.recv_control("restore")
            if ack.get("frame_idx") != half or ack2.get("frame_idx") != half:
                raise AssertionError(f"snapshot/restore acknowledged frame_idx {ack.get('frame_idx')}/{ack2.get('frame_idx')}, expected {half}")
            b = await self.run_frames(client, half, half)
            if not all(np.array_equal(x, y) for x, y in zip(a, b)):
                raise AssertionError("output after restore differs from output after snapshot")
            return f"snapshot at frame {half}, restore, identical continuation"
        finally:
            await client.close()

    async def check_teacher_forcing(self) -> str:
        if "teacher_forcing" not in self.spec.capabilities:
            raise _Skip("capability teacher_forcing not declared")
        client = await self.start()
        try:
            r = self.ready
            forced = test_signal(r["out_rate"], r["out_frame_samples"], seed=3)
            await client.send_audio(FrameKind.FORCED, 0, forced)
            await client.send_audio(FrameKind.INPUT, 0, self.frames(0, 1)[0])
            await client.recv_output(0, r["out_frame_samples"])
            return "forced frame accepted, output frame returned"
        finally:
            await client.close()

    async def check_labels(self) -> str:
        if "labels" not in self.spec.capabilities:
            raise _Skip("capability labels not declared")
        client = await self.start()
        try:
            await client.send_control({"type": "label", "frame_idx": 0, "phase": "start", "label": "N1", "turn_id": 0})
            await self.run_frames(client, 0, 2)
            return "label message accepted"
        finally:
            await client.close()

    async def _long_session(self, clock: str, seconds: float, seed: int, tail_frames: int = 0) -> tuple[Any, str]:
        """Play `seconds` of the long test signal on `clock`; a fault or a missing model
        channel fails the check; returns the outcome and the spot checks' summary."""
        rate = 16000
        stim = FileStimulus(long_signal(rate, seconds), rate, tail_frames=tail_frames)
        out = await run_session(self.endpoint, self.spec, stim, clock, rate, seed=seed)
        if out.fault is not None:
            raise AssertionError(f"{seconds:g} s session: {out.fault}")
        if out.said is None:
            raise AssertionError("no model channel recorded")
        return out, spot_check(out.said, out.heard, out.frame_samples, seed=seed)

    async def check_long_lockstep(self) -> str:
        """A whole item's worth of frames: faults that start late (frame 20, 200) show here."""
        if "lockstep" not in self.spec.clocks:
            raise _Skip("clock lockstep not in the spec: the realtime check plays --realtime-s on the wall clock "
                        "(raise it to reach late frames)")
        out, checked = await self._long_session("lockstep", self.long_lockstep_s, seed=9, tail_frames=TAIL_FRAMES)
        return f"{out.frames} frames ({self.long_lockstep_s:g} s + tail) in lockstep; {checked}"

    async def check_realtime(self) -> str:
        if "realtime" not in self.spec.clocks:
            raise _Skip("clock realtime not in the spec")
        out, checked = await self._long_session("realtime", self.realtime_s, seed=5)
        return f"{out.frames} frames on the wall clock, {out.stats['underrun_frames']} underrun; {checked}"

    CHECKS: tuple[tuple[str, str], ...] = (
        ("handshake", "check_handshake"), ("lockstep", "check_lockstep"), ("reset", "check_reset"),
        ("errors", "check_errors"), ("batched_sessions", "check_batched_sessions"), ("fork", "check_fork"), ("teacher_forcing", "check_teacher_forcing"),
        ("labels", "check_labels"), ("long_lockstep", "check_long_lockstep"), ("realtime", "check_realtime"),
    )

    async def run(self, report: Callable[[CheckResult], None] | None = None) -> list[CheckResult]:
        results = []
        for name, method in self.CHECKS:
            check: Callable[[], Awaitable[str]] = getattr(self, method)
            try:
                result = CheckResult(name, "pass", await check())
            except _Skip as skip:
                result = CheckResult(name, "skip", str(skip))
            except (AssertionError, ModelFault) as exc:
                result = CheckResult(name, "fail", str(exc))
            results.append(result)
            if report:
                report(result)
        return results


def run_conformance(spec: ModelSpec, report: Callable[[CheckResult], None] | None = None, *,
                    long_lockstep_s: float = LONG_LOCKSTEP_S, realtime_s: float = REALTIME_S) -> list[CheckResult]:
    """Starts the model from its spec, runs every check, stops it. A start failure is one failed check."""
    backend = make_backend(spec)
    try:
        try:
            endpoint = backend.start()
        except ModelFault as fault:
            result = CheckResult("start", "fail", str(fault))
            if report:
                report(result)
            return [result]
        start = CheckResult("start", "pass", f"listening on {endpoint.describe()}")
        if report:
            report(start)
        checks = Conformance(spec, endpoint, long_lockstep_s=long_lockstep_s, realtime_s=realtime_s)
        return [start] + asyncio.run(checks.run(report))
    finally:
        backend.stop()
