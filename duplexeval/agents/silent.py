"""Reference agent `silent`: never speaks (Start 0, presence 0, Shush 1.0 by construction)."""

from __future__ import annotations

import numpy as np

from duplexeval.protocol.server import DuplexServer, run_server


class SilentAgent(DuplexServer):
    model_name = "silent"
    in_rate = 16000
    out_rate = 16000
    frame_ms = 80.0
    capabilities = ("teacher_forcing", "fork")
    # Batched sessions (--max-sessions N): stateless.
    max_sessions_supported = 64

    def step(self, frame_idx: int, input_audio: np.ndarray, forced: np.ndarray | None) -> np.ndarray:
        if forced is not None:
            return forced  # teacher forcing: what it "said" is what it was given
        return np.zeros(self.out_frame_samples, dtype=np.float32)

    def snapshot(self) -> None:
        return None  # stateless: nothing to keep

    def restore(self, state: None) -> None:
        pass


def main(argv: list[str] | None = None) -> None:
    run_server(lambda args: SilentAgent(), argv, description=__doc__)


if __name__ == "__main__":
    main()
