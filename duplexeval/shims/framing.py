"""Variable-length model audio in, fixed protocol frames out; model PCM checked on the way.

Several systems produce audio in pieces of their own size: MiniCPM-o 4.5 returns 24 kHz
waveforms of varying length per 1 s unit (`streaming_generate(...)["audio_waveform"]`:
None, a zero-padded second, or several seconds joined), Freeze-Omni's TTS yields segments
cut at low-energy points, VocalNet and the cascaded baseline synthesise a whole reply at
once. Protocol v1 needs exactly `out_frame_samples` per input frame, so a shim pushes
whatever the model made into a `FrameFifo` and pops one frame per step: zeros when
nothing is buffered (an underrun: the model has nothing to say yet), never a short frame.

`pcm_float32` is the health check upstream bugs call for: MiniCPM-o users have reported
unintelligible output when int16 PCM was read as float (or float as int16). A shim runs
every model waveform through it; an int16 array is scaled, a float array with values far
outside [-1, 1] (int16 numbers in a float array), or NaN/inf, raises `PcmError` with what
was seen, which the protocol server turns into error{INTERNAL} instead of noise.

Imports numpy only (copied into model images; see duplexeval/shims/__init__.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

# A float waveform may overshoot 1.0 a little (resampling, vocoder ringing); int16 values
# read as float are hundreds or thousands. Anything above this is not float PCM.
FLOAT_PEAK_LIMIT = 4.0


class PcmError(ValueError):
    """Model audio that is not float PCM in [-1, 1]: the wrong dtype, NaN, or the wrong shape."""


def _to_numpy(audio: Any) -> np.ndarray:
    if hasattr(audio, "detach"):  # a torch tensor, on any device and dtype
        audio = audio.detach()
        if str(getattr(audio, "dtype", "")) in ("torch.bfloat16", "torch.float16"):
            audio = audio.float()
        audio = audio.cpu().numpy()
    return np.asarray(audio)


def pcm_float32(audio: Any, where: str = "model audio") -> np.ndarray:
    """1-D float32 PCM in [-1, 1] from a model's waveform (numpy or torch, float or int16).

    Squeezes leading unit axes ((1, n), (1, 1, n)); int16/int32 are scaled by 2**15/2**31.
    Raises PcmError for NaN/inf, several channels, or float values that look like integers.
    """
    arr = _to_numpy(audio)
    if arr.ndim > 1:
        squeezed = arr.reshape(-1) if all(d == 1 for d in arr.shape[:-1]) else None
        if squeezed is None:
            raise PcmError(f"{where}: shape {arr.shape} is not mono (expected (n,) or (1, n))")
        arr = squeezed
    if arr.dtype == np.int16:
        return (arr.astype(np.float32) / 32768.0).reshape(-1)
    if arr.dtype == np.int32:
        return (arr.astype(np.float64) / 2147483648.0).astype(np.float32).reshape(-1)
    if arr.dtype.kind not in "fiu" and arr.size:
        raise PcmError(f"{where}: dtype {arr.dtype} is not audio")
    arr = arr.astype(np.float32).reshape(-1)
    if arr.size == 0:
        return arr
    if not np.all(np.isfinite(arr)):
        raise PcmError(f"{where}: {int(np.sum(~np.isfinite(arr)))} NaN or infinite samples")
    peak = float(np.max(np.abs(arr)))
    if peak > FLOAT_PEAK_LIMIT:
        raise PcmError(f"{where}: float samples peak at {peak:.1f}, not within [-1, 1]: int16 PCM read as float? "
                       "(the shim refuses to send it as audio)")
    return np.clip(arr, -1.0, 1.0)


class FrameFifo:
    """A sample FIFO that hands out fixed frames: `push` any length, `pop` exactly `frame_samples`.

    `underrun_frames` counts pops that found part of a frame (the rest padded with zeros:
    the model's audio arrived slower than it plays);
    `state()` / `load_state()` copy the buffer for a shim's fork snapshot.
    """

    def __init__(self, frame_samples: int) -> None:
        if frame_samples <= 0:
            raise ValueError(f"frame_samples must be positive, got {frame_samples}")
        self.frame_samples = int(frame_samples)
        self._buf = np.zeros(0, dtype=np.float32)
        self.underrun_frames = 0
        self.pushed_samples = 0

    def __len__(self) -> int:
        return len(self._buf)

    @property
    def frames_buffered(self) -> int:
        """Whole frames waiting (a partial last frame counts as one)."""
        return -(-len(self._buf) // self.frame_samples)

    def push(self, audio: Any, where: str = "model audio") -> int:
        """Appends a checked waveform (see `pcm_float32`); None or empty adds nothing. Returns samples added."""
        if audio is None:
            return 0
        pcm = pcm_float32(audio, where)
        if pcm.size:
            self._buf = np.concatenate([self._buf, pcm])
            self.pushed_samples += pcm.size
        return int(pcm.size)

    def pop(self) -> np.ndarray:
        """The next frame: buffered samples first, zeros for the rest."""
        n = self.frame_samples
        out = np.zeros(n, dtype=np.float32)
        take = min(n, len(self._buf))
        if take:
            out[:take] = self._buf[:take]
            self._buf = self._buf[take:]
        if take < n and take > 0:
            self.underrun_frames += 1
        return out

    def clear(self) -> int:
        """Drops everything buffered (barge-in); returns how many samples were dropped."""
        dropped = len(self._buf)
        self._buf = np.zeros(0, dtype=np.float32)
        return dropped

    def state(self) -> dict:
        return {"buf": self._buf.copy(), "underrun_frames": self.underrun_frames, "pushed_samples": self.pushed_samples}

    def load_state(self, state: dict) -> None:
        self._buf = state["buf"].copy()
        self.underrun_frames = int(state["underrun_frames"])
        self.pushed_samples = int(state["pushed_samples"])


def rms(audio: np.ndarray) -> float:
    audio = np.asarray(audio, dtype=np.float32)
    return float(np.sqrt(np.mean(audio * audio))) if audio.size else 0.0
