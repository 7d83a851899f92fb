"""Qwen3-TTS (the Duplex-MPE scene voice, App. A2.3) through the `qwen-tts` package.

A suite selects it with a `tts` block that pins the voice of every speaker:

    tts:
      backend: qwen3-tts
      model: Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice     # a spec in specs/judges/perception/ (task tts) pins its weights
      language: English
      voices: {A: Ryan, B: Vivian, C: Aiden, D: Serena, preamble: Ryan}
      options: {seed: 0}                               # sampling settings; see DEFAULT_OPTIONS

Each clip is `Qwen3TTSModel.generate_custom_voice(text, speaker=<voice>, language=...)`,
sampled under a seed derived from (options.seed, voice, text), so a clip does not depend
on the order clips are rendered in; then resampled (soxr) to the scene's rate and cached
by content hash like flite's clips (`$DUPLEXEVAL_CACHE/tts/<key>.wav`, the key holding the
model's weights identity, package versions, voice, language, text, rate and options).

qwen-tts imports torchaudio (its 25 Hz tokenizer), which does not load beside this
project's CPU torch 2.13.0, so it runs in the harness image (images/harness), not here.
"""

from __future__ import annotations

import threading
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import numpy as np

from duplexeval.io import sha256_json
from duplexeval.judges.local_models import (
    LocalWeights,
    MissingExtraError,
    MissingWeightsError,
    find_spec,
    is_local_path,
    path_weights,
    spec_weights,
)
from duplexeval.shims.rng import seed_torch

NAME = "qwen3-tts"
DEFAULT_MODEL = "Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice"
PACKAGES = ("qwen-tts", "transformers", "torch")
# qwen-tts's own hard defaults (Qwen3TTSModel._merge_generate_kwargs), written out so the
# key records them rather than whatever a generate_config.json says; `seed` is ours.
DEFAULT_OPTIONS: dict[str, Any] = {
    "seed": 0,
    "do_sample": True, "top_k": 50, "top_p": 1.0, "temperature": 0.9, "repetition_penalty": 1.05,
    "subtalker_dosample": True, "subtalker_top_k": 50, "subtalker_top_p": 1.0, "subtalker_temperature": 0.9,
    "max_new_tokens": 2048,
    "instruct": "",
    "dtype": "auto",
    "device": "auto",
}

_lock = threading.Lock()
_models: dict[tuple, Any] = {}


def _version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not-installed"


def _import():
    try:
        import qwen_tts
    except (ImportError, OSError) as exc:  # OSError: torchaudio's native library failing to load
        raise MissingExtraError(
            "TTS backend 'qwen3-tts' is not installed or does not load: it needs qwen-tts==0.1.1 and a torch/"
            "torchaudio pair that loads together; run it in the harness image (images/harness, docs/judges.md) "
            f"[{type(exc).__name__}: {exc}]") from exc
    return qwen_tts


def resolve(model: str) -> LocalWeights:
    spec = find_spec("tts", NAME, model)
    if spec is not None:
        return spec_weights(spec)
    if is_local_path(model):
        return path_weights(model)
    raise MissingWeightsError(f"qwen3-tts model {model!r}: no spec in specs/judges/perception/ (task tts) pins its weights; "
                              "add one (docs/judges.md) or give a local path")


def settings(tts: dict[str, Any]) -> dict[str, Any]:
    """The checked tts block with defaults filled in (what the key and the synthesiser see)."""
    unknown = set(tts) - {"backend", "model", "language", "voices", "options"}
    if unknown:
        raise ValueError(f"unknown tts settings {sorted(unknown)}; allowed: backend, model, language, voices, options")
    options = dict(tts.get("options") or {})
    bad = set(options) - set(DEFAULT_OPTIONS)
    if bad:
        raise ValueError(f"unknown qwen3-tts options {sorted(bad)}; allowed: {', '.join(DEFAULT_OPTIONS)}")
    from duplexeval.judges.asr_backends.base import torch_device

    out = {**DEFAULT_OPTIONS, **options}
    out["device"] = torch_device(out["device"])
    if out["dtype"] == "auto":
        out["dtype"] = "bfloat16" if out["device"].startswith("cuda") else "float32"
    voices = dict(tts.get("voices") or {})
    if not voices:
        raise ValueError("a qwen3-tts block must pin `voices` (speaker letter or 'preamble' -> Qwen3-TTS speaker)")
    return {"backend": NAME, "model": tts.get("model") or DEFAULT_MODEL, "language": tts.get("language", "English"),
            "voices": voices, "options": out}


def voice_for(cfg: dict[str, Any], speaker: str | None, voice: str) -> str:
    """The pinned Qwen3-TTS speaker of a scene speaker (A-D, 'preamble'); a scene voice name also works."""
    for key in (speaker, voice):
        if key is not None and key in cfg["voices"]:
            return str(cfg["voices"][key])
    raise ValueError(f"the suite's tts block pins no voice for speaker {speaker!r} (scene voice {voice!r}); "
                     f"it pins {sorted(cfg['voices'])}")


def cache_components(text: str, qwen_voice: str, rate: int, cfg: dict[str, Any], version_: int) -> dict[str, Any]:
    weights = resolve(cfg["model"])
    return {"v": version_, "engine": NAME, "model": cfg["model"], "weights_sha256": weights.identity,
            "packages": {p: _version(p) for p in PACKAGES}, "voice": qwen_voice, "language": cfg["language"],
            "text": text, "rate": rate, "options": cfg["options"]}


def _load(cfg: dict[str, Any]):
    qwen_tts = _import()
    import torch

    weights = resolve(cfg["model"])
    opts = cfg["options"]
    key = (weights.identity, opts["device"], opts["dtype"])
    with _lock:
        if key not in _models:
            _models[key] = qwen_tts.Qwen3TTSModel.from_pretrained(
                str(weights.folder), device_map=opts["device"], dtype=getattr(torch, opts["dtype"]))
        return _models[key]


def synthesize_native(text: str, qwen_voice: str, cfg: dict[str, Any]) -> tuple[np.ndarray, int]:
    """(float32 mono, native rate) of one clip, sampled under its own seed."""
    model = _load(cfg)
    opts = dict(cfg["options"])
    seed = int(sha256_json({"seed": opts.pop("seed"), "voice": qwen_voice, "text": text})[:8], 16)
    instruct = opts.pop("instruct") or None
    opts.pop("device")
    opts.pop("dtype")
    seed_torch(seed)
    wavs, fs = model.generate_custom_voice(text=text, speaker=qwen_voice, language=cfg["language"],
                                           instruct=instruct, **opts)
    return np.asarray(wavs[0], dtype=np.float32).reshape(-1), int(fs)


class Qwen3Tts:
    """This module as a `TtsBackend` (duplexeval.tts_backends.BACKENDS["qwen3-tts"])."""

    settings = staticmethod(settings)
    voice_for = staticmethod(voice_for)
    cache_components = staticmethod(cache_components)
    synthesize_native = staticmethod(synthesize_native)
