"""The Duplex-MPE scheduler: plays a rendered conversation and reacts to the model (§3.4).

Rules, all read from the benchmark spec's `scheduler` block:

- the preamble plays first, then the turns in order, separated by `turn_gap_s` of silence;
- once Aria (the model) speaks, the next turn waits until Aria has been silent for
  `yield_silence_s`, but never longer than `max_wait_s` after the previous turn ended;
- after an N4Q the N4R starts exactly `n4_gap_s` after the N4Q ends, whatever Aria does
  (the Stop metric needs a fixed gap, App. A4.1);
- the turn after T follows the reading `after_t`: "turn-gap" treats it like any turn;
  "hold-start-window" also holds it while T's Start window (`metrics.start.window_s`) is
  open and Aria has not spoken since T ended, so a reply that starts after the 0.5 s gap
  is not talked over by the next turn (docs/mpe.md gives the published counts that rule
  out "turn-gap" with the literal Shush attribution);
- after the last turn a tail keeps recording until every scoring window has closed
  (Stop's N4R end + `stop.tail_s`, Start's T end + `start.window_s`, the last gap) and
  Aria is silent (same yield / cap rule), so windows never run past the recording.

Everything is in frame time: frame n covers samples [n*F, (n+1)*F) at the harness rate.
A turn may start inside a frame, so a silent model hears gaps of exactly `turn_gap_s`
and N4R exactly `n4_gap_s` after N4Q, independent of the model's frame size. Decisions
use only what the model said in frames before the current one (a causal streaming VAD
fed by `observe_output`), which is what a live system could know.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

import numpy as np

from duplexeval.audio import resample
from duplexeval.benchmarks.mpe.scenes.render import RenderedConversation
from duplexeval.runner.stimulus import Stimulus

VAD_RATE = 16000  # Silero runs at 16 kHz (docs/architecture.md)
AFTER_T_READINGS = ("turn-gap", "hold-start-window")


class LiveVAD(Protocol):
    """What the scheduler needs from a streaming VAD (duplexeval.judges.vad.StreamingVAD)."""

    def push(self, chunk_16k: np.ndarray) -> None: ...

    @property
    def speaking(self) -> bool: ...

    @property
    def silence_s(self) -> float: ...

    @property
    def time_s(self) -> float: ...


def streaming_vad_from_spec(spec: dict[str, Any]) -> LiveVAD:
    """J's causal Silero stream with the spec's episode rules, so scheduler and scorer agree."""
    from duplexeval.judges.vad import StreamingVAD

    vad = spec["vad"]
    from duplexeval.judges.vad import vad_hysteresis

    return StreamingVAD(threshold=float(vad["threshold"]), min_speech_ms=float(vad["min_speech_ms"]),
                        merge_gap_ms=float(vad["merge_gap_ms"]), hysteresis=vad_hysteresis(vad))


class MPEScheduler(Stimulus):
    """A `Stimulus` for one Duplex-MPE conversation; see the module docstring for the rules."""

    def __init__(self, rendered: RenderedConversation, spec: dict[str, Any],
                 vad_factory: Callable[[], LiveVAD] | None = None) -> None:
        sched = spec["scheduler"]
        metrics = spec["metrics"]
        self.turn_gap_s = float(sched["turn_gap_s"])
        self.yield_silence_s = float(sched["yield_silence_s"])
        self.max_wait_s = float(sched["max_wait_s"])
        self.n4_gap_s = float(sched["n4_gap_s"])
        self.after_t = sched.get("after_t", AFTER_T_READINGS[0])
        if self.after_t not in AFTER_T_READINGS:
            raise ValueError(f"unknown scheduler.after_t {self.after_t!r}; use "
                             f"{' or '.join(map(repr, AFTER_T_READINGS))}")
        self.stop_tail_s = float(metrics["stop"]["tail_s"])
        self.start_window_s = float(metrics["start"]["window_s"])
        self.rendered = rendered
        self._vad_factory = vad_factory or (lambda: streaming_vad_from_spec(spec))
        self._vad: LiveVAD | None = None
        self._events: list[dict] = []
        self._labels: list[dict] = []

    # -- Stimulus hooks ---------------------------------------------------------------

    def bind(self, rate: int, frame_samples: int) -> None:
        super().bind(rate, frame_samples)
        src = self.rendered.rate
        # Clip 0 is the preamble; clip k+1 is turn k.
        self._clips = [resample(self.rendered.preamble, src, rate)]
        self._clips += [resample(t.audio, src, rate) for t in self.rendered.turns]
        self._turns = [None] + [t.turn for t in self.rendered.turns]
        self._vad = self._vad_factory()
        self._model_spoke = False
        self._next_clip = 0
        self._playing: tuple[int, int] | None = None  # (clip index, start sample)
        self._earliest = 0  # the next clip may start here ...
        self._cap = 0  # ... and starts here at the latest, whatever the model does
        self._fixed = True  # N4R after N4Q (and the preamble at 0): start at _earliest exactly
        self._last_end: int | None = None
        self._t_end: int | None = None
        self._hold_until: int | None = None  # hold-start-window: the turn after T waits until here
        self._done_frame: int | None = None
        self._events = [{
            "type": "scene", "frame": 0, "t": 0.0, "scene_id": self.rendered.scene_id,
            "condition": self.rendered.condition, "content_sha256": self.rendered.content_sha256,
            "rate": rate, "frame_samples": frame_samples, "n_turns": len(self.rendered.turns),
            "scheduler": {"turn_gap_s": self.turn_gap_s, "yield_silence_s": self.yield_silence_s,
                          "max_wait_s": self.max_wait_s, "n4_gap_s": self.n4_gap_s, "after_t": self.after_t},
        }]
        self._labels = []

    def next_input(self, frame_idx: int) -> np.ndarray | None:
        if self._vad is None:
            raise RuntimeError("MPEScheduler.next_input called before bind()")
        if self._done_frame is not None:
            return None
        a = frame_idx * self.frame_samples
        b = a + self.frame_samples
        if self._next_clip >= len(self._clips) and self._playing is None and self._tail_over(a):
            self._done_frame = frame_idx
            self._emit("scene_end", a)
            return None
        out = np.zeros(self.frame_samples, dtype=np.float32)
        cursor = a
        while cursor < b:
            if self._playing is not None:
                idx, s = self._playing
                clip = self._clips[idx]
                e = s + len(clip)
                hi = min(b, e)
                out[cursor - a:hi - a] = clip[cursor - s:hi - s]
                if e > b:
                    break
                self._end_clip(idx, e)
                cursor = e
            elif self._next_clip < len(self._clips):
                start = self._next_start(cursor, b)
                if start is None:
                    break
                self._start_clip(self._next_clip, start)
                cursor = start
            else:
                break
        return out

    def observe_output(self, frame_idx: int, audio: np.ndarray) -> None:
        if self._vad is None:
            raise RuntimeError("MPEScheduler.observe_output called before bind()")
        audio = np.asarray(audio, dtype=np.float32).reshape(-1)
        self._vad.push(resample(audio, self.rate, VAD_RATE))
        # silence_s counts from the stream start until the first episode, so remember
        # whether the model has ever spoken: a model that never did has nothing to yield.
        if not self._model_spoke:
            self._model_spoke = self._vad.speaking or self._vad.silence_s < self._vad.time_s - 1e-9

    def forced_output(self, frame_idx: int) -> None:
        return None  # Duplex-MPE never forces the assistant channel

    def drain_events(self) -> list[dict]:
        events, self._events = self._events, []
        return events

    def drain_labels(self) -> list[dict]:
        labels, self._labels = self._labels, []
        return labels

    # -- rules ------------------------------------------------------------------------

    def _model_yielded(self) -> bool:
        """§3.4: the model has been silent for yield_silence_s (a never-speaking model has).

        A burst still shorter than min_speech_ms is not speech yet, so a reply that starts
        late in the 0.5 s gap would lose the race and the next turn would play over it.
        When the VAD exposes `in_burst` (a burst in progress, not yet confirmed), the next
        turn holds until the burst is either confirmed (then wait for yield_silence_s) or
        dropped as too short. Without it, the rule is applied to confirmed speech only.
        """
        assert self._vad is not None
        if getattr(self._vad, "in_burst", False):
            return False
        return not self._model_spoke or self._vad.silence_s >= self.yield_silence_s

    def _spoke_since(self, t_s: float) -> bool:
        """Whether Aria has spoken (or is speaking) after time t_s, as the causal VAD knows it."""
        assert self._vad is not None
        return self._vad.speaking or self._vad.silence_s < self._vad.time_s - t_s - 1e-9

    def _next_start(self, cursor: int, frame_end: int) -> int | None:
        """Where the next clip starts within [cursor, frame_end), or None (not in this frame)."""
        if self._fixed:
            start = max(self._earliest, cursor)
        elif self._model_yielded():
            start = max(self._earliest, cursor)
            if (self._hold_until is not None and self._t_end is not None
                    and not self._spoke_since(self._t_end / self.rate)):
                start = max(start, self._hold_until)  # T's Start window is still open, no reply yet
        else:
            start = max(self._cap, cursor)
        return start if start < frame_end else None

    def _start_clip(self, idx: int, start: int) -> None:
        self._playing = (idx, start)
        self._hold_until = None
        self._next_clip = idx + 1
        turn = self._turns[idx]
        waited = (start - self._earliest) / self.rate
        if turn is None:
            self._emit("preamble_start", start)
            return
        extra: dict[str, Any] = {"waited_s": round(waited, 6), "capped": (not self._fixed and start >= self._cap)}
        self._emit("turn_start", start, **self._turn_fields(turn), **extra)
        self._label("start", start, turn)

    def _end_clip(self, idx: int, end: int) -> None:
        self._playing = None
        turn = self._turns[idx]
        if turn is None:
            self._emit("preamble_end", end)
        else:
            self._emit("turn_end", end, **self._turn_fields(turn))
            self._label("end", end, turn)
            if turn.label == "T":
                self._t_end = end
        self._last_end = end
        gap = self.n4_gap_s if (turn is not None and turn.label == "N4Q") else self.turn_gap_s
        self._fixed = turn is not None and turn.label == "N4Q"
        self._earliest = end + self._samples(gap)
        self._cap = end + self._samples(max(gap, self.max_wait_s))
        if turn is not None and turn.label == "T" and self.after_t == "hold-start-window":
            self._hold_until = min(end + self._samples(self.start_window_s), self._cap)

    def _tail_over(self, at: int) -> bool:
        """Recording may stop: every window closed and the model yielded (or the cap hit)."""
        assert self._last_end is not None
        due = self._last_end + self._samples(max(self.turn_gap_s, self.stop_tail_s))
        if self._t_end is not None:
            due = max(due, self._t_end + self._samples(self.start_window_s))
        cap = max(due, self._last_end + self._samples(self.max_wait_s))
        return at >= cap or (at >= due and self._model_yielded())

    # -- events -----------------------------------------------------------------------

    def _samples(self, seconds: float) -> int:
        return int(round(seconds * self.rate))

    def _emit(self, kind: str, sample: int, **fields: Any) -> None:
        self._events.append({"type": kind, "frame": sample // self.frame_samples,
                             "t": round(sample / self.rate, 6), "sample": sample, **fields})

    @staticmethod
    def _turn_fields(turn: Any) -> dict[str, Any]:
        fields = {"turn": turn.index, "turn_id": turn.turn_id, "label": turn.label,
                  "speaker": turn.speaker, "text": turn.text}
        if turn.label == "T":
            fields["gold_answer"] = turn.gold_answer
        return fields

    def _label(self, phase: str, sample: int, turn: Any) -> None:
        # offset_s: where in the frame the turn starts/ends, so an agent can act on the exact sample.
        msg = {"type": "label", "frame_idx": sample // self.frame_samples, "phase": phase,
               "offset_s": round((sample % self.frame_samples) / self.rate, 6),
               "label": turn.label, "turn_id": turn.turn_id}
        if turn.label == "T":
            msg["gold_answer"] = turn.gold_answer
        self._labels.append(msg)
