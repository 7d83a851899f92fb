"""A test-only server that says, per frame, how many sessions shared its batch.

Real process, real socket: it shows that `--max-sessions N` steps sessions together
(the reference agents give the same output either way, so their output cannot show it).
Its output is a constant tone; each frame's batch size is a `text` event. With
$BATCH_PROBE_STEP_MS a step takes that long (a model's compute), so a session joining
between two steps is not outrun by one that streams alone meanwhile.
"""

from __future__ import annotations

import os
import time

import numpy as np

from duplexeval.protocol.server import DuplexServer, run_server


class BatchProbe(DuplexServer):
    model_name = "batch-probe"
    capabilities = ("text_events",)
    max_sessions_supported = 16

    def step(self, frame_idx: int, input_audio: np.ndarray, forced: np.ndarray | None) -> np.ndarray:
        return np.full(self.out_frame_samples, 0.1, dtype=np.float32)

    def step_batch(self, calls: list) -> list[np.ndarray]:
        time.sleep(float(os.environ.get("BATCH_PROBE_STEP_MS", "0")) / 1000.0)
        for model, idx, _, _ in calls:
            model.emit({"type": "text", "frame_idx": idx, "text": f"batch={len(calls)}"})
        return [model.step(idx, audio, forced) for model, idx, audio, forced in calls]


if __name__ == "__main__":
    run_server(lambda args: BatchProbe())
