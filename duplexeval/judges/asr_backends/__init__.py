"""ASR backends behind `duplexeval.judges.asr.transcribe`.

Each backend module is imported only when chosen, so an optional extra that is not
installed costs nothing until someone selects it - and then fails with the pip extra
to install, not with a bare ImportError.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np


class Backend:
    """What a backend provides; subclasses load their model lazily and cache it."""

    name: str = ""
    package: str = ""  # the distribution whose version goes into the cache key
    default_model: str = ""

    def weights_sha256(self, model: str) -> str | None:
        """sha256 of bundled weights when the backend can pin them (part of the cache key)."""
        return None

    def effective_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """Options with the backend's defaults filled in: what the key and the decoder see."""
        return dict(options)

    def transcribe(self, audio_16k: np.ndarray, model: str, language: str | None, options: dict[str, Any]):
        raise NotImplementedError


class OpenAIWhisperBackend(Backend):
    """Backends on openai-whisper models (whisper-timestamped, stable-ts): one option rule."""

    default_model = "medium.en"

    def effective_options(self, options: dict[str, Any]) -> dict[str, Any]:
        if options.get("condition_on_previous_text"):
            raise ValueError("condition_on_previous_text must stay False (DESIGN: Real components)")
        return {"temperature": 0.0, "condition_on_previous_text": False, **options}


def _faster_whisper() -> Backend:
    from duplexeval.judges.asr_backends.faster_whisper_backend import FasterWhisperBackend

    return FasterWhisperBackend()


def _whisper_timestamped() -> Backend:
    from duplexeval.judges.asr_backends.whisper_timestamped_backend import WhisperTimestampedBackend

    return WhisperTimestampedBackend()


def _stable_ts() -> Backend:
    from duplexeval.judges.asr_backends.stable_ts_backend import StableTsBackend

    return StableTsBackend()


def _pocketsphinx() -> Backend:
    from duplexeval.judges.asr_backends.pocketsphinx_backend import PocketsphinxBackend

    return PocketsphinxBackend()


BACKENDS: dict[str, Callable[[], Backend]] = {
    "faster-whisper": _faster_whisper,
    "whisper-timestamped": _whisper_timestamped,
    "stable-ts": _stable_ts,
    "pocketsphinx": _pocketsphinx,
}
