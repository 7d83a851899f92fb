"""The content cache of the Duplex-MPE scorer's VAD episodes (benchmarks.mpe.score.model_episodes).

Re-scoring a run (every resume re-scores) must read back exactly the episodes the real
causal Silero VAD gives, and never the episodes of other audio or other rules.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from duplexeval.benchmarks.mpe import score as mpe_score
from duplexeval.judges import vad as vad_module, vad_cache
from duplexeval.tts import synthesize

RATE = 16000
VAD = {"mode": "causal", "threshold": 0.5, "min_speech_ms": 120, "merge_gap_ms": 800, "hysteresis": 0.15}


@pytest.fixture(scope="module")
def channel() -> np.ndarray:
    """Two utterances with 2 s of silence between them: two episodes."""
    one = synthesize("Nine dollars, please.", "kal16", RATE)
    two = synthesize("Okay, thank you.", "kal16", RATE)
    gap = np.zeros(2 * RATE, dtype=np.float32)
    return np.concatenate([gap[: RATE // 2], one, gap, two, gap[: RATE // 2]]).astype(np.float32)


def _direct(audio: np.ndarray, vad: dict) -> list[tuple[float, float]]:
    return [(float(s), float(e)) for s, e in vad_module.detect_episodes(
        audio, RATE, threshold=vad["threshold"], min_speech_ms=vad["min_speech_ms"], merge_gap_ms=vad["merge_gap_ms"],
        mode=vad["mode"], hysteresis=vad["hysteresis"])]


@pytest.fixture()
def vad_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts real VAD passes (model_episodes imports detect_episodes at call time)."""
    calls: list[int] = []
    real = vad_module.detect_episodes

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(vad_module, "detect_episodes", counted)
    return calls


def test_a_hit_gives_the_episodes_the_vad_gives(channel: np.ndarray, tmp_path: Path, vad_calls: list[int]) -> None:
    expected = _direct(channel, VAD)
    assert len(expected) == 2
    first = mpe_score.model_episodes(channel, RATE, VAD, cache_dir=tmp_path)
    second = mpe_score.model_episodes(channel.copy(), RATE, VAD, cache_dir=tmp_path)
    assert first == second == expected
    assert all(type(x) is float for ep in second for x in ep)
    assert len(vad_calls) == 2  # the direct pass and the first model_episodes; the second was a hit


def test_one_changed_sample_misses(channel: np.ndarray, tmp_path: Path, vad_calls: list[int]) -> None:
    mpe_score.model_episodes(channel, RATE, VAD, cache_dir=tmp_path)
    changed = channel.copy()
    changed[len(changed) // 3] += 1.0 / 32768
    mpe_score.model_episodes(changed, RATE, VAD, cache_dir=tmp_path)
    assert len(vad_calls) == 2


def test_changed_rules_miss_and_give_their_own_episodes(channel: np.ndarray, tmp_path: Path, vad_calls: list[int]) -> None:
    base = mpe_score.model_episodes(channel, RATE, VAD, cache_dir=tmp_path)
    # A merge gap over the 2 s pause joins the two utterances into one episode.
    merged_rules = {**VAD, "merge_gap_ms": 3000}
    merged = mpe_score.model_episodes(channel, RATE, merged_rules, cache_dir=tmp_path)
    assert len(vad_calls) == 2
    assert len(base) == 2 and len(merged) == 1
    assert merged == _direct(channel, merged_rules)


def test_a_corrupt_entry_is_recomputed(channel: np.ndarray, tmp_path: Path, vad_calls: list[int]) -> None:
    expected = mpe_score.model_episodes(channel, RATE, VAD, cache_dir=tmp_path)
    (entry,) = tmp_path.rglob("*.json")
    data = json.loads(entry.read_text())
    data["episodes"] = [[0.0, 99.0]]
    data["components"]["rate"] = 8000  # the key no longer matches its components
    entry.write_text(json.dumps(data))
    assert mpe_score.model_episodes(channel, RATE, VAD, cache_dir=tmp_path) == expected
    assert len(vad_calls) == 2


def test_cache_off_writes_nothing(channel: np.ndarray, tmp_path: Path) -> None:
    mpe_score.model_episodes(channel, RATE, VAD, cache=False, cache_dir=tmp_path)
    assert not list(tmp_path.rglob("*.json"))


def test_mtr_segmentation_reads_its_offline_episodes_back_under_its_own_key(channel, tmp_path, vad_calls) -> None:
    """MTR's plan is rebuilt by every worker process: its offline pass (and torch import) runs once."""
    rules = dict(threshold=0.5, min_speech_ms=250.0, merge_gap_ms=500.0, hysteresis=0.15)
    expected = vad_module.detect_episodes(channel, RATE, mode="offline", **rules)
    runs = [vad_cache.cached_episodes(channel, RATE, mode="offline", scorer="mtr-segmentation", cache_dir=tmp_path,
                                       **rules) for _ in range(2)]
    assert runs == [expected, expected] and len(vad_calls) == 2  # the direct pass and the first call
    causal = vad_cache.cached_episodes(channel, RATE, mode="causal", scorer="mtr-segmentation", cache_dir=tmp_path,
                                        **rules)
    assert len(vad_calls) == 3 and causal == vad_module.detect_episodes(channel, RATE, mode="causal", **rules)
    assert len(list(tmp_path.rglob("*.json"))) == 2  # the mode is part of the key
