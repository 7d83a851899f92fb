"""A test-only protocol server that emits text and state events (capabilities text_events, state_events)."""

from __future__ import annotations

import numpy as np

from duplexeval.protocol.server import DuplexServer, run_server


class EventAgent(DuplexServer):
    model_name = "event-agent"
    capabilities = ("text_events", "state_events")

    def step(self, frame_idx: int, input_audio: np.ndarray, forced: np.ndarray | None) -> np.ndarray:
        if frame_idx == 2:
            self.emit({"type": "state", "frame_idx": 2, "state": "speak"})
            self.emit({"type": "text", "frame_idx": 2, "text": "hello"})
        return np.full(self.out_frame_samples, 0.25 if frame_idx >= 2 else 0.0, dtype=np.float32)


if __name__ == "__main__":
    run_server(lambda args: EventAgent())
