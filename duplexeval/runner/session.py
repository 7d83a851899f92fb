"""One session: play a Stimulus to a connected model, frame by frame, and record both sides.

Clocks (docs/protocol.md): `lockstep` sends frame n and waits for output frame n, in
virtual time, so results are deterministic and the model runs as fast as it can;
`realtime` sends on the wall clock and plays what comes back from a buffer, so compute
time shows up as latency exactly as a listener would hear it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from duplexeval.protocol.wire import FrameKind
from duplexeval.runner.client import Endpoint, ProtocolClient, check_output_frame
from duplexeval.runner.errors import ModelFault
from duplexeval.runner.framing import FrameResampler
from duplexeval.runner.stimulus import Stimulus
from duplexeval.specs.modelspec import ModelSpec

CLOCKS = ("lockstep", "realtime")


@dataclass
class SessionOutcome:
    """Everything an item folder is written from. `fault` set means status `error`."""

    rate: int
    frame_samples: int = 0
    frames: int = 0
    # repr=False: asyncio.run formats the main task's result when it restores the SIGINT
    # handler, and a repr of every heard frame cost more than the whole session (py-spy).
    heard: list[np.ndarray] = field(default_factory=list, repr=False)
    said: np.ndarray | None = field(default=None, repr=False)
    events: list[dict] = field(default_factory=list, repr=False)
    ready: dict | None = None
    fault: ModelFault | None = None
    stats: dict = field(default_factory=dict)
    # Lockstep only, on request (`run_session(keep_model_frames=True)`): each output frame as the
    # model sent it, before resampling, so a caller can rebuild the recording of any prefix
    # (runner/one_pass.py); the delay-free `said` of a prefix is not a prefix of `said`.
    model_frames: list[np.ndarray] | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return self.fault is None

    def event(self, frame: int, type_: str, **fields: object) -> None:
        t = frame * self.frame_samples / self.rate if self.frame_samples else 0.0
        self.events.append({"t": round(t, 6), "frame": frame, "type": type_, **fields})


def harness_frame_samples(ready: dict, rate: int, spec: ModelSpec) -> int:
    """Harness-side frame size for the model's frame duration; checks ready against itself and the spec."""
    name = f"model {spec.id}: ready"
    for side in ("in", "out"):
        r, n = ready[f"{side}_rate"], ready[f"{side}_frame_samples"]
        if Fraction(n, r) * 1000 != Fraction(ready["frame_ms"]).limit_denominator(10**6):
            raise ModelFault("BAD_READY", f"{name} {side}_frame_samples={n} at {side}_rate={r} is not frame_ms={ready['frame_ms']}")
        declared = spec.audio.get(f"{side}_rate")
        if declared is not None and declared != r:
            raise ModelFault("BAD_READY", f"{name} {side}_rate={r} but the spec says audio.{side}_rate={declared}")
    samples = Fraction(ready["in_frame_samples"] * rate, ready["in_rate"])
    if samples.denominator != 1:
        raise ModelFault("BAD_READY", f"{name} frame_ms={ready['frame_ms']} is not whole samples at the harness rate {rate}")
    return int(samples)


def pipeline_window(spec: ModelSpec, stimulus: Stimulus, override: int | None = None) -> int:
    """Frames in flight in lockstep: `override`, else the spec's `launch.pipeline_frames` (default 1).

    More than one only for a stimulus that declares its input does not depend on what
    the model says (`Stimulus.output_independent`): the adaptive MPE scheduler waits for
    the model to fall silent, so it always runs with one frame in flight.
    """
    k = override if override is not None else spec.data.get("launch", {}).get("pipeline_frames", 1)
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"model {spec.id}: pipeline window (launch.pipeline_frames) must be an integer >= 1, got {k!r}")
    return k if stimulus.output_independent else 1


