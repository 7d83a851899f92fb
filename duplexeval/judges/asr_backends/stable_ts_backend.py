"""stable-ts: stabilised Whisper timestamps; an optional extra.

stable-ts requires torchaudio, which does not load beside the CPU torch 2.13.0 build
(DESIGN: Real components), so it lives in its own extra and is tested where it imports.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from duplexeval.judges.asr_backends import OpenAIWhisperBackend

_lock = threading.Lock()
_models: dict[str, Any] = {}


def _import():
    try:
        import stable_whisper
    except (ImportError, OSError) as exc:  # OSError: torchaudio's native library failing to load
        from duplexeval.judges.asr import MissingExtraError

        raise MissingExtraError("ASR backend 'stable-ts' is not installed or does not load: "
                                "pip install duplexeval[stable-ts] in an environment with a matching "
                                f"torch/torchaudio pair (see docs/judges.md) [{type(exc).__name__}: {exc}]") from exc
    return stable_whisper


class StableTsBackend(OpenAIWhisperBackend):
    name = "stable-ts"
    package = "stable-ts"

    def transcribe(self, audio_16k: np.ndarray, model: str, language: str | None, options: dict[str, Any]):
        from duplexeval.judges.asr import Transcript, Word

        sw = _import()
        with _lock:
            if model not in _models:
                _models[model] = sw.load_model(model, device="cpu")
        result = _models[model].transcribe(audio_16k, language=language, **options)
        words = [Word(w.word.strip(), round(float(w.start), 3), round(float(w.end), 3))
                 for seg in result.segments for w in (seg.words or []) if w.word.strip()]
        return Transcript(result.text.strip(), words, self.name, model)
