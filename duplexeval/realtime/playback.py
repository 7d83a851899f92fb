"""The model's audio placed as a listener hears it: a jitter buffer per reply, cuts, and every gap.

A client of a realtime API plays what the server streams through a small buffer: it starts
a reply once `prebuffer` samples are in (or the reply is complete, or it waited
`max_wait` frames for them: the buffer never delays a reply more than that), then plays one
frame per frame period. What it never plays:

- audio of a reply the client cut (the user spoke over it and the session interrupts) or
  the server cancelled (`response.done` with status cancelled, `output_audio_buffer.cleared`):
  what is still buffered is dropped, and deltas of that reply arriving later are dropped too
  (counted: `late_deltas`, `late_samples`), so stop latency is the listener's, not the socket's;
- nothing in a gap: when a reply that is not finished runs dry, the frame is played short
  (silence for the rest) and the gap is counted (`underruns`: each run of dry frames once,
  `underrun_ms` in total, and the list of gaps with their frame), however late in the reply
  it comes, not only at start-up.

Pure bookkeeping (no clock, no socket): the bridge calls `add`/`finish`/`cut` from the
remote loop and `pull` once per output frame, under its lock; tests drive it with
hand-made timelines (tests/test_realtime_playback.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class _Reply:
    rid: str
    pcm: bytearray = field(default_factory=bytearray)
    finished: bool = False
    started: bool = False       # playback of this reply began (the prebuffer condition was met once)
    waited: int = 0             # frames it has been waiting for its prebuffer
    played: int = 0             # samples played


@dataclass
class Playback:
    frame_samples: int
    rate: int
    prebuffer: int               # samples a reply needs before it starts (the jitter buffer's depth)
    max_wait: int                # frames a reply may wait for them
    replies: list[_Reply] = field(default_factory=list)
    dropped: set[str] = field(default_factory=set)
    underruns: int = 0
    underrun_samples: int = 0
    gaps: list[dict] = field(default_factory=list)   # {"frame": n, "reply": rid, "ms": m}: each gap once
    late_deltas: int = 0
    late_samples: int = 0
    cut_samples: int = 0
    _dry: bool = False

    @classmethod
    def for_config(cls, frame_samples: int, rate: int, jitter_buffer_ms: float, frame_ms: float) -> "Playback":
        prebuffer = int(round(jitter_buffer_ms / 1000.0 * rate))
        return cls(frame_samples, rate, prebuffer, max(0, int(np.ceil(jitter_buffer_ms / frame_ms))))

    # ---- the server's side ---------------------------------------------------------------------
    def add(self, rid: str, pcm: bytes) -> bool:
        """A delta of reply `rid`; False (and counted) when that reply was cut or cancelled."""
        if rid in self.dropped:
            self.late_deltas += 1
            self.late_samples += len(pcm) // 2
            return False
        reply = self._reply(rid)
        if reply.finished:  # a delta after its own response.done: still heard (it arrived), in order
            reply.finished = False
        reply.pcm.extend(pcm)
        return True

    def finish(self, rid: str) -> None:
        """The reply's audio is complete (response.done, response.output_audio.done)."""
        for reply in self.replies:
            if reply.rid == rid:
                reply.finished = True

    def drop(self, rid: str) -> int:
        """The server cancelled reply `rid`: what is unplayed goes, later deltas are dropped. Returns samples dropped."""
        self.dropped.add(rid)
        gone = 0
        for reply in [r for r in self.replies if r.rid == rid]:
            gone += len(reply.pcm) // 2
            self.replies.remove(reply)
        self.cut_samples += gone
        return gone

    def cut(self) -> tuple[int, str | None, int]:
        """The listener stops every reply now (a barge-in the session interrupts on).

        Returns (samples dropped, the reply that was playing or next, samples of it played).
        """
        playing = self.replies[0] if self.replies else None
        gone = 0
        for reply in list(self.replies):
            gone += self.drop(reply.rid)
        return gone, playing.rid if playing else None, playing.played if playing else 0

    def _reply(self, rid: str) -> _Reply:
        for reply in self.replies:
            if reply.rid == rid:
                return reply
        reply = _Reply(rid)
        self.replies.append(reply)
        return reply

    # ---- the listener's side -------------------------------------------------------------------
    def pull(self, frame_idx: int) -> np.ndarray:
        """The next output frame (float32), replies back to back in arrival order."""
        out = bytearray()
        want = 2 * self.frame_samples
        dry_reply: str | None = None
        while len(out) < want and self.replies:
            reply = self.replies[0]
            if not reply.started:
                if len(reply.pcm) // 2 >= self.prebuffer or reply.finished or reply.waited >= self.max_wait:
                    reply.started = True
                else:
                    reply.waited += 1
                    break  # still filling its buffer: start-up delay, not a gap
            take = min(want - len(out), len(reply.pcm))
            out += reply.pcm[:take]
            del reply.pcm[:take]
            reply.played += take // 2
            if reply.pcm:
                continue
            if reply.finished:
                self.replies.pop(0)
                continue
            dry_reply = reply.rid  # playing, not finished, nothing left: the listener hears a hole
            break
        if dry_reply is not None and len(out) < want:
            missing = (want - len(out)) // 2
            self.underrun_samples += missing
            if not self._dry:
                self.underruns += 1
                self.gaps.append({"frame": frame_idx, "reply": dry_reply, "ms": 0.0})
            self.gaps[-1]["ms"] = round(self.gaps[-1]["ms"] + missing * 1000.0 / self.rate, 2)
            self._dry = True
        else:
            self._dry = False
        frame = np.zeros(self.frame_samples, dtype=np.float32)
        if out:
            frame[: len(out) // 2] = np.frombuffer(bytes(out), dtype="<i2").astype(np.float32) / 32768.0
        return frame

    def buffered_samples(self) -> int:
        return sum(len(r.pcm) // 2 for r in self.replies)

    def summary(self) -> dict:
        return {"jitter_buffer_ms": round(self.prebuffer * 1000.0 / self.rate, 1), "underruns": self.underruns,
                "underrun_ms": round(self.underrun_samples * 1000.0 / self.rate, 1), "gaps": self.gaps[:100],
                "late_deltas_dropped": self.late_deltas, "late_samples_dropped": self.late_samples,
                "cut_samples": self.cut_samples}


__all__ = ["Playback"]