async def run_session(endpoint: Endpoint, spec: ModelSpec, stimulus: Stimulus, clock: str = "lockstep",
                      rate: int = 16000, seed: int = 0, prompt: str | None = None,
                      pipeline_frames: int | None = None, keep_model_frames: bool = False) -> SessionOutcome:
    """Runs one session; a model fault is returned in the outcome, never raised.

    `pipeline_frames` overrides the spec's lockstep window (see `pipeline_window`); the
    recorded bytes are the same for every window. `keep_model_frames`: lockstep keeps the
    model's raw output frames in `out.model_frames` (for cutting prefixes, runner/one_pass.py).
    """
    if clock not in CLOCKS:
        raise ValueError(f"clock must be one of {CLOCKS}, got {clock!r}")
    window = pipeline_window(spec, stimulus, pipeline_frames)
    out = SessionOutcome(rate=rate, model_frames=[] if keep_model_frames and clock == "lockstep" else None)
    client: ProtocolClient | None = None
    try:
        client = await ProtocolClient.open(endpoint, spec.step_timeout_s)
        ready = await client.hello(clock, seed, prompt, timeout=max(spec.startup_timeout_s, spec.step_timeout_s))
        out.ready = ready
        out.frame_samples = harness_frame_samples(ready, rate, spec)
        stimulus.bind(rate, out.frame_samples)
        out.event(0, "session_start", model=ready["model"], clock=clock, seed=seed,
                  in_rate=ready["in_rate"], out_rate=ready["out_rate"], frame_ms=ready["frame_ms"])
        loop = (_Lockstep(client, ready, stimulus, out, window) if clock == "lockstep"
                else _Realtime(client, ready, stimulus, out, spec))
        await loop.run()
        out.event(out.frames, "session_end", frames=out.frames, **out.stats)
    except ModelFault as fault:
        out.fault = fault
        out.event(fault.frame_idx if fault.frame_idx is not None else out.frames, "error", code=fault.code, reason=fault.reason)
    finally:
        if client is not None:
            await client.close()
    return out


