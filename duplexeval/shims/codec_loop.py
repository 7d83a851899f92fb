"""A non-streaming audio codec driven one frame at a time (Voila's Encodec tokenizer).

Voila's tokenizer (`voila_tokenizer.py`, `VoilaTokenizer`: transformers' `EncodecModel` at
16 kHz, one code column per 640 samples) encodes and decodes whole clips; its duplex
mode tokenises the user's entire recording up front (`tokenize_func.py`,
`_token_input_format_autonomous`). A lockstep shim hears one 40 ms frame at a time, so
`IncrementalCodec` encodes a sliding window - the last `encode_context` frames plus the
new one - and keeps the window's last code column as the frame's codes, and decodes the
model's last `decode_context` code columns and keeps the last frame of samples. With a
context at least as long as the codec's receptive field this equals the whole-clip
result away from the clip's start (tests/test_shims_voila.py checks both the exact case
and the bound with a stand-in codec); the cost is one window per frame instead of one
pass, which a GPU absorbs.

The window state (recent audio, recent codes) is copyable for a fork snapshot. Imports
numpy; the codec callables may return numpy arrays or torch tensors.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable

import numpy as np

from duplexeval.shims.framing import _to_numpy


class IncrementalCodec:
    """`encode(wav) -> codes[n_q, T]` and `decode(codes[n_q, T]) -> wav`, one frame at a time."""

    def __init__(self, encode: Callable[[np.ndarray], Any], decode: Callable[[np.ndarray], Any], frame_samples: int,
                 *, encode_context: int = 24, decode_context: int = 24) -> None:
        self.encode, self.decode = encode, decode
        self.frame_samples = int(frame_samples)
        self.encode_context = int(encode_context)
        self.decode_context = int(decode_context)
        self.reset()

    def reset(self) -> None:
        self._audio: deque[np.ndarray] = deque(maxlen=self.encode_context + 1)
        self._codes: deque[np.ndarray] = deque(maxlen=self.decode_context + 1)

    def encode_frame(self, frame: np.ndarray) -> np.ndarray:
        """The codes (n_q,) of the newest frame, encoded with the frames before it as context."""
        frame = np.asarray(frame, dtype=np.float32).reshape(-1)
        if frame.size != self.frame_samples:
            raise ValueError(f"frame has {frame.size} samples, the codec hop is {self.frame_samples}")
        self._audio.append(frame)
        codes = _to_numpy(self.encode(np.concatenate(list(self._audio))))
        if codes.ndim != 2 or codes.shape[1] < 1:
            raise ValueError(f"codec encode returned shape {codes.shape}, expected (n_q, frames)")
        return codes[:, -1].astype(np.int64)

    def decode_frame(self, codes: np.ndarray) -> np.ndarray:
        """`frame_samples` of audio for the newest code column, decoded with the columns before it."""
        codes = np.asarray(codes, dtype=np.int64).reshape(-1)
        self._codes.append(codes)
        window = np.stack(list(self._codes), axis=1)  # (n_q, T)
        wav = _to_numpy(self.decode(window)).astype(np.float32).reshape(-1)
        n = self.frame_samples
        out = np.zeros(n, dtype=np.float32)
        tail = wav[-n:]
        out[n - len(tail):] = tail
        return out

    def state(self) -> dict:
        return {"audio": [a.copy() for a in self._audio], "codes": [c.copy() for c in self._codes]}

    def load_state(self, state: dict) -> None:
        self.reset()
        self._audio.extend(a.copy() for a in state["audio"])
        self._codes.extend(c.copy() for c in state["codes"])
