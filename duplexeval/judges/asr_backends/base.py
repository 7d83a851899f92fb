"""What every ASR backend is: the `Backend` interface, the local-weights and openai-whisper bases
(moved out of the package's `__init__` so a backend module imports its base, never the
package that lists it).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable

import numpy as np

from duplexeval.judges.local_models import (  # noqa: F401
    LocalWeights,
    MissingExtraError,
    MissingWeightsError,
    find_spec,
    is_local_path,
    path_weights,
    spec_weights,
)


class Backend:
    """What a backend provides; subclasses load their model lazily and cache it."""

    name: str = ""
    package: str = ""  # the distribution whose version goes into the cache key
    # Further distributions whose versions change the words (in the key only when non-empty,
    # so the keys of the backends that have none stay as they were).
    extra_packages: tuple[str, ...] = ()
    # How the backend computes its input features where it departs from its package's own
    # (faster-whisper: whisper_features); in the key only when set, like extra_packages.
    features: str | None = None
    default_model: str = ""

    def require(self) -> None:
        """Raise MissingExtraError when the backend's package is not importable (checked before weights)."""

    def weights_sha256(self, model: str) -> str | None:
        """sha256 identity of the weights when the backend can pin them (part of the cache key)."""
        return None

    def weights_info(self, model: str) -> dict[str, Any] | None:
        """Where the weights come from (spec id, pin), for manifests and the ASR id; None: bundled/none."""
        return None

    def effective_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """Options with the backend's defaults filled in: what the key and the decoder see."""
        return dict(options)

    def transcribe(self, audio_16k: np.ndarray, model: str, language: str | None, options: dict[str, Any]):
        raise NotImplementedError


class LocalWeightsBackend(Backend):
    """A backend whose weights come from a spec in specs/judges/perception/ (weights cache) or a local path."""

    task = "asr"

    # Specs of which providers hold this backend's weights (stable-ts loads the same
    # openai-whisper checkpoints whisper-timestamped's specs pin).
    weights_providers: tuple[str, ...] = ()

    def resolve(self, model: str, task: str | None = None) -> LocalWeights:
        """The verified weights of `model`: its spec's pinned files, or a local path as is."""
        for provider in (self.name, *self.weights_providers):
            spec = find_spec(task or self.task, provider, model)
            if spec is not None:
                return spec_weights(spec)
        if is_local_path(model):
            return path_weights(model)
        raise MissingWeightsError(
            f"{self.name} model {model!r}: no spec in specs/judges/perception/ pins its weights (task {task or self.task}, "
            f"provider {self.name}, model {model!r}); add one (docs/judges.md) or give a local path")

    def weights_sha256(self, model: str) -> str | None:
        return self.resolve(model).identity

    def weights_info(self, model: str) -> dict[str, Any] | None:
        return self.resolve(model).to_json()


def torch_device(requested: str | None) -> str:
    """'auto' (or None): cuda when torch sees a GPU, else cpu. Part of the key: numerics differ."""
    if requested not in (None, "auto"):
        return str(requested)
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class OpenAIWhisperBackend(LocalWeightsBackend):
    """Backends on openai-whisper models (whisper-timestamped, stable-ts): one option rule."""

    default_model = "medium.en"
    extra_packages = ("openai-whisper", "torch")
    weights_providers = ("whisper-timestamped",)

    def effective_options(self, options: dict[str, Any]) -> dict[str, Any]:
        if options.get("condition_on_previous_text"):
            raise ValueError("condition_on_previous_text must stay False (docs/judges.md: it carries one window's hallucination into the next)")
        out = {"temperature": 0.0, "condition_on_previous_text": False, **options}
        if isinstance(out["temperature"], (list, tuple)):
            out["temperature"] = [float(t) for t in out["temperature"]]  # a fallback ladder, canonical in the key
        out["device"] = torch_device(out.get("device"))
        return out

    # One memo for every openai-whisper backend, keyed by backend too: stable-ts patches the
    # model it is given, so it never shares a model object with whisper-timestamped.
    _whisper_lock = threading.Lock()
    _whisper_models: dict[tuple[str, str, str, str], Any] = {}

    @staticmethod
    def call_options(options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """(device, the keyword arguments of the transcribe call): a temperature ladder as the tuple whisper wants."""
        opts = dict(options)
        device = opts.pop("device")
        if isinstance(opts.get("temperature"), list):
            opts["temperature"] = tuple(opts["temperature"])
        return device, opts

    def whisper_model(self, model: str, device: str, prepare: Callable[[Any], None] | None = None) -> Any:
        """The loaded model of (backend, model, device, weights), once per process; `prepare` runs once on a new one."""
        key = (self.name, model, device, self.weights_sha256(model) or "")
        with self._whisper_lock:
            if key not in self._whisper_models:
                whisper = self.load_whisper(model, device)
                if prepare is not None:
                    prepare(whisper)
                self._whisper_models[key] = whisper
            return self._whisper_models[key]

    def load_whisper(self, model: str, device: str):
        """An openai-whisper model from its spec's `<name>.pt` (sha256 checked), or a local checkpoint.

        Loaded from the file path, then given the named model's alignment heads - what
        `whisper.load_model("medium.en")` (the MTR public code's call) does, minus the
        download: nothing here ever reaches the network.
        """
        import whisper

        weights = self.resolve(model)
        path = weights.folder / f"{Path(model).name}.pt" if weights.spec_id is not None else Path(model).expanduser()
        if weights.spec_id is not None and not path.is_file():
            path = weights.folder  # a spec whose files are a transformers-format folder
        if path.is_dir():  # whisper-timestamped converts transformers-format Whisper weights
            import whisper_timestamped

            return whisper_timestamped.load_model(str(path), device=device)
        loaded = whisper.load_model(str(path), device=device)
        if model in getattr(whisper, "_ALIGNMENT_HEADS", {}):
            loaded.set_alignment_heads(whisper._ALIGNMENT_HEADS[model])
        return loaded
