"""Forked sessions: one model session serves a group of items that share a prefix (capability `fork`).

MTR-DuplexBench scores round k after a teacher-forced history of rounds 1..k-1 (docs/mtr.md).
Replaying that history in a fresh session per round costs O(rounds^2) frames; with
`snapshot`/`restore` (protocol v1, capability fork) the history is processed once:

    trunk 0..b1 (forced) -> snapshot s1 -> branch b1..e1 (free: item 1) -> restore s1
    -> trunk b1..b2 (forced) -> snapshot s2 -> branch b2..e2 (item 2) -> restore s2 -> ...

Each item's stimulus must be a pure function of the frame index (nothing reacts to the
model), agree with the others on the shared frames, and expose `fork_frame` (its branch
point, on the frame grid) after `bind`. The resamplers between harness and model rates
are streaming and cannot be copied, so after each branch they are rebuilt by feeding them
the trunk's frames again (cheap: no model call). The item folders are written exactly as
`run_items` writes them, and a lockstep run gives the same recording.wav either way
(tests/test_mtr_context.py). Lockstep only: a realtime clock replays instead.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from duplexeval.protocol.wire import FrameKind
from duplexeval.runner.client import Endpoint, ProtocolClient
from duplexeval.runner.errors import ModelFault
from duplexeval.runner.framing import FrameResampler
from duplexeval.runner.items import (
    ItemResult,
    ModelHost,
    StimulusFactory,
    finished_status,
    item_seed,
    prepare_out_dir,
    startup_failure,
    write_item,
)
from duplexeval.runner.one_pass import run_one_pass_session
from duplexeval.runner.session import SessionOutcome, harness_frame_samples
from duplexeval.specs.modelspec import ModelSpec, model_spec_from

Group = tuple[str, list[tuple[str, StimulusFactory]]]


class _Streams:
    """The three frame resamplers of a session, rebuildable from the trunk's history."""

    def __init__(self, rate: int, ready: dict, f: int):
        self.rate, self.ready, self.f = rate, ready, f
        self.fresh()

    def fresh(self) -> None:
        r = self.ready
        self.in_rs = FrameResampler(self.rate, r["in_rate"], r["in_frame_samples"])
        self.out_rs = FrameResampler(r["out_rate"], self.rate, self.f)
        self.forced_rs = FrameResampler(self.rate, r["out_rate"], r["out_frame_samples"])
        self.any_forced = False

    def rebuild(self, heard: list[np.ndarray], raw_out: list[np.ndarray], forced: dict[int, np.ndarray]) -> None:
        self.fresh()
        for n, (x, y) in enumerate(zip(heard, raw_out)):
            self.push_forced(forced.get(n))
            self.in_rs.push(x)
            self.out_rs.push(y)

    def push_forced(self, frame: np.ndarray | None) -> np.ndarray | None:
        if frame is not None:
            self.any_forced = True
            return self.forced_rs.push(frame)
        if self.any_forced:
            self.forced_rs.push(np.zeros(self.f, dtype=np.float32))  # continuous in time, as session.py
        return None


async def _frame(client: ProtocolClient, streams: _Streams, stim, n: int, caps: set[str]) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """Sends frame n of `stim`; returns (heard, forced or None, raw model output)."""
    x = stim.next_input(n)
    if x is None:
        raise ValueError(f"stimulus ended at frame {n} inside its own window")
    x = np.asarray(x, dtype=np.float32)
    forced = stim.forced_output(n)
    for label in stim.drain_labels():
        if "labels" in caps:
            await client.send_control(label)
    if forced is not None:
        forced = np.asarray(forced, dtype=np.float32)
        await client.send_audio(FrameKind.FORCED, n, streams.push_forced(forced))
    else:
        streams.push_forced(None)
    await client.send_audio(FrameKind.INPUT, n, streams.in_rs.push(x))
    y = await client.recv_output(n, streams.ready["out_frame_samples"])
    return x.copy(), forced, y


