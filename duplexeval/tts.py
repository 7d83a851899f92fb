"""Text-to-speech for scenes and agents, cached by content hash: flite by default, Qwen3-TTS per suite.

flite (Debian's, four distinct voices) is near-instant and Whisper reads it well, which is
why the embedded suite uses it for speakers A-D and the reference agents use it to speak.
A suite's `tts` block selects another backend with the voice of each speaker pinned
(`qwen3-tts`, the Duplex-MPE scene voice: duplexeval/tts_backends/qwen3_tts.py); without
one, nothing changes: the same flite clips under the same keys.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from duplexeval.audio import read_wav, resample, write_wav
from duplexeval.io import sha256_json
from duplexeval.resources import cache_root

FLITE_VOICES = ("slt", "rms", "awb", "kal16")
TTS_CACHE_VERSION = 1


def default_cache_dir() -> Path:
    return cache_root() / "tts"


def flite_binary() -> str:
    path = shutil.which("flite")
    if path is None:
        raise RuntimeError("flite is not installed: run `make setup` (it installs Debian's flite)")
    return path


def synthesize(text: str, voice: str, rate: int, cache_dir: Path | None = None, *,
               tts: dict[str, Any] | None = None, speaker: str | None = None) -> np.ndarray:
    """float32 mono audio of `text`, resampled to `rate`.

    Without `tts` (or with `backend: flite`): flite `voice`. With a suite's `tts` block for
    another backend: the voice that block pins for `speaker` (a scene's A-D, or
    'preamble'); `voice` (the scene's flite voice name) is the fallback key.
    """
    if tts is not None and tts.get("backend", "flite") != "flite":
        return _synthesize_backend(text, voice, rate, cache_dir, tts, speaker)
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


def _synthesize_backend(text: str, voice: str, rate: int, cache_dir: Path | None, tts: dict[str, Any],
                        speaker: str | None) -> np.ndarray:
    if tts.get("backend") != "qwen3-tts":
        raise ValueError(f"unknown TTS backend {tts.get('backend')!r}; choose flite or qwen3-tts")
    from duplexeval.tts_backends import qwen3_tts

    cfg = qwen3_tts.settings(tts)
    qwen_voice = qwen3_tts.voice_for(cfg, speaker, voice)
    key = sha256_json(qwen3_tts.cache_components(text, qwen_voice, rate, cfg, TTS_CACHE_VERSION))
    cached = (cache_dir or default_cache_dir()) / f"{key}.wav"
    if cached.exists():
        audio, _ = read_wav(cached)
        return audio
    audio, native = qwen3_tts.synthesize_native(text, qwen_voice, cfg)
    write_wav(cached, resample(audio, native, rate), rate)
    audio, _ = read_wav(cached)
    return audio
