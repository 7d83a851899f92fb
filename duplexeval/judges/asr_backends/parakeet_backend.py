"""Parakeet-TDT through NVIDIA NeMo: the ASR Full-Duplex-Bench publishes its word timings with.

The authors' get_transcript step (Full-Duplex-Bench, arXiv 2503.04721 / 2507.23159) loads
nvidia/parakeet-tdt-0.6b-v2, averages a multichannel file to mono, writes it to a
temporary WAV and asks NeMo's `transcribe(..., timestamps=True)` for word timestamps;
each word's start and end (seconds) become the `chunks` of their output.json. This
backend does the same through this project's ASR interface: the audio arrives mono at
16 kHz (duplexeval.judges.asr resamples), goes to NeMo as a temporary 16 kHz WAV, and the
word list passes through `clean_words` like every backend's.

Weights: `specs/judges/perception/asr-parakeet-tdt-0.6b-v2.yaml` pins the hub file (one
`.nemo` archive), or a `.nemo` file given as a local path (the tests: a randomly
initialised tiny TDT model built from a config, duplexeval.judges.tiny_parakeet).

NeMo cannot live in the main lock (its trainer, lightning 2.4, pins packaging<25 and
fsspec<2026, where the lock has 26.4 and 2026.9.0; it also pulls 87 packages, 2.2 GB with
torch): it runs in `.venv-parakeet` (`make parakeet-venv`, requirements/parakeet.txt)
or the harness image; elsewhere selecting this backend is a MissingExtraError naming that.
"""

from __future__ import annotations

import os
import tempfile
import threading
from typing import Any

import numpy as np

from duplexeval.judges.asr_backends.base import LocalWeightsBackend, MissingExtraError, torch_device
from duplexeval.judges.transcript import Transcript, clean_words

_lock = threading.Lock()
_models: dict[tuple, Any] = {}

DEFAULT_OPTIONS: dict[str, Any] = {
    "device": "auto",     # the authors move the model to cuda; on cpu the words are the same up to float rounding
    "batch_size": 1,      # one file per call, as their script transcribes
}


def _import():
    try:
        import nemo.collections.asr as nemo_asr
        import torch  # noqa: F401
    except ImportError as exc:
        raise MissingExtraError(
            "ASR backend 'parakeet-tdt' is not installed: it needs nemo_toolkit[asr] (NVIDIA NeMo), which cannot "
            "live beside this project's lock; run it in .venv-parakeet (`make parakeet-venv`, "
            f"requirements/parakeet.txt) or the harness image [{type(exc).__name__}: {exc}]") from exc
    return nemo_asr


def words_of(hypothesis: Any) -> list[tuple[str, float, float]]:
    """(word, start, end) from a NeMo hypothesis's word timestamps, as the authors read them."""
    stamps = getattr(hypothesis, "timestamp", None) or {}
    return [(str(w["word"]), float(w["start"]), float(w["end"])) for w in stamps.get("word", [])]


class ParakeetBackend(LocalWeightsBackend):
    name = "parakeet-tdt"
    package = "nemo_toolkit"
    extra_packages = ("torch",)
    default_model = "nvidia/parakeet-tdt-0.6b-v2"

    def require(self) -> None:
        _import()

    def effective_options(self, options: dict[str, Any]) -> dict[str, Any]:
        unknown = set(options) - set(DEFAULT_OPTIONS)
        if unknown:
            raise ValueError(f"unknown parakeet-tdt options {sorted(unknown)}; allowed: {', '.join(DEFAULT_OPTIONS)}")
        out = {**DEFAULT_OPTIONS, **options}
        out["device"] = torch_device(out["device"])
        return out

    def _load(self, model: str, opts: dict[str, Any]):
        nemo_asr = _import()
        weights = self.resolve(model)
        nemo_files = [weights.folder / model] if str(model).endswith(".nemo") else sorted(weights.folder.glob("*.nemo"))
        nemo_files = [p for p in nemo_files if p.is_file()]
        if len(nemo_files) != 1:
            raise MissingExtraError(f"parakeet-tdt model {model!r}: expected one .nemo file in {weights.folder}, "
                                    f"found {len(nemo_files)}")
        key = (weights.identity, opts["device"])
        with _lock:
            if key not in _models:
                loaded = nemo_asr.models.ASRModel.restore_from(str(nemo_files[0]), map_location=opts["device"])
                loaded.eval()
                _models[key] = loaded
            return _models[key]

    def transcribe(self, audio_16k: np.ndarray, model: str, language: str | None, options: dict[str, Any]):
        import soundfile as sf

        asr = self._load(model, options)
        fd, path = tempfile.mkstemp(suffix=".wav")
        os.close(fd)
        try:
            sf.write(path, np.asarray(audio_16k, dtype=np.float32), 16000)
            with _lock:   # a NeMo model is not safe to call from two threads at once
                result = asr.transcribe([path], timestamps=True, batch_size=options["batch_size"], verbose=False)[0]
        finally:
            os.unlink(path)
        words = clean_words(words_of(result), len(audio_16k) / 16000)
        return Transcript(str(getattr(result, "text", "")).strip(), words, self.name, model)
