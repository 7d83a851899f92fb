"""Silero's trajectory memo: a stream given exactly the windows another stream was given
continues from that stream's results, and only then (duplexeval/judges/vad.py).

Every silent conversation is one all-zero history, oracle and cascade share it until they
first speak, the babbler plays one loop from frame 0: the memo must give the very numbers
the model would, and must never hand one history's state to another.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict

import numpy as np
import pytest

from duplexeval.judges import vad

FRAME = 1280  # 80 ms at 16 kHz, as the MPE scheduler pushes a model's channel
W = vad.WINDOW


@pytest.fixture()
def memo(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """An empty memo table of the default size; returns the hit/miss counters (reset)."""
    monkeypatch.setattr(vad, "_trajectory", OrderedDict())
    stats = {"hits": 0, "misses": 0}
    monkeypatch.setattr(vad, "trajectory_stats", stats)
    return stats


def _probs(audio: np.ndarray) -> np.ndarray:
    stream = vad.StreamingVAD(remember=False)
    for i in range(0, len(audio), FRAME):
        stream.push(audio[i:i + FRAME])
    return np.asarray(stream._probs, dtype=np.float32)


def _without_memo(monkeypatch: pytest.MonkeyPatch, audio: np.ndarray) -> np.ndarray:
    with monkeypatch.context() as mp:
        mp.setattr(vad, "TRAJECTORY_WINDOWS", 0)
        return _probs(audio)


def _speech(seconds: float, seed: int) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(int(seconds * vad.VAD_RATE)) * 0.2).astype(np.float32)


def test_a_shared_silent_prefix_is_computed_once_and_gives_the_models_numbers(memo, monkeypatch):
    zeros = np.zeros(40 * W, dtype=np.float32)
    a = np.concatenate([zeros, _speech(1.0, 1)])
    b = np.concatenate([zeros, _speech(1.0, 2)])
    pa, pb = _probs(a), _probs(b)
    assert memo["hits"] == 40  # b's zero prefix, window for window
    assert np.array_equal(pa, _without_memo(monkeypatch, a))
    assert np.array_equal(pb, _without_memo(monkeypatch, b))
    assert not np.array_equal(pa[40:], pb[40:])


def test_the_same_stream_again_is_all_hits_and_bit_identical(memo, monkeypatch):
    audio = _speech(2.0, 3)
    first = _probs(audio)
    misses = memo["misses"]
    again = _probs(audio)
    assert memo["misses"] == misses and memo["hits"] == len(again) == len(audio) // W
    assert np.array_equal(first, again) and np.array_equal(first, _without_memo(monkeypatch, audio))


def test_equal_windows_after_a_different_history_are_not_reused(memo, monkeypatch):
    """B ends with A's windows, but one window of its past differs: its state differs, so
    none of those windows may come from A (the key is the whole history, not the window)."""
    tail = _speech(1.0, 4)
    a = np.concatenate([np.zeros(10 * W, dtype=np.float32), tail])
    b = a.copy()
    b[3 * W + 7] = 0.5  # one sample in window 3
    _probs(a)
    hits = memo["hits"]
    pb = _probs(b)
    assert memo["hits"] - hits == 3  # windows 0-2 only
    assert np.array_equal(pb, _without_memo(monkeypatch, b))


def test_the_table_is_bounded_and_forgets_the_least_recently_used(memo, monkeypatch):
    monkeypatch.setattr(vad, "TRAJECTORY_WINDOWS", 8)
    _probs(_speech(1.0, 5))  # 31 windows
    assert len(vad._trajectory) == 8


def test_an_adopted_snapshot_keeps_its_history_for_the_windows_after_it(memo, monkeypatch):
    """detect_episodes adopts a live stream's snapshot, then pads the last window; here that
    window is all zeros, like the first window of a silent stream the table already holds.
    Keyed by the adopted history it is a miss and gives the model's number; keyed from the
    start it would take the silent stream's."""
    _probs(np.zeros(4 * W, dtype=np.float32))
    audio = np.concatenate([_speech(0.7, 6), np.zeros(333, dtype=np.float32)])
    assert 0 < len(audio) % W < 333  # the part-window waiting at the end is zeros
    live = vad.StreamingVAD(remember=False)
    live.push(audio)
    snap = live._snapshot(len(audio), hashlib.sha256(audio.tobytes()).hexdigest())
    adopted = vad.StreamingVAD(remember=False)
    adopted._adopt(snap)
    adopted.flush()
    with monkeypatch.context() as mp:
        mp.setattr(vad, "TRAJECTORY_WINDOWS", 0)
        fresh = vad.StreamingVAD(remember=False)
        fresh.push(audio)
        fresh.flush()
    assert np.array_equal(np.asarray(adopted._probs), np.asarray(fresh._probs))
