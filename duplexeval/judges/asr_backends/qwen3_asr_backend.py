"""Qwen3-ASR: the Duplex-MPE ASR (Qwen3-ASR-1.7B, §3.5), through the `qwen-asr` package.

Engine `transformers` (default; `Qwen3ASRModel.from_pretrained`) or `vllm`
(`Qwen3ASRModel.LLM`, GPU only, `pip install qwen-asr[vllm]`). Word timestamps come from
Qwen3-ForcedAligner when `options.forced_aligner` names one (the MPE scorer claims words
by their midpoint; without an aligner a transcript has text and no words, and a window
then takes the whole episode's text). Decoding is greedy (qwen-asr's transformers path
calls `generate` without sampling), so the same audio gives the same words.

Weights: `specs/judges/perception/asr-qwen3-asr-1.7b.yaml` and `asr-qwen3-forced-aligner-0.6b.yaml`
pin the hub repos at a commit (`duplexeval weights fetch <spec id>`), or a model / aligner
given as a local folder (the tests: random tiny models from `duplexeval.judges.tiny_models`).

qwen-asr pins transformers==4.57.6, whose huggingface-hub<1.0 cannot live beside this
project's lock (huggingface_hub 2.4): it runs in `.venv-qwen3` (`make qwen3-venv`) or the
harness image, never in the main venv.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from duplexeval.judges.asr_backends.base import LocalWeightsBackend, MissingExtraError, torch_device
from duplexeval.judges.transcript import Transcript, clean_words

_lock = threading.Lock()
_models: dict[tuple, Any] = {}

# ISO 639-1 -> the language names Qwen3-ASR takes ("en" in a spec forces English output).
LANGUAGES = {"en": "English", "zh": "Chinese", "yue": "Cantonese", "de": "German", "fr": "French",
             "es": "Spanish", "pt": "Portuguese", "it": "Italian", "ja": "Japanese", "ko": "Korean",
             "ru": "Russian", "ar": "Arabic", "nl": "Dutch"}

DEFAULT_OPTIONS: dict[str, Any] = {
    "engine": "transformers",       # or "vllm"
    "forced_aligner": None,         # e.g. Qwen/Qwen3-ForcedAligner-0.6B: word timestamps
    "dtype": "auto",                # auto: bfloat16 on cuda, float32 on cpu
    "device": "auto",
    "max_new_tokens": 512,          # qwen-asr's default
    "context": "",                  # the system-prompt context qwen-asr accepts (none in the paper)
}


def _import():
    try:
        import qwen_asr
        import torch  # noqa: F401
    except ImportError as exc:
        raise MissingExtraError(
            "ASR backend 'qwen3-asr' is not installed: it needs qwen-asr==0.0.6 with transformers==4.57.6, "
            "which cannot live beside this project's lock; run it in .venv-qwen3 (`make qwen3-venv`, "
            f"requirements/qwen3.txt) or the harness image (images/harness) [{type(exc).__name__}: {exc}]") from exc
    return qwen_asr


class Qwen3AsrBackend(LocalWeightsBackend):
    name = "qwen3-asr"
    package = "qwen-asr"
    extra_packages = ("transformers", "torch")
    default_model = "Qwen/Qwen3-ASR-1.7B"

    def require(self) -> None:
        _import()

    def effective_options(self, options: dict[str, Any]) -> dict[str, Any]:
        unknown = set(options) - set(DEFAULT_OPTIONS)
        if unknown:
            raise ValueError(f"unknown qwen3-asr options {sorted(unknown)}; allowed: {', '.join(DEFAULT_OPTIONS)}")
        out = {**DEFAULT_OPTIONS, **options}
        if out["engine"] not in ("transformers", "vllm"):
            raise ValueError(f"qwen3-asr engine must be transformers or vllm, got {out['engine']!r}")
        out["device"] = torch_device(out["device"])
        if out["dtype"] == "auto":
            out["dtype"] = "bfloat16" if out["device"].startswith("cuda") else "float32"
        aligner = out["forced_aligner"]
        # The aligner's weights are part of what produced the words: their identity joins the key.
        out["forced_aligner_sha256"] = self.resolve(aligner, "forced-alignment").identity if aligner else None
        return out

    def _load(self, model: str, opts: dict[str, Any]):
        qwen_asr = _import()
        import torch

        weights = self.resolve(model)
        aligner = self.resolve(opts["forced_aligner"], "forced-alignment") if opts["forced_aligner"] else None
        key = (weights.identity, aligner.identity if aligner else None, opts["engine"], opts["device"],
               opts["dtype"], opts["max_new_tokens"])
        with _lock:
            if key not in _models:
                dtype = getattr(torch, opts["dtype"])
                aligner_kwargs = {"dtype": dtype, "device_map": opts["device"]}
                if opts["engine"] == "vllm":
                    _models[key] = qwen_asr.Qwen3ASRModel.LLM(
                        model=str(weights.folder), forced_aligner=str(aligner.folder) if aligner else None,
                        forced_aligner_kwargs=aligner_kwargs, max_new_tokens=opts["max_new_tokens"])
                else:
                    _models[key] = qwen_asr.Qwen3ASRModel.from_pretrained(
                        str(weights.folder), forced_aligner=str(aligner.folder) if aligner else None,
                        forced_aligner_kwargs=aligner_kwargs, max_new_tokens=opts["max_new_tokens"],
                        dtype=dtype, device_map=opts["device"])
            return _models[key]

    def transcribe(self, audio_16k: np.ndarray, model: str, language: str | None, options: dict[str, Any]):
        asr = self._load(model, options)
        lang = LANGUAGES.get(language, language) if language else None
        stamps = bool(options["forced_aligner"])
        result = asr.transcribe(audio=(np.asarray(audio_16k, dtype=np.float32), 16000), context=options["context"],
                                language=lang, return_time_stamps=stamps)[0]
        raw = [(it.text, it.start_time, it.end_time) for it in (result.time_stamps or [])] if stamps else []
        words = clean_words(raw, len(audio_16k) / 16000)
        return Transcript(str(result.text).strip(), words, self.name, model)
