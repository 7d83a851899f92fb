"""Context consistency (MTR-DuplexBench, 方法详解 2): the stimulus that scores one round.

To score round k the model hears the dialogue's user channel from 0 to the end of round
k's response window; during rounds 1..k-1 the ground-truth assistant audio is forced on
the model's own channel (protocol capability `teacher_forcing`, frame kind 3), and only
from round k's start on does the model speak for itself. The stimulus is a pure function
of the frame index (MTR reacts to nothing the model says), so the same object serves a
fresh session per round (replay, quadratic) and a forked session that restores a
snapshot at each round boundary (duplexeval.runner.fork, linear): both see the same
frames, and give the same recordings (tests/test_mtr_context.py).

A model without teacher_forcing (`context.without_capability: history-as-heard`) hears
the same user audio with its own earlier replies as history; its results are flagged.
Nothing is forced then, so round k's stimulus differs from round k+1's only in where it
ends (`n_frames`): one session per dialogue serves every round, each cut at its window
end (`context.history_as_heard: one-pass`, duplexeval.runner.one_pass), or a fresh
session per round (`per-round`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from duplexeval.audio import resample
from duplexeval.runner.stimulus import Stimulus


@dataclass(frozen=True)
class RoundWindow:
    """Round k of a dialogue as scored: where the model takes over, what it must answer."""

    round: int
    start_s: float           # user turn start: forced history ends here
    user_end_s: float        # user turn end
    end_s: float             # end of the response window (next user turn's end, or the audio's end)
    gold_answer: str = ""    # what the oracle (labels) says; never shown to a real model


class RoundStimulus(Stimulus):
    def __init__(self, user: np.ndarray, assistant: np.ndarray, src_rate: int, window: RoundWindow, *,
                 teacher_forcing: bool = True, item_id: str = ""):
        self._user_src, self._asst_src, self._src_rate = user, assistant, src_rate
        self.window = window
        self.teacher_forcing = teacher_forcing
        self.item_id = item_id
        self._events: list[dict] = []
        self._last = -1

    def bind(self, rate: int, frame_samples: int) -> None:
        super().bind(rate, frame_samples)
        user = resample(np.asarray(self._user_src, dtype=np.float32), self._src_rate, rate)
        asst = resample(np.asarray(self._asst_src, dtype=np.float32), self._src_rate, rate)
        self.n_frames = -(-int(round(self.window.end_s * rate)) // frame_samples)
        total = self.n_frames * frame_samples
        self._user = np.zeros(total, dtype=np.float32)
        self._user[: min(total, len(user))] = user[:total]
        # The round boundary on the frame grid: frames before it are forced history.
        self.fork_frame = int(round(self.window.start_s * rate)) // frame_samples
        self._asst = np.zeros(self.fork_frame * frame_samples, dtype=np.float32)
        n = min(len(self._asst), len(asst))
        self._asst[:n] = asst[:n]
        self.user_end_frame = int(round(self.window.user_end_s * rate)) // frame_samples
        self._events = []

    def next_input(self, frame_idx: int) -> np.ndarray | None:
        if frame_idx >= self.n_frames:
            return None
        f = self.frame_samples
        self._last = frame_idx
        if frame_idx == self.fork_frame:
            self._events.append({"frame": frame_idx, "type": "round_start", "round": self.window.round,
                                 "teacher_forcing": self.teacher_forcing})
        return self._user[frame_idx * f:(frame_idx + 1) * f]

    def forced_output(self, frame_idx: int) -> np.ndarray | None:
        if not self.teacher_forcing or frame_idx >= self.fork_frame:
            return None
        f = self.frame_samples
        return self._asst[frame_idx * f:(frame_idx + 1) * f]

    def drain_labels(self) -> list[dict]:
        return self.labels_for(self._last)

    def labels_for(self, frame_idx: int) -> list[dict]:
        """The oracle's side channel: the round's user turn ends (with the gold reply)."""
        if frame_idx != self.user_end_frame or not self.window.gold_answer:
            return []
        offset = self.window.user_end_s - frame_idx * self.frame_s
        return [{"type": "label", "frame_idx": frame_idx, "phase": "end", "label": "T", "turn_id": self.window.round,
                 "gold_answer": self.window.gold_answer, "offset_s": round(max(offset, 0.0), 6)}]

    def drain_events(self) -> list[dict]:
        events, self._events = self._events, []
        return events


def round_stimulus(user: np.ndarray, assistant: np.ndarray, rate: int, window: RoundWindow, *,
                   teacher_forcing: bool = True, item_id: str = "") -> RoundStimulus:
    return RoundStimulus(user, assistant, rate, window, teacher_forcing=teacher_forcing, item_id=item_id)
