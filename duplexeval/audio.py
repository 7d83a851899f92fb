"""Audio conventions: float32 mono in [-1, 1] inside the harness, s16le on the wire and on disk.

Resampling happens in one place (soxr, a well-kept resampler) so every model is
converted the same way; Silero is always told the rate it is given.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile as sf
import soxr

from duplexeval.io import atomic_write_bytes

# recording.wav: channel 0 = what the model heard (user/room), channel 1 = what it said.
INPUT_CHANNEL = 0
MODEL_CHANNEL = 1


def resample(audio: np.ndarray, from_rate: int, to_rate: int) -> np.ndarray:
    audio = np.asarray(audio, dtype=np.float32)
    if from_rate == to_rate:
        return audio
    return soxr.resample(audio, from_rate, to_rate, quality="HQ").astype(np.float32, copy=False)


def float_to_s16le(audio: np.ndarray) -> bytes:
    clipped = np.clip(np.asarray(audio, dtype=np.float32), -1.0, 1.0)
    return (clipped * 32767.0).round().astype("<i2").tobytes()


def s16le_to_float(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0


def read_wav(path: str | Path) -> tuple[np.ndarray, int]:
    """Returns (samples, rate); samples are (n,) for mono or (n, channels)."""
    data, rate = sf.read(str(path), dtype="float32", always_2d=False)
    return data, int(rate)


def write_wav(path: str | Path, audio: np.ndarray, rate: int) -> None:
    """PCM 16 WAV, written atomically (temp file + rename)."""
    import io

    buf = io.BytesIO()
    sf.write(buf, np.asarray(audio, dtype=np.float32), rate, format="WAV", subtype="PCM_16")
    atomic_write_bytes(path, buf.getvalue())


def read_stereo_recording(path: str | Path) -> tuple[np.ndarray, np.ndarray, int]:
    """(input channel, model channel, rate) of a recording.wav; refuses anything not stereo."""
    data, rate = read_wav(path)
    if data.ndim != 2 or data.shape[1] != 2:
        shape = "mono" if data.ndim == 1 else f"{data.shape[1]} channels"
        raise ValueError(f"{path}: expected a stereo recording (ch0 input, ch1 model), got {shape}")
    return data[:, INPUT_CHANNEL].copy(), data[:, MODEL_CHANNEL].copy(), rate


def trim_silence(audio: np.ndarray, rate: int, floor: float = 0.01, keep_s: float = 0.01) -> np.ndarray:
    """Cut leading and trailing near-silence (flite pads each utterance with ~0.2 s of it).

    An agent that means to answer 0.1 s after a turn must not spend that budget on padding.
    """
    audio = np.asarray(audio, dtype=np.float32)
    loud = np.flatnonzero(np.abs(audio) > floor)
    if loud.size == 0:
        return audio[:0]
    keep = int(keep_s * rate)
    return audio[max(loud[0] - keep, 0): loud[-1] + keep + 1]
