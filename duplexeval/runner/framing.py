"""Per-frame streaming resampling between the harness rate and a model's native rates.

A streaming resampler (soxr, the project's one resampler) emits a variable number of
samples per chunk and starts behind by its filter delay, but the protocol needs exactly
`frame_samples` per frame. `FrameResampler` keeps a FIFO and pads zeros at the front
whenever it would run short, so each frame is exact; the padding (the causal delay the
model really experiences) is reported so judges can account for it (docs/runner.md).
"""

from __future__ import annotations

import numpy as np
import soxr


class FrameResampler:
    """Resamples a stream of frames from `from_rate` to `to_rate`, `out_frame` samples per frame."""

    def __init__(self, from_rate: int, to_rate: int, out_frame: int):
        self.from_rate, self.to_rate, self.out_frame = from_rate, to_rate, out_frame
        self._stream = None if from_rate == to_rate else soxr.ResampleStream(from_rate, to_rate, 1, dtype="float32", quality="HQ")
        self._fifo = np.zeros(0, dtype=np.float32)
        self._chunks: list[np.ndarray] = []
        self.padded_samples = 0  # zeros inserted: the causal resampling delay, in to_rate samples

    def push(self, frame: np.ndarray) -> np.ndarray:
        """One frame in (any length at from_rate), exactly `out_frame` samples out at to_rate."""
        frame = np.asarray(frame, dtype=np.float32)
        out = frame if self._stream is None else self._stream.resample_chunk(frame)
        self._chunks.append(out)
        fifo = np.concatenate([self._fifo, out]) if len(self._fifo) else out
        short = self.out_frame - len(fifo)
        if short > 0:
            fifo = np.concatenate([np.zeros(short, dtype=np.float32), fifo])
            self.padded_samples += short
        self._fifo = fifo[self.out_frame :]
        return fifo[: self.out_frame].copy()

    @property
    def delay_ms(self) -> float:
        return 1000.0 * self.padded_samples / self.to_rate

    def aligned(self, n_samples: int) -> np.ndarray:
        """Everything pushed, resampled with the filter delay removed, cut or padded to n_samples.

        Used for the recording's model channel: what the model said belongs at the time it
        said it, not a filter delay later.
        """
        chunks = list(self._chunks)
        if self._stream is not None:
            chunks.append(self._stream.resample_chunk(np.zeros(0, dtype=np.float32), last=True))
        audio = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.float32)
        if len(audio) >= n_samples:
            return audio[:n_samples].astype(np.float32, copy=False)
        return np.concatenate([audio, np.zeros(n_samples - len(audio), dtype=np.float32)])
