"""A test-only server: babbler, except that one chosen session breaks in the middle of a batch.

Real process, real socket, babbler's real output; the session whose hello carries a seed
listed in $BATCH_FAULT_SEEDS returns NaN audio at frame $BATCH_FAULT_FRAME, which the
protocol server turns into error{INTERNAL} for that session alone (its siblings in the
same `step_batch` are unaffected). It stands in for a model that fails one conversation
of a batch; the other sessions must end exactly as if played alone.
"""

from __future__ import annotations

import os

import numpy as np

from duplexeval.agents.babbler import BabblerAgent
from duplexeval.protocol.server import run_server


class OneSessionFails(BabblerAgent):
    model_name = "babbler"  # as ready and events.jsonl say: the files must equal babbler's

    def reset(self) -> None:
        super().reset()
        self.doomed = False

    def start_session(self, clock: str, seed: int, prompt: str | None) -> None:
        super().start_session(clock, seed, prompt)
        self.doomed = str(seed) in os.environ.get("BATCH_FAULT_SEEDS", "").split(",")

    def step(self, frame_idx: int, input_audio: np.ndarray, forced: np.ndarray | None) -> np.ndarray:
        out = super().step(frame_idx, input_audio, forced)
        if self.doomed and frame_idx == int(os.environ.get("BATCH_FAULT_FRAME", "5")):
            return np.full_like(out, np.nan)
        return out


if __name__ == "__main__":
    run_server(lambda args: OneSessionFails())