class _FrameLoop:
    """What both clocks share: the per-frame calls into the stimulus (stimulus.py, "order")."""

    def __init__(self, client: ProtocolClient, ready: dict, stimulus: Stimulus, out: SessionOutcome):
        self.client, self.ready, self.stimulus, self.out = client, ready, stimulus, out
        self.caps = set(ready["capabilities"])
        f = out.frame_samples
        self.in_rs = FrameResampler(out.rate, ready["in_rate"], ready["in_frame_samples"])
        self.out_rs = FrameResampler(ready["out_rate"], out.rate, f)
        self.forced_rs = FrameResampler(out.rate, ready["out_rate"], ready["out_frame_samples"])
        self.forced: dict[int, np.ndarray] = {}
        self.held: list[tuple[int, dict]] | None = None  # pipelined: (frame sent, event) not yet written

    async def send_frame(self, n: int) -> bool:
        """Sends frame n (labels, forced audio, input); False when the stimulus has finished."""
        x = self.stimulus.next_input(n)
        if x is None:
            return False
        f = self.out.frame_samples
        x = np.asarray(x, dtype=np.float32)
        if x.shape != (f,):
            raise ValueError(f"{type(self.stimulus).__name__}.next_input({n}) returned shape {x.shape}, expected ({f},)")
        forced = self.stimulus.forced_output(n)
        for label in self.stimulus.drain_labels():
            if "labels" in self.caps:  # side channel: only the reference oracle may see labels
                await self.client.send_control(label)
        if forced is not None:
            if "teacher_forcing" not in self.caps:
                raise ValueError(f"stimulus forces assistant audio but model {self.ready['model']} lacks capability teacher_forcing")
            forced = np.asarray(forced, dtype=np.float32)
            if forced.shape != (f,):
                raise ValueError(f"forced_output({n}) returned shape {forced.shape}, expected ({f},)")
            self.forced[n] = forced
            await self.client.send_audio(FrameKind.FORCED, n, self.forced_rs.push(forced))
        elif self.forced:
            self.forced_rs.push(np.zeros(f, dtype=np.float32))  # keeps the forced stream continuous in time
        await self.client.send_audio(FrameKind.INPUT, n, self.in_rs.push(x))
        self.out.heard.append(x.copy())
        return True

    def observe(self, n: int, audio: np.ndarray) -> None:
        if n in self.forced:
            audio = self.forced[n]  # what the assistant "said" in a forced frame is the forced audio
        self.stimulus.observe_output(n, audio)
        self.write_model_events()
        if self.held is None:
            self._write_stimulus_events(self.stimulus.drain_events())
            return
        # Pipelined: an event drained while frame m was sent is written at observe(m), where
        # one frame in flight would have drained it, so events.jsonl keeps its order.
        self.hold(n)
        ready = [ev for m, ev in self.held if m <= n]
        self.held = [(m, ev) for m, ev in self.held if m > n]
        self._write_stimulus_events(ready)

    def write_model_events(self) -> None:
        """The model's text/state/remote events received so far, into events.jsonl."""
        if self.client.model_events:
            for ev in self.client.model_events:
                self.out.event(ev["frame_idx"], "model_" + ev["type"], **{k: v for k, v in ev.items() if k not in ("type", "frame_idx")})
            self.client.model_events.clear()

    def hold(self, n: int) -> None:
        """Pipelined only: keeps the stimulus events drained now for observe(n)."""
        assert self.held is not None, "hold() is for pipelined sessions"
        events = self.stimulus.drain_events()
        if events:
            self.held.extend((n, ev) for ev in events)

    def _write_stimulus_events(self, events: list[dict]) -> None:
        for ev in events:
            ev = dict(ev)
            frame = int(ev.pop("frame"))
            self.out.event(frame, ev.pop("type"), **ev)

    async def finish(self, n_frames: int) -> None:
        await self.client.send_control({"type": "end", "tail_frames": 0})

    def forced_overlay(self, said: np.ndarray) -> np.ndarray:
        f = self.out.frame_samples
        for n, audio in self.forced.items():
            said[n * f : (n + 1) * f] = audio
        return said


class _Lockstep(_FrameLoop):
    """Frame n's output before frame n's observation; up to `window` frames sent ahead of it.

    With window 1 this is the plain ping-pong (send n, wait for n). A wider window is
    only used for stimuli that do not listen to the model (pipeline_window), so the
    model sees the same frames and the recording the same bytes; what changes is that the
    socket round trip no longer stalls both processes once per frame.
    """

    def __init__(self, client: ProtocolClient, ready: dict, stimulus: Stimulus, out: SessionOutcome, window: int = 1):
        super().__init__(client, ready, stimulus, out)
        self.window = window
        if window > 1:
            self.held = []

    async def run(self) -> None:
        out_n = self.ready["out_frame_samples"]
        sent = n = 0
        more = True
        # Refill the window only once it is half empty: frames then travel in bursts, so
        # each process wakes once per burst rather than once per frame (window 1: every frame).
        low_water = self.window // 2
        while True:
            if sent - n <= low_water:
                while more and sent - n < self.window:
                    more = await self._send_ahead(sent)
                    if more:
                        sent += 1
            if n == sent:
                break
            y = await self.client.recv_output(n, out_n)
            if self.out.model_frames is not None:
                self.out.model_frames.append(y)
            self.observe(n, self.out_rs.push(y))
            n += 1
            self.out.frames = n
        await self.finish(n)
        done = await self.client.recv_control("done")
        if done["frames_out"] != n:
            raise ModelFault("BAD_FRAME", f"done reports {done['frames_out']} output frames, the harness received {n}")
        # The recording takes the delay-free resampled stream: what the model said belongs
        # at the time it said it (framing.py); observe_output saw the causal version.
        self.out.said = self.forced_overlay(self.out_rs.aligned(n * self.out.frame_samples))
        self.out.stats = {"in_resample_delay_ms": round(self.in_rs.delay_ms, 3)}

    async def _send_ahead(self, m: int) -> bool:
        if self.held is None:
            return await self.send_frame(m)
        try:
            more = await self.send_frame(m)
        except ModelFault as fault:
            if fault.code != "CLOSED":
                raise
            # The model went away with frames in flight: stop sending and let the receive
            # side report why (its error message, or the frame it never answered).
            return False
        self.hold(m)
        return more


