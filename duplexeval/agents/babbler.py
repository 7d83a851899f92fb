"""Reference agent `babbler`: talks all the time, whatever it hears.

Presence ~1, Start ~0 (it is always "already speaking"), Shush ~0: the pathology of a
model that never yields, on demand (docs/agents.md). It speaks at 24 kHz
in 80 ms frames, like Moshi, so the harness's resampling path is exercised too.
"""

from __future__ import annotations

import numpy as np

from duplexeval.protocol.server import DuplexServer, run_server
from duplexeval.tts import synthesize

# One long run-on sentence: flite pauses at full stops, and a babbler must not pause.
BABBLE = (
    "and then we walked along the river past the old mill and the bakery on the corner "
    "where the bread was still warm and everybody kept talking about the weather and the "
    "trains and the price of coffee and the new bridge they keep promising to build"
)
MAX_GAP_S = 0.05


def squeeze_pauses(audio: np.ndarray, rate: int, max_gap_s: float = MAX_GAP_S) -> np.ndarray:
    """Shortens every quiet stretch to `max_gap_s`, so the loop has no audible pauses."""
    win = int(0.01 * rate)
    n = len(audio) // win
    energy = np.sqrt(np.mean(audio[: n * win].reshape(n, win) ** 2, axis=1))
    quiet = energy < 0.02 * max(float(energy.max()), 1e-9)
    keep, run = [], 0
    for i in range(n):
        run = run + 1 if quiet[i] else 0
        if run * win <= max_gap_s * rate:
            keep.append(audio[i * win : (i + 1) * win])
    return np.concatenate(keep).astype(np.float32)


class BabblerAgent(DuplexServer):
    model_name = "babbler"
    in_rate = 24000
    out_rate = 24000
    frame_ms = 80.0
    capabilities = ("fork", "teacher_forcing")
    # Batched sessions (--max-sessions N): a pure function of the frame index; the loop is shared read-only.
    max_sessions_supported = 64

    def __init__(self) -> None:
        super().__init__()
        self.loop = squeeze_pauses(synthesize(BABBLE, "rms", self.out_rate), self.out_rate)

    def step(self, frame_idx: int, input_audio: np.ndarray, forced: np.ndarray | None) -> np.ndarray:
        if forced is not None:
            return forced
        # A pure function of the frame index: deterministic, and snapshot/restore are free.
        n = self.out_frame_samples
        start = (frame_idx * n) % len(self.loop)
        return np.take(self.loop, np.arange(start, start + n), mode="wrap")

    def snapshot(self) -> None:
        return None

    def restore(self, state: None) -> None:
        pass


def main(argv: list[str] | None = None) -> None:
    run_server(lambda args: BabblerAgent(), argv, description=__doc__)


if __name__ == "__main__":
    main()