def _drain(out: SessionOutcome, client: ProtocolClient, stim, into: list[dict]) -> None:
    for ev in client.model_events:
        into.append({"t": round(ev["frame_idx"] * out.frame_samples / out.rate, 6), "frame": ev["frame_idx"],
                     "type": "model_" + ev["type"], **{k: v for k, v in ev.items() if k not in ("type", "frame_idx")}})
    client.model_events.clear()
    for ev in stim.drain_events():
        ev = dict(ev)
        frame = int(ev.pop("frame"))
        into.append({"t": round(frame * out.frame_samples / out.rate, 6), "frame": frame, "type": ev.pop("type"), **ev})


async def run_forked_session(endpoint: Endpoint, spec: ModelSpec, stimuli: list[tuple[str, Any]], rate: int,
                             seed: int, prompt: str | None) -> list[tuple[str, SessionOutcome]]:
    """One lockstep session for a group; one SessionOutcome per item (a fault marks every unfinished one).

    The server is left as it is: the caller tears it down after a fault (`fault_diagnostics`),
    once every session it holds has ended (a batch's siblings keep playing meanwhile).
    """
    results: list[tuple[str, SessionOutcome]] = []
    client: ProtocolClient | None = None
    base = SessionOutcome(rate=rate)
    try:
        client = await ProtocolClient.open(endpoint, spec.step_timeout_s)
        ready = await client.hello("lockstep", seed, prompt, timeout=max(spec.startup_timeout_s, spec.step_timeout_s))
        caps = set(ready["capabilities"])
        if "fork" not in caps:
            raise ValueError(f"model {ready['model']} lacks capability fork; replay each item instead")
        f = harness_frame_samples(ready, rate, spec)
        base.frame_samples = f
        streams = _Streams(rate, ready, f)
        heard: list[np.ndarray] = []
        raw_out: list[np.ndarray] = []
        forced: dict[int, np.ndarray] = {}
        trunk_events: list[dict] = [{"t": 0.0, "frame": 0, "type": "session_start", "model": ready["model"], "clock": "lockstep",
                                     "seed": seed, "in_rate": ready["in_rate"], "out_rate": ready["out_rate"],
                                     "frame_ms": ready["frame_ms"], "forked": True}]
        pos = 0
        for k, (item_id, stim) in enumerate(stimuli):
            stim.bind(rate, f)
            b = int(stim.fork_frame)
            if b < pos:
                raise ValueError(f"{item_id}: branch point {b} before the trunk position {pos}; order items by branch point")
            for n in range(pos, b):  # the shared, forced history
                x, fz, y = await _frame(client, streams, stim, n, caps)
                heard.append(x)
                raw_out.append(y)
                streams.out_rs.push(y)
                if fz is not None:
                    forced[n] = fz
                _drain(base, client, stim, trunk_events)
            pos = b
            snap = f"b{k}"
            await client.send_control({"type": "snapshot", "id": snap})
            await client.recv_control("snapshot")
            out = SessionOutcome(rate=rate, frame_samples=f, ready=ready)
            out.events = list(trunk_events)
            branch_heard: list[np.ndarray] = []
            branch_forced: dict[int, np.ndarray] = {}
            n = b
            while n < stim.n_frames:
                x, fz, y = await _frame(client, streams, stim, n, caps)
                branch_heard.append(x)
                if fz is not None:
                    branch_forced[n] = fz
                streams.out_rs.push(y)
                _drain(out, client, stim, out.events)
                n += 1
            total = n
            out.frames = total
            out.heard = heard[:b] + branch_heard
            said = streams.out_rs.aligned(total * f)
            for idx, audio in {**forced, **branch_forced}.items():
                if idx < total:
                    said[idx * f:(idx + 1) * f] = audio
            out.said = said
            out.stats = {"in_resample_delay_ms": round(streams.in_rs.delay_ms, 3), "forked_at_frame": b}
            out.events.append({"t": round(total * f / rate, 6), "frame": total, "type": "session_end", "frames": total, **out.stats})
            results.append((item_id, out))
            await client.send_control({"type": "restore", "id": snap})
            await client.recv_control("restore")
            streams.rebuild(heard, raw_out, forced)
    except ModelFault as fault:
        done = {i for i, _ in results}
        for item_id, _ in stimuli:
            if item_id not in done:
                out = SessionOutcome(rate=rate, frame_samples=base.frame_samples, fault=fault)
                out.event(fault.frame_idx or 0, "error", code=fault.code, reason=fault.reason)
                results.append((item_id, out))
    finally:
        if client is not None:
            await client.close()
    return results