class _Realtime(_FrameLoop):
    """Wall-clock pacing; output plays from a buffer, so a slow model is heard late or not at all."""

    def __init__(self, client: ProtocolClient, ready: dict, stimulus: Stimulus, out: SessionOutcome, spec: ModelSpec):
        super().__init__(client, ready, stimulus, out)
        self.spec = spec
        self.playback = np.zeros(0, dtype=np.float32)
        self.received = 0
        self.receiver_fault: ModelFault | None = None
        self.done: dict | None = None

    async def receive(self) -> None:
        out_n = self.ready["out_frame_samples"]
        try:
            while True:
                msg = await self.client.recv_message("output frames", timeout=3600)
                if isinstance(msg, dict):
                    if msg["type"] == "done":
                        self.done = msg
                        return
                    self.client._keep_event(msg, "output frames")
                    continue
                idx, audio = msg
                check_output_frame(idx, audio, self.received, out_n)
                self.playback = np.concatenate([self.playback, self.out_rs.push(audio)])
                self.received += 1
        except ModelFault as fault:
            self.receiver_fault = fault

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        f, period = self.out.frame_samples, self.out.frame_samples / self.out.rate
        receiver = asyncio.create_task(self.receive())
        said: list[np.ndarray] = []
        underruns = late_ticks = 0
        t0 = loop.time()
        n = 0
        try:
            while True:
                delay = t0 + n * period - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                elif delay < -period:
                    late_ticks += 1  # the harness itself fell behind the wall clock
                self._check(n, period)
                if not await self.send_frame(n):
                    break
                # Play whatever has arrived; an empty buffer is heard as silence (underrun).
                if len(self.playback) >= f:
                    chunk, self.playback = self.playback[:f], self.playback[f:]
                else:
                    underruns += 1
                    chunk = np.concatenate([self.playback, np.zeros(f - len(self.playback), dtype=np.float32)])
                    self.playback = np.zeros(0, dtype=np.float32)
                said.append(chunk)
                self.observe(n, chunk)
                n += 1
                self.out.frames = n
            await self.finish(n)
            try:
                await asyncio.wait_for(asyncio.shield(receiver), timeout=self.spec.step_timeout_s)
            except asyncio.TimeoutError:
                raise ModelFault("TIMEOUT", f"no 'done' within {self.spec.step_timeout_s:g} s after end", n) from None
            self._check(n, period)
        finally:
            receiver.cancel()
            self.write_model_events()  # events sent between the last frame and done (a bridge's account)
        said_audio = np.concatenate(said) if said else np.zeros(0, dtype=np.float32)
        self.out.said = self.forced_overlay(said_audio)
        self.out.stats = {"underrun_frames": underruns, "late_ticks": late_ticks,
                          "frames_received_in_time": self.received, "in_resample_delay_ms": round(self.in_rs.delay_ms, 3)}
        if self.done and isinstance(self.done.get("remote_timing"), dict):
            self.out.stats["remote_timing"] = self.done["remote_timing"]  # a bridge's send/receive timing

    def _check(self, n: int, period: float) -> None:
        if self.receiver_fault is not None:
            raise self.receiver_fault
        behind = n - self.received
        if behind * period > self.spec.step_timeout_s + period:
            raise ModelFault("TIMEOUT", f"model is {behind} frames ({behind * period:.1f} s) behind; step timeout {self.spec.step_timeout_s:g} s", self.received)
