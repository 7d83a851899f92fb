"""A test-only stand-in model: repeats what it heard DELAY frames earlier, at 0.8 gain.

Causal and deterministic, and unlike the babbler it reacts to its input, so a test can
tell whether a recording's model channel is what this model said to exactly that input
(one-pass vs per-round MTR history-as-heard, tests/test_mtr_one_pass.py). It has no
teacher_forcing and no labels: the kind of model that runs history-as-heard. `--crash-at`
ends the process at that frame (a model fault mid-dialogue).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from duplexeval.protocol.server import DuplexServer, run_server

DELAY = 4


class EchoAgent(DuplexServer):
    model_name = "echo-standin"
    capabilities = ()

    def __init__(self, crash_at: int | None = None):
        super().__init__()
        self.crash_at = crash_at
        self.heard: list[np.ndarray] = []

    def reset(self) -> None:
        self.heard = []

    def step(self, frame_idx: int, input_audio: np.ndarray, forced: np.ndarray | None) -> np.ndarray:
        if self.crash_at is not None and frame_idx >= self.crash_at:
            print(f"echo-standin: simulated crash at frame {frame_idx}", file=sys.stderr, flush=True)
            os._exit(3)
        self.heard.append(np.asarray(input_audio, dtype=np.float32))
        if frame_idx < DELAY:
            return np.zeros(self.out_frame_samples, dtype=np.float32)
        return 0.8 * self.heard[frame_idx - DELAY]


def _args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--crash-at", type=int, default=None)


if __name__ == "__main__":
    run_server(lambda a: EchoAgent(a.crash_at), description=__doc__, add_arguments=_args)