def add_group_diagnostics(outcomes: list[tuple[str, SessionOutcome]], diag: str) -> None:
    """The server's diagnostics (exit status, stderr tail) appended to a group's fault reasons
    (status.json; its events keep the reason as the session saw it)."""
    for fault in {id(o.fault): o.fault for _, o in outcomes if o.fault is not None}.values():
        if diag and diag not in fault.reason:
            fault.reason = f"{fault.reason}; {diag}"


def run_forked_items(model_spec: Any, groups: Iterable[Group], out_dir: str | Path, clock: str = "lockstep", *,
                     rate: int = 16000, seed: int = 0, prompt: str | None = None,
                     on_item: Callable[[ItemResult], None] | None = None) -> list[ItemResult]:
    """Like `run_items`, for groups of items that share a forced prefix (one forked session per group).

    A group is finished when all its items have status.json; otherwise the whole group is
    redone (its items share one session). Resume settings are those of `run_items`, so a
    folder can be finished by either (they record the same bytes).
    """
    if clock != "lockstep":
        raise ValueError("forked sessions need the lockstep clock (a realtime run replays each item)")
    spec: ModelSpec = model_spec_from(model_spec)
    groups = [(g, list(items)) for g, items in groups]
    out = prepare_out_dir(spec, [i for _, items in groups for i, _ in items], out_dir, clock, rate, seed, prompt)
    host = ModelHost(spec)
    results: list[ItemResult] = []
    try:
        for group_id, items in groups:
            for result in play_group(host, out, group_id, items, rate=rate, seed=seed, prompt=prompt):
                results.append(result)
                if on_item:
                    on_item(result)
    finally:
        host.close()
    return results


def play_group(host: ModelHost, out: Path, group_id: str, items: list[tuple[str, StimulusFactory]], *, rate: int,
               seed: int, prompt: str | None, one_pass_clock: str | None = None) -> list[ItemResult]:
    """One group of a prepared folder on `host`: skipped when all its items are finished, else redone whole.

    The unit of work an executor hands out for grouped jobs: the group's items share one
    session, so they are never split over hosts; it touches only their item folders. The
    session is forked (lockstep), or with `one_pass_clock` one session on that clock whose
    prefixes are the items (runner/one_pass.py).
    """
    spec = host.spec
    dirs = {i: out / "items" / i for i, _ in items}
    done = {i: finished_status(d) for i, d in dirs.items()}
    if all(st is not None for st in done.values()):
        return [ItemResult(i, st["status"], st.get("reason"), d, skipped=True)
                for (i, d), st in zip(dirs.items(), done.values())]
    for d in dirs.values():
        if d.exists():
            shutil.rmtree(d)
    s = item_seed(seed, group_id)
    if host.start_error is None:
        try:
            host.ensure()
        except Exception as exc:
            host.close()
            host.start_error = f"model {spec.id} could not be started ({spec.backend} backend): {exc}"
            outcomes = [(i, startup_failure(rate, host.start_error)) for i, _ in items]
        else:
            stimuli = [(i, fac()) for i, fac in items]
            outcomes = asyncio.run(
                run_forked_session(host.ensure(), spec, stimuli, rate, s, prompt) if one_pass_clock is None
                else run_one_pass_session(host.ensure(), spec, stimuli, one_pass_clock, rate, s, prompt))
            fault = next((o.fault for _, o in outcomes if o.fault is not None), None)
            if fault is not None:
                add_group_diagnostics(outcomes, host.after_fault(fault))
    else:
        outcomes = [(i, startup_failure(rate, host.start_error, retried=False)) for i, _ in items]
    return [write_item(dirs[item_id], outcome, spec, one_pass_clock or "lockstep", s) for item_id, outcome in outcomes]
