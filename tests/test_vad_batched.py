"""Silero over many streams at once (duplexeval/judges/vad_batch.py, `batch_speech_probabilities`):
the very probabilities, episodes and cache entries of one stream at a time, the trajectory
memo consulted and filled as one stream at a time does.

The scorer's batched path end to end (a job's real recordings scored batched and one at a
time, byte-identical records) is tests/test_embedded_e2e.py's
`test_batched_vad_scoring_gives_the_records_of_one_at_a_time`.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest

from duplexeval.judges import vad, vad_batch, vad_cache

W = vad.WINDOW
RULES = {"threshold": 0.5, "min_speech_ms": 120.0, "merge_gap_ms": 800.0, "hysteresis": 0.15}


@pytest.fixture()
def memo(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """An empty memo table and no remembered live streams; returns the hit/miss counters."""
    monkeypatch.setattr(vad, "_trajectory", OrderedDict())
    monkeypatch.setattr(vad, "_recent", OrderedDict())
    stats = {"hits": 0, "misses": 0}
    monkeypatch.setattr(vad, "trajectory_stats", stats)
    return stats


_SAYINGS = ("The store opens at nine.", "Nine dollars, please.", "Let me check that for you.",
            "Okay.", "It is on the left, next to the bakery.", "Thanks.", "Sure.", "One moment please.", "Yes.")


def _speech(seconds: float, seed: int) -> np.ndarray:
    """Real speech (flite, duplexeval.tts), cut or padded to `seconds`."""
    from duplexeval.tts import synthesize

    clip = synthesize(_SAYINGS[seed % len(_SAYINGS)], "kal16", vad.VAD_RATE)
    n = int(seconds * vad.VAD_RATE)
    return np.concatenate([clip, np.zeros(max(n - len(clip), 0), np.float32)])[:n].astype(np.float32)


def _streams() -> list[np.ndarray]:
    """Different lengths (a part window at the end), silence, speech after a shared silent
    prefix, noise: rows that end early and rows that share a history."""
    zeros = np.zeros(20 * W, dtype=np.float32)
    noise = (np.random.default_rng(0).standard_normal(int(1.3 * vad.VAD_RATE)) * 0.05).astype(np.float32)
    return [_speech(1.6, 1), np.zeros(3 * W + 100, dtype=np.float32), np.concatenate([zeros, _speech(1.9, 2)]),
            np.concatenate([zeros, _speech(1.5, 3)]), noise, _speech(0.05, 4), np.zeros(0, dtype=np.float32)]


@pytest.mark.parametrize("memo_windows", [0, vad.TRAJECTORY_WINDOWS])
def test_batched_probabilities_are_bit_identical_to_one_stream_at_a_time(memo, monkeypatch, memo_windows):
    monkeypatch.setattr(vad, "TRAJECTORY_WINDOWS", memo_windows)
    streams = _streams()
    together = vad_batch.batch_speech_probabilities(streams)
    monkeypatch.setattr(vad, "_trajectory", OrderedDict())
    monkeypatch.setattr(vad, "TRAJECTORY_WINDOWS", 0)
    alone = [vad.speech_probabilities(a) for a in streams]
    assert [len(p) for p in together] == [-(-len(a) // W) for a in streams]
    for a, b in zip(alone, together):
        assert a.dtype == b.dtype == np.float32 and a.tobytes() == b.tobytes()
    assert any(len(p) and p.max() >= 0.5 for p in alone) and any(len(p) and p.max() < 0.5 for p in alone)


def test_the_memo_counts_and_fills_as_one_stream_at_a_time_does(memo, monkeypatch):
    streams = _streams()
    vad_batch.batch_speech_probabilities(streams)
    batched = dict(memo), list(vad._trajectory)
    monkeypatch.setattr(vad, "_trajectory", OrderedDict())
    memo.update(hits=0, misses=0)
    for a in streams:
        vad.speech_probabilities(a)
    assert batched[0] == memo and memo["hits"] >= 20  # the shared silent prefix: computed once
    assert sorted(batched[1]) == sorted(vad._trajectory)  # the same histories, each with its one entry


def test_a_memo_entry_from_one_stream_at_a_time_serves_the_batch(memo, monkeypatch):
    streams = _streams()
    alone = [vad.speech_probabilities(a) for a in streams]
    misses = memo["misses"]
    together = vad_batch.batch_speech_probabilities(streams)
    assert memo["misses"] == misses  # every window a hit
    assert all(a.tobytes() == b.tobytes() for a, b in zip(alone, together))


@pytest.mark.parametrize("mode", ["causal", "offline"])
def test_batched_episodes_are_those_of_detect_episodes(memo, monkeypatch, mode):
    monkeypatch.setattr(vad_batch, "BATCH_STREAMS", 3)  # several chunks
    streams = _streams()[:6]
    rate = 24000
    clips = [np.repeat(a, 3)[::2].copy() for a in streams]  # 24 kHz clips: the resampling path
    together = vad_batch.detect_episodes_batch(clips, rate, mode=mode, **RULES)
    alone = [vad.detect_episodes(c, rate, mode=mode, **RULES) for c in clips]
    assert together == alone and any(together)


def test_a_clip_a_live_stream_saw_replays_it_instead_of_running_silero(memo, monkeypatch):
    audio = _speech(1.0, 7)
    live = vad.StreamingVAD()
    live.push(audio)
    calls: list[int] = []
    real = vad_batch.batch_speech_probabilities
    monkeypatch.setattr(vad_batch, "batch_speech_probabilities", lambda s: calls.append(len(s)) or real(s))
    got = vad_batch.detect_episodes_batch([audio, _speech(0.8, 8)], vad.VAD_RATE, **RULES)
    assert calls == [1]  # only the clip no live stream saw
    assert got[0] == vad.detect_episodes(audio, vad.VAD_RATE, **RULES)


def test_batched_cache_entries_are_those_of_one_clip_at_a_time(memo, tmp_path: Path, monkeypatch):
    clips = _streams()[:4]
    kw = dict(mode="causal", scorer="mpe", **RULES)
    batched = vad_cache.cached_episodes_batch(clips, vad.VAD_RATE, cache_dir=tmp_path / "a", **kw)
    alone = [vad_cache.cached_episodes(c, vad.VAD_RATE, cache_dir=tmp_path / "b", **kw) for c in clips]
    assert batched == alone
    files = lambda root: {p.relative_to(root): p.read_bytes() for p in root.rglob("*.json")}  # noqa: E731
    assert files(tmp_path / "a") == files(tmp_path / "b") and len(files(tmp_path / "a")) == len(clips)
    monkeypatch.setattr(vad_batch, "detect_episodes_batch", lambda *a, **k: pytest.fail("a hit ran the VAD"))
    assert vad_cache.cached_episodes_batch(clips, vad.VAD_RATE, cache_dir=tmp_path / "b", **kw) == alone


def test_unknown_mode_is_refused_by_name():
    with pytest.raises(ValueError, match="unknown VAD mode 'fast'"):
        vad_batch.detect_episodes_batch([np.zeros(W, np.float32)], vad.VAD_RATE, mode="fast")  # type: ignore[arg-type]
