"""One-pass groups: one session serves items whose stimuli are prefixes of one another.

A group of items qualifies when every item's input is a pure function of the frame index,
the items agree on the frames they share, and nothing is forced on the model's channel:
then item k differs from the longest only in where it ends. A causal model's output up to
frame n depends only on its input up to n, so one session played to the longest item's end
holds, for every item, what a session of its own would have recorded up to its end
(byte-identical for a deterministic model; for a sampling one, the same distribution, the
items now sharing one trajectory). MTR-DuplexBench's history-as-heard rounds are such a
group (docs/mtr.md, "Context consistency"): 1 + 2 + ... + R rounds of audio become R.

Each item is then cut from the session at its own end (`n_frames` of its stimulus after
`bind`): the heard channel's first frames; the model channel as a session of that length
would have written it (lockstep: the raw output frames resampled again, since the
delay-free resampled stream of a prefix is not a prefix of the whole; realtime: the frames
played); its own stimulus events and the model's events before its end. A fault ends the
session: the items it had passed keep their recordings, the others become `error` items
with the fault's reason. A group resumes as a whole, as a forked one (runner/fork.py
`play_group`, which plays both kinds).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from duplexeval.runner.client import Endpoint
from duplexeval.runner.framing import FrameResampler
from duplexeval.runner.session import SessionOutcome, run_session
from duplexeval.runner.stimulus import Stimulus
from duplexeval.specs.modelspec import ModelSpec

ITEM_TAG = "one_pass_item"  # which item's stimulus emitted an event (dropped from the items' events)


class PrefixGroup(Stimulus):
    """The items' stimuli played as one: the input of the longest (checked against every item
    still running), every running item's labels, each item's events tagged with its id."""

    def __init__(self, stimuli: list[tuple[str, Any]], *, keep_played: bool):
        if not stimuli:
            raise ValueError("a one-pass group needs at least one item")
        self.stimuli = stimuli
        self.ends: dict[str, int] = {}
        self.keep_played = keep_played  # realtime: the played model frames are the recording
        self.played: list[np.ndarray] = []
        self._n = -1

    def bind(self, rate: int, frame_samples: int) -> None:
        super().bind(rate, frame_samples)
        for item_id, stim in self.stimuli:
            stim.bind(rate, frame_samples)
            end = getattr(stim, "n_frames", None)
            if not isinstance(end, int) or end < 1:
                raise ValueError(f"{item_id}: a one-pass item's stimulus must say its length (n_frames) after bind")
            self.ends[item_id] = end

    def _running(self, n: int) -> list[tuple[str, Any]]:
        return [(i, s) for i, s in self.stimuli if n < self.ends[i]]

    def next_input(self, frame_idx: int) -> np.ndarray | None:
        self._n = frame_idx
        heard: np.ndarray | None = None
        first = ""
        for item_id, stim in self._running(frame_idx):
            x = stim.next_input(frame_idx)
            if x is None:
                raise ValueError(f"{item_id}: stimulus ended at frame {frame_idx}, before its n_frames {self.ends[item_id]}")
            if heard is None:
                heard, first = np.asarray(x, dtype=np.float32), item_id
            elif not np.array_equal(heard, np.asarray(x, dtype=np.float32)):
                raise ValueError(f"{first} and {item_id} hear different audio at frame {frame_idx}: "
                                 "one session cannot serve them (a one-pass item must be a prefix of the longest)")
        return heard

    def forced_output(self, frame_idx: int) -> np.ndarray | None:
        for item_id, stim in self._running(frame_idx):
            if stim.forced_output(frame_idx) is not None:
                raise ValueError(f"{item_id} forces assistant audio at frame {frame_idx}: a one-pass group forces "
                                 "nothing (teacher forcing forks or replays each item)")
        return None

    def drain_labels(self) -> list[dict]:
        return [label for _, stim in self._running(self._n) for label in stim.drain_labels()]

    def observe_output(self, frame_idx: int, audio: np.ndarray) -> None:
        if self.keep_played:
            self.played.append(np.asarray(audio, dtype=np.float32).copy())
        for _, stim in self._running(frame_idx):
            stim.observe_output(frame_idx, audio)

    def drain_events(self) -> list[dict]:
        return [{**ev, ITEM_TAG: item_id} for item_id, stim in self.stimuli for ev in stim.drain_events()]


async def run_one_pass_session(endpoint: Endpoint, spec: ModelSpec, stimuli: list[tuple[str, Any]], clock: str,
                               rate: int, seed: int, prompt: str | None) -> list[tuple[str, SessionOutcome]]:
    """One session for a group on either clock; one SessionOutcome per item, cut at its end.

    As `run_forked_session`, the server is left as it is after a fault (the caller tears it down).
    """
    group = PrefixGroup(stimuli, keep_played=clock == "realtime")
    out = await run_session(endpoint, spec, group, clock, rate, seed, prompt, keep_model_frames=True)
    return [(item_id, cut(out, group, item_id)) for item_id, _ in stimuli]


def cut(session: SessionOutcome, group: PrefixGroup, item_id: str) -> SessionOutcome:
    """Item `item_id`'s outcome: the session up to the item's end, or the session's fault
    when it ended before (or before the item was bound: BUSY, a bad `ready`). An item that
    ends where the session does shares its ending too (`end`/`done`), so a fault there is its own."""
    end = group.ends.get(item_id)
    f = session.frame_samples
    if session.fault is not None and (end is None or session.frames < end or end == max(group.ends.values())):
        out = SessionOutcome(rate=session.rate, frame_samples=f, ready=session.ready, fault=session.fault)
        frame = session.fault.frame_idx if session.fault.frame_idx is not None else session.frames
        out.event(frame, "error", code=session.fault.code, reason=session.fault.reason,
                  one_pass={"session_frames": session.frames, "item_frames": end})
        return out
    assert end is not None and session.ready is not None
    out = SessionOutcome(rate=session.rate, frame_samples=f, frames=end, ready=session.ready)
    out.heard = session.heard[:end]
    out.said = _said(session, group, end)
    totals = {k: v for k, v in session.stats.items() if k != "in_resample_delay_ms"}
    out.stats = {**({"in_resample_delay_ms": session.stats["in_resample_delay_ms"]}
                    if "in_resample_delay_ms" in session.stats else {}),
                 "one_pass": {"session_frames": session.frames, **totals}}
    for ev in session.events:
        if ev["type"] == "session_start":
            out.events.append(dict(ev))
        elif ev["type"] not in ("session_end", "error") and ev["frame"] < end and ev.get(ITEM_TAG, item_id) == item_id:
            out.events.append({k: v for k, v in ev.items() if k != ITEM_TAG})
    out.event(end, "session_end", frames=end, **out.stats)
    return out


def _said(session: SessionOutcome, group: PrefixGroup, end: int) -> np.ndarray:
    """The model channel of the first `end` frames, as a session of that length records it."""
    f = session.frame_samples
    if session.model_frames is None:  # realtime: what was played, frame by frame
        return np.concatenate(group.played[:end]) if end else np.zeros(0, dtype=np.float32)
    assert session.ready is not None
    rs = FrameResampler(session.ready["out_rate"], session.rate, f)
    for y in session.model_frames[:end]:
        rs.push(y)
    return rs.aligned(end * f)


__all__ = ["ITEM_TAG", "PrefixGroup", "cut", "run_one_pass_session"]
