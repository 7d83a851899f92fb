"""Whisper's window memo (duplexeval/judges/asr_backends/whisper_windows.py): a window whose
features were seen before is not decoded again, and the words are those computed from scratch.
The real faster-whisper tiny.en on the babbler's real loop (flite speech)."""

from __future__ import annotations

import numpy as np
import pytest

from duplexeval.agents.babbler import BabblerAgent
from duplexeval.audio import resample
from duplexeval.judges.asr_backends import faster_whisper_backend, whisper_windows


@pytest.fixture
def fresh(monkeypatch):
    """A model loaded for this test alone, and the memo's counters at zero."""
    monkeypatch.setattr(faster_whisper_backend, "_models", {})
    monkeypatch.setattr(whisper_windows, "stats", {"hits": 0, "misses": 0})
    return whisper_windows.stats


def _transcribe(clip: np.ndarray):
    backend = faster_whisper_backend.FasterWhisperBackend()
    return backend.transcribe(clip, "tiny.en", "en", backend.effective_options({"beam_size": 1}))


def test_a_window_seen_before_is_not_decoded_again_and_its_words_are_those_computed_afresh(fresh, monkeypatch):
    clip = resample(np.take(BabblerAgent().loop, np.arange(12 * 24000), mode="wrap"), 24000, 16000)
    first = _transcribe(clip)
    stats = whisper_windows.stats
    calls = stats["misses"]
    assert stats["hits"] == 0 and calls >= 2  # per window: the decoder, then the word alignment
    assert len(first.words) > 15
    again = _transcribe(clip)
    assert stats == {"hits": calls, "misses": calls} and again == first
    other = _transcribe(clip[: 8 * 16000])  # other features: decoded
    assert stats["misses"] > calls and other != first

    monkeypatch.setattr(whisper_windows, "WINDOW_CALLS", 0)
    monkeypatch.setattr(faster_whisper_backend, "_models", {})
    assert _transcribe(clip) == first  # no memo at all: the same words and times
    assert not isinstance(faster_whisper_backend._models["tiny.en"].model, whisper_windows.RememberedWhisper)
