"""A deliberately broken agent for the fault tests: each mode is one way a real model fails.

Modes (from frame `--at-frame` on): crash (process exits), hang (step never returns),
wrong-size (output frame too short), garbage (bytes that are not a frame), nan (step
returns NaN audio: the server base refuses to encode it and reports INTERNAL; s16le on
the wire cannot carry a NaN), close (drops the socket without a word).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from duplexeval.protocol.server import CloseSession, DuplexServer, run_server
from duplexeval.protocol.wire import FrameKind, encode_audio

MODES = ("crash", "hang", "wrong-size", "garbage", "nan", "close", "none")


class FaultyAgent(DuplexServer):
    model_name = "faulty"
    in_rate = 16000
    out_rate = 16000
    frame_ms = 80.0

    def __init__(self, mode: str, at_frame: int):
        super().__init__()
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; choose one of {MODES}")
        self.mode, self.at_frame = mode, at_frame

    def step(self, frame_idx: int, input_audio: np.ndarray, forced: np.ndarray | None) -> np.ndarray:
        silence = np.zeros(self.out_frame_samples, dtype=np.float32)
        if frame_idx < self.at_frame:
            return silence
        if self.mode == "crash":
            print(f"faulty: simulated crash at frame {frame_idx}", file=sys.stderr, flush=True)
            os._exit(3)
        if self.mode == "hang":
            time.sleep(3600)
        if self.mode == "nan":
            return np.full(self.out_frame_samples, np.nan, dtype=np.float32)
        if self.mode == "close":
            raise CloseSession()
        return silence

    def encode_output(self, frame_idx: int, audio: np.ndarray) -> bytes:
        if frame_idx >= self.at_frame and self.mode == "wrong-size":
            return encode_audio(FrameKind.OUTPUT, frame_idx, audio[:-7])
        if frame_idx >= self.at_frame and self.mode == "garbage":
            return b"\xde\xad\xbe\xef garbage" * 3
        return super().encode_output(frame_idx, audio)


def _args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mode", choices=MODES, required=True)
    parser.add_argument("--at-frame", type=int, default=3)


def main(argv: list[str] | None = None) -> None:
    run_server(lambda a: FaultyAgent(a.mode, a.at_frame), argv, description=__doc__, add_arguments=_args)


if __name__ == "__main__":
    main()
