"""whisper-timestamped: the MTR-DuplexBench ASR (medium.en), an optional extra.

It needs downloaded openai-whisper weights; where they exist the paper specs select it.
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
        import whisper_timestamped
    except ImportError as exc:
        from duplexeval.judges.asr import MissingExtraError

        raise MissingExtraError("ASR backend 'whisper-timestamped' is not installed: "
                                "pip install duplexeval[paper-asr]") from exc
    return whisper_timestamped


class WhisperTimestampedBackend(OpenAIWhisperBackend):
    name = "whisper-timestamped"
    package = "whisper-timestamped"

    def transcribe(self, audio_16k: np.ndarray, model: str, language: str | None, options: dict[str, Any]):
        from duplexeval.judges.asr import Transcript, Word

        wt = _import()
        with _lock:
            if model not in _models:
                _models[model] = wt.load_model(model, device="cpu")
        result = wt.transcribe(_models[model], audio_16k, language=language, **options)
        words = [Word(w["text"].strip(), round(float(w["start"]), 3), round(float(w["end"]), 3))
                 for seg in result.get("segments", []) for w in seg.get("words", []) if w["text"].strip()]
        return Transcript(result.get("text", "").strip(), words, self.name, model)
