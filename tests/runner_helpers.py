"""Helpers of the runner/agent tests: model specs for the faulty agent, small stimuli."""

from __future__ import annotations

import numpy as np

from duplexeval.runner import Stimulus


def faulty_spec(mode: str, at_frame: int = 3, step_timeout_s: float = 1.0) -> dict:
    """A plain-dict spec (same shape as specs/models/*.yaml) for the deliberately broken agent."""
    return {
        "id": f"faulty-{mode}",
        "launch": {"backend": "local", "step_timeout_s": step_timeout_s, "startup_timeout_s": 20,
                   "command": ["{python}", "-m", "duplexeval.agents.faulty", "--socket", "{socket}",
                               "--mode", mode, "--at-frame", str(at_frame)]},
        "audio": {"in_rate": 16000, "out_rate": 16000, "frame_ms": 80},
        "clocks": ["lockstep"],
        "capabilities": [],
    }


def tone(seconds: float, rate: int = 16000, freq: float = 330.0, seed: int = 0) -> np.ndarray:
    n = int(seconds * rate)
    rng = np.random.default_rng(seed)
    t = np.arange(n) / rate
    return (0.2 * np.sin(2 * np.pi * freq * t) + 0.02 * rng.standard_normal(n)).astype(np.float32)


class ScriptedStimulus(Stimulus):
    """Plays `audio`, sends `labels` (frame -> list of label messages) before their frames."""

    def __init__(self, audio: np.ndarray, rate: int, labels: dict[int, list[dict]] | None = None):
        self.audio, self.src_rate, self.labels = audio, rate, labels or {}
        self.pending: list[dict] = []
        self.observed: list[np.ndarray] = []

    def bind(self, rate: int, frame_samples: int) -> None:
        super().bind(rate, frame_samples)
        assert rate == self.src_rate
        n = -(-len(self.audio) // frame_samples) * frame_samples
        self.padded = np.concatenate([self.audio, np.zeros(n - len(self.audio), dtype=np.float32)])

    def next_input(self, frame_idx: int) -> np.ndarray | None:
        start = frame_idx * self.frame_samples
        if start >= len(self.padded):
            return None
        self.pending += [dict(m, frame_idx=frame_idx) for m in self.labels.get(frame_idx, [])]
        return self.padded[start : start + self.frame_samples]

    def observe_output(self, frame_idx: int, audio: np.ndarray) -> None:
        self.observed.append(audio.copy())

    def drain_labels(self) -> list[dict]:
        out, self.pending = self.pending, []
        return out
