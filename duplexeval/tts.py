"""Offline text-to-speech with Debian's flite (four distinct voices), cached by content hash.

flite is near-instant and Whisper reads it well, which is why the embedded suite uses
it for speakers A-D and the reference agents use it to speak.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from duplexeval.audio import read_wav, resample, write_wav
from duplexeval.io import sha256_json

FLITE_VOICES = ("slt", "rms", "awb", "kal16")
TTS_CACHE_VERSION = 1


def default_cache_dir() -> Path:
    return Path(os.environ.get("DUPLEXEVAL_CACHE", Path.cwd() / ".cache")) / "tts"


def flite_binary() -> str:
    path = shutil.which("flite")
    if path is None:
        raise RuntimeError("flite is not installed: run `make setup` (it installs Debian's flite)")
    return path


def synthesize(text: str, voice: str, rate: int, cache_dir: Path | None = None) -> np.ndarray:
    """float32 mono audio of `text` in flite `voice`, resampled to `rate`."""
    if voice not in FLITE_VOICES:
        raise ValueError(f"unknown flite voice {voice!r}; choose one of {', '.join(FLITE_VOICES)}")
    cache_dir = cache_dir or default_cache_dir()
    key = sha256_json({"v": TTS_CACHE_VERSION, "engine": "flite", "voice": voice, "text": text, "rate": rate})
    cached = cache_dir / f"{key}.wav"
    if cached.exists():
        audio, _ = read_wav(cached)
        return audio
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "tts.wav"
        subprocess.run([flite_binary(), "-voice", voice, "-t", text, "-o", str(out)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        audio, native = read_wav(out)
    audio = resample(audio, native, rate)
    write_wav(cached, audio, rate)
    audio, _ = read_wav(cached)  # what later calls will read: identical bytes either way
    return audio
