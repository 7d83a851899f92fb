"""Text-to-speech for scenes and agents, cached by content hash: flite by default, Qwen3-TTS per suite.

flite (Debian's, four distinct voices) is near-instant and Whisper reads it well, which is
why the embedded suite uses it for speakers A-D and the reference agents use it to speak.
A suite's `tts` block selects another backend with the voice of each speaker pinned
(`qwen3-tts`, the Duplex-MPE scene voice: duplexeval/tts_backends/qwen3_tts.py); without
one, nothing changes: the same flite clips under the same keys.

Clips live in the shared content store (duplexeval/store.py, `$DUPLEXEVAL_CACHE/tts`): each
clip `<key[:2]>/<key>.wav` beside its entry, which lists the key's components (engine,
voice, text, rate; Qwen3-TTS adds its weights, options and package versions) and the
clip's sha256, checked on every read. A clip of the earlier flat layout (`<key>.wav`, same
key) is adopted into the store on first use instead of being synthesised again.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from duplexeval.audio import read_wav, resample, write_wav
from duplexeval.resources import cache_root
from duplexeval.store import ContentStore

FLITE_VOICES = ("slt", "rms", "awb", "kal16")
TTS_CACHE_VERSION = 1


def default_cache_dir() -> Path:
    return cache_root() / "tts"


def clip_store(cache_dir: Path | None = None) -> ContentStore:
    """The TTS clips' store (`cache_dir`, else `$DUPLEXEVAL_CACHE/tts`)."""
    return ContentStore.of("tts", cache_dir or default_cache_dir())


def _cached_clip(store: ContentStore, components: dict[str, Any]) -> np.ndarray | None:
    """The stored clip of these components, adopting one of the flat layout; None on a miss."""
    path = store.get(components)
    if path is None:
        legacy = store.root / f"{store.key(components)}.wav"
        if not legacy.is_file():
            return None
        path = store.put_file(components, lambda dest: _move(legacy, dest))
    audio, _ = read_wav(path)
    return audio


def _move(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    os.replace(src, dest)


def _stored_clip(store: ContentStore, components: dict[str, Any], audio: np.ndarray, rate: int) -> np.ndarray:
    """Stores the clip and returns it as later calls will read it: identical bytes either way."""
    path = store.put_file(components, lambda dest: write_wav(dest, audio, rate))
    stored, _ = read_wav(path)
    return stored


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
    store = clip_store(cache_dir)
    components = {"v": TTS_CACHE_VERSION, "engine": "flite", "voice": voice, "text": text, "rate": rate}
    cached = _cached_clip(store, components)
    if cached is not None:
        return cached
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "tts.wav"
        subprocess.run([flite_binary(), "-voice", voice, "-t", text, "-o", str(out)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        audio, native = read_wav(out)
    return _stored_clip(store, components, resample(audio, native, rate), rate)


def _synthesize_backend(text: str, voice: str, rate: int, cache_dir: Path | None, tts: dict[str, Any],
                        speaker: str | None) -> np.ndarray:
    from duplexeval.tts_backends import BACKENDS, TTS_BACKENDS

    name = str(tts.get("backend"))
    if name not in BACKENDS:
        raise ValueError(f"unknown TTS backend {name!r}; choose one of {', '.join(TTS_BACKENDS)}")
    backend = BACKENDS[name]
    cfg = backend.settings(tts)
    backend_voice = backend.voice_for(cfg, speaker, voice)
    store = clip_store(cache_dir)
    components = backend.cache_components(text, backend_voice, rate, cfg, TTS_CACHE_VERSION)
    cached = _cached_clip(store, components)
    if cached is not None:
        return cached
    audio, native = backend.synthesize_native(text, backend_voice, cfg)
    return _stored_clip(store, components, resample(audio, native, rate), rate)
