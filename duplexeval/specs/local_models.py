"""Which judge specs describe local perception models (ASR, aligners, TTS), and the checks
that every ASR/TTS selection names one.

Spec-level knowledge only, so the registry can check references without importing the
judges; duplexeval.judges.local_models holds the weights and errors.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from duplexeval.specs.errors import SpecErrors
from duplexeval.specs.index import load_spec_cached, spec_files

LOCAL_TASKS = ("asr", "forced-alignment", "tts")


def local_specs(root: Path | None = None) -> list[Any]:
    """Every judge spec whose task is asr, forced-alignment or tts (they live in specs/judges/perception/).

    A spec file that does not load is skipped here (`duplexeval validate` reports it), so
    one broken file does not stop an ASR model from being found.
    """
    out = []
    for path in spec_files("judges", (root,) if root else None):
        try:
            spec = load_spec_cached(path, expected_kind="judge")
        except SpecErrors:
            continue
        if spec.data.get("task") in LOCAL_TASKS:
            out.append(spec)
    return out


def find_spec(task: str, provider: str, model: str, root: Path | None = None) -> Any | None:
    """The spec of (task, backend, model), e.g. ("asr", "qwen3-asr", "Qwen/Qwen3-ASR-1.7B"), or None."""
    for spec in local_specs(root):
        d = spec.data
        if d["task"] == task and d["provider"] == provider and d.get("model") == model:
            return spec
    return None


def is_local_path(model: str) -> bool:
    """A model name that is a path on disk ('/...', './...', '~/...' or an existing file/folder)."""
    return model.startswith(("/", "./", "../", "~")) or Path(model).exists()


# --- cross-references (duplexeval validate) ------------------------------------------

# ASR backends whose weights a spec must pin (faster-whisper's come bundled, pocketsphinx ships its own).
SPEC_WEIGHTS_ASR = {"whisper-timestamped": ("whisper-timestamped",), "stable-ts": ("stable-ts", "whisper-timestamped"),
                    "qwen3-asr": ("qwen3-asr",), "parakeet-tdt": ("parakeet-tdt",)}


def reference_problems(registry: Any) -> list[tuple[Any, tuple, str]]:
    """(spec, field path, message) for every ASR/TTS selection that names no spec'd model.

    A benchmark's (or a suite override's) asr block of a backend with downloaded weights
    must name a model some asr spec pins (or a local path); a qwen3-tts block must name a
    tts spec and only voices that spec lists; a judge role must name a verdict judge, not
    a perception model.
    """
    problems: list[tuple[Any, tuple, str]] = []
    local = {s.id: s for s in registry.all("judge") if s.data.get("task") in LOCAL_TASKS}

    def has(task: str, providers: tuple[str, ...], model: str) -> bool:
        return any(s.data["task"] == task and s.data["provider"] in providers and s.data.get("model") == model
                   for s in local.values())

    def check_asr(spec: Any, at: tuple, block: dict) -> None:
        backend, model = block.get("backend"), block.get("model")
        providers = SPEC_WEIGHTS_ASR.get(str(backend))
        if providers and model and not is_local_path(model) and not has("asr", providers, model):
            problems.append((spec, at + ("model",), f"asr backend {backend} model {model!r}: no spec in specs/judges/perception/ "
                             f"(task asr, provider {providers[0]}) pins its weights"))
        aligner = (block.get("options") or {}).get("forced_aligner")
        if aligner and not is_local_path(aligner) and not has("forced-alignment", ("qwen3-asr",), aligner):
            problems.append((spec, at + ("options", "forced_aligner"),
                             f"forced aligner {aligner!r}: no spec in specs/judges/perception/ (task forced-alignment) pins its weights"))

    def check_roles(spec: Any, at: tuple, roles: dict) -> None:
        for role, judge_id in roles.items():
            if judge_id in local:
                problems.append((spec, at + (role,), f"judge role {role} names {judge_id}, a {local[judge_id].data['task']} "
                                 "model spec, not a verdict judge"))

    for spec in registry.all("benchmark"):
        if isinstance(spec.data.get("asr"), dict):
            check_asr(spec, ("asr",), spec.data["asr"])
        check_roles(spec, ("judges",), spec.data.get("judges", {}))
    for spec in registry.all("suite"):
        overrides = spec.data.get("overrides", {})
        if isinstance(overrides.get("asr"), dict):
            check_asr(spec, ("overrides", "asr"), overrides["asr"])
        check_roles(spec, ("overrides", "judges"), overrides.get("judges", {}))
        tts = spec.data.get("tts")
        if isinstance(tts, dict) and tts.get("backend") not in (None, "flite"):
            model = tts.get("model", "")
            target = next((s for s in local.values() if s.data["task"] == "tts" and s.data["provider"] == tts["backend"]
                           and s.data.get("model") == model), None)
            if target is None and not is_local_path(model):
                problems.append((spec, ("tts", "model"), f"tts backend {tts['backend']} model {model!r}: no spec in "
                                 "specs/judges/perception/ (task tts) pins its weights"))
            offered = {v.lower() for v in (target.data.get("voices") or [])} if target is not None else set()
            for who, voice in (tts.get("voices") or {}).items():
                if target is not None and offered and str(voice).lower() not in offered:
                    problems.append((spec, ("tts", "voices", who), f"voice {voice!r} is not one of {target.id}'s voices "
                                     f"({', '.join(target.data['voices'])})"))
    return problems
