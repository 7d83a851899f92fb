"""Helpers of the moshi-tiny tests: the shim module, a seeded signal, a frame loop.

The shim (images/moshi/shim.py) is not a package: it runs as a script in the repository
root or /opt/duplexeval, so tests load it from its path, exactly the file the image runs.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from functools import lru_cache
from types import ModuleType

import numpy as np

from duplexeval.specs.modelspec import REPO_ROOT

FRAME = 1920
RATE = 24000


@lru_cache(maxsize=1)
def shim_module() -> ModuleType:
    os.environ.setdefault("NO_TORCH_COMPILE", "1")  # as the spec's launch.env does for the server
    import torch

    torch.set_num_threads(1)  # what the shim's --tiny does: bitwise determinism needs a fixed thread count
    path = REPO_ROOT / "images" / "moshi" / "shim.py"
    spec = importlib.util.spec_from_file_location("moshi_shim_under_test", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def signal(n_frames: int, seed: int) -> list[np.ndarray]:
    """Seeded tone sweep + noise, cut into 1920-sample frames (varied, so Mimi's codes vary)."""
    rng = np.random.default_rng(seed)
    t = np.arange(n_frames * FRAME) / RATE
    f0 = 150 + 60 * rng.random()
    x = 0.3 * np.sin(2 * np.pi * f0 * t * (1 + t / 4)) + 0.05 * rng.standard_normal(len(t))
    return [x[i * FRAME:(i + 1) * FRAME].astype(np.float32) for i in range(n_frames)]


def run_frames(server, inputs: list[np.ndarray], start: int = 0, forced: dict[int, np.ndarray] | None = None):
    """Steps `server` over `inputs` from frame `start`; returns (audio frames, token tensors or None)."""
    outs, tokens = [], []
    for i, x in enumerate(inputs, start):
        outs.append(server.step(i, x, (forced or {}).get(i)))
        tokens.append(None if server.last_tokens is None else server.last_tokens.clone())
    return outs, tokens


def same_audio(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))
