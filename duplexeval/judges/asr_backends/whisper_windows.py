"""Whisper's per-window work, remembered by the window's exact features.

Why: faster-whisper reads a long clip as 30 s windows, and with
`condition_on_previous_text` off (docs/judges.md: it must be) what the model returns for a window
(the decoded tokens, their scores, the word alignment) depends on the window's log-Mel
features and the call's arguments alone. Clips that share their opening audio share their
opening windows: the babbler plays the same loop from frame 0 in every conversation, so
each of its Duplex-MPE episodes (one per conversation, 2-3 minutes long) is the same audio
until the conversation ends, and with features computed column by column in a fixed order
(whisper_features) the windows of that shared audio are byte-identical, bar the one where
the clip ends (with faster-whisper's own batched Mel product only the first two were: a
column's last bits depended on the clip's length, docs/judges.md). The clip-level ASR cache
(duplexeval/judges/asr.py) cannot see that (the clips differ); this memo does.

How: the WhisperModel's `encode` returns a lazy window (the features' sha256, the
features) instead of running the encoder; `generate` and `align` look their call up by
(window sha256, arguments) and run the encoder, once per window, only on a miss. A hit
returns the objects the same call returned before, and CTranslate2 is deterministic for
one input in one process (the clip cache already relies on it), so the words cannot
change; only results are kept (a few hundred bytes a window), never encoder outputs.
`bench/bench_asr_windows.py` measures it side by side with the memo off.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Any

import numpy as np

# Calls remembered per process (LRU); 0 turns the memo off.
WINDOW_CALLS = 4096
stats = {"hits": 0, "misses": 0}


class Window:
    """One 30 s window of features; the encoder runs on it only when a call misses."""

    __slots__ = ("key", "_features", "_output", "_model")

    def __init__(self, features: np.ndarray, model: Any):
        feats = np.ascontiguousarray(features, dtype=np.float32)
        self.key = hashlib.sha256(repr(feats.shape).encode() + feats.tobytes()).hexdigest()
        self._features, self._output, self._model = feats, None, model

    def output(self) -> Any:
        if self._output is None:
            from faster_whisper.transcribe import get_ctranslate2_storage

            feats = self._features if self._features.ndim == 3 else self._features[None]
            self._output = self._model.encode(get_ctranslate2_storage(feats), to_cpu=False)
        return self._output


class RememberedWhisper:
    """Stands for a `ctranslate2.models.Whisper` inside one WhisperModel (see module docstring);
    made by remember_windows only when at least one call is to be kept."""

    def __init__(self, model: Any, calls: int):
        self._model = model
        self._calls = calls
        self._memo: OrderedDict[tuple, Any] = OrderedDict()
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:  # device, is_multilingual, n_mels, ...
        return getattr(self._model, name)

    def _remembered(self, window: Window, kind: str, args: tuple, kwargs: dict, run) -> Any:
        key = (window.key, kind, repr(args), repr(sorted(kwargs.items())))
        with self._lock:
            hit = self._memo.get(key)
            if hit is not None:
                self._memo.move_to_end(key)
                stats["hits"] += 1
                return list(hit)
        out = run(window.output(), *args, **kwargs)
        with self._lock:
            stats["misses"] += 1
            self._memo[key] = list(out)
            while len(self._memo) > self._calls:
                self._memo.popitem(last=False)
        return out

    def generate(self, window: Window, *args: Any, **kwargs: Any) -> Any:
        return self._remembered(window, "generate", args, kwargs, self._model.generate)

    def align(self, window: Window, *args: Any, **kwargs: Any) -> Any:
        return self._remembered(window, "align", args, kwargs, self._model.align)

    def detect_language(self, window: Window, *args: Any, **kwargs: Any) -> Any:
        return self._model.detect_language(window.output(), *args, **kwargs)


def remember_windows(whisper: Any, calls: int | None = None) -> Any:
    """`whisper` (a faster_whisper.WhisperModel) with its per-window calls remembered
    (`calls`, default WINDOW_CALLS, at most); as is when that is 0."""
    calls = WINDOW_CALLS if calls is None else calls
    if not calls:
        return whisper
    model = whisper.model
    whisper.model = RememberedWhisper(model, calls)
    whisper.encode = lambda features: Window(features, model)
    return whisper
