"""A Full-Duplex-Bench sample as the model hears it: input.wav played once, as a file.

The published protocol gives the model the user stream and records a time-synchronous
output of the same length (no tail: every input carries its own silence for the reply).
Besides the audio, a reference agent with capability `labels` gets the sample's cues
(our oracle.json, embedded set only) at the frame where each falls, as the other families
send theirs; no model under test ever sees them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from duplexeval.runner.stimulus import FileStimulus


class SampleStimulus(FileStimulus):
    def __init__(self, source: str | Path | np.ndarray, rate: int | None = None, tail_frames: int = 0,
                 cues: list[dict[str, Any]] | None = None, item_id: str = ""):
        super().__init__(source, rate, tail_frames)
        self.cues = sorted(cues or [], key=lambda c: float(c["t"]))
        self.item_id = item_id
        self._last = -1

    def next_input(self, frame_idx: int) -> np.ndarray | None:
        self._last = frame_idx
        return super().next_input(frame_idx)

    def drain_labels(self) -> list[dict]:
        """The cues falling in the frame just sent, each with its offset into that frame."""
        out = []
        for n, cue in enumerate(self.cues):
            t = float(cue["t"])
            frame = int(round(t * self.rate)) // self.frame_samples
            if frame != self._last:
                continue
            msg = {"type": "label", "frame_idx": frame, "phase": cue["phase"], "label": cue["label"],
                   "turn_id": f"{self.item_id}.{n}", "offset_s": round(max(t - frame * self.frame_s, 0.0), 6)}
            if cue.get("gold_answer"):
                msg["gold_answer"] = cue["gold_answer"]
            out.append(msg)
        return out
