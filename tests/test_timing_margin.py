"""The timing margin's shift (duplexeval/runs/timing_margin.py, issue 35 item 1): every
transcript's words and every VAD episode move by the shift, clamped to the audio, for any
scorer that asks, and everything is restored afterwards. The check on real runs is in
tests/test_mtr_e2e.py (and `make reproduce`, whose suite sets timing_margin_ms)."""

from __future__ import annotations

import numpy as np
import pytest

import duplexeval.judges.asr as asr_mod
import duplexeval.judges.vad_cache as vad_mod
from duplexeval.judges.transcript import Transcript, Word
from duplexeval.runs.timing_margin import SHIFTS, judge_cache_mode, shifted_timings


@pytest.fixture
def stand_ins(monkeypatch):
    """Stand-in ASR and VAD (fixed words and episodes), so the shift itself is what is tested."""
    words = [Word("hello", 0.02, 0.40), Word("there", 0.45, 0.98)]
    monkeypatch.setattr(asr_mod, "transcribe",
                        lambda audio, rate, asr=None, **kw: Transcript("hello there", list(words), "stand-in", "none"))
    monkeypatch.setattr(vad_mod, "cached_episodes", lambda audio, rate, **kw: [(0.01, 0.5), (0.96, 1.0)])
    return np.zeros(16000, dtype=np.float32)  # 1 s


def test_words_and_episodes_move_by_the_shift_clamped_to_the_audio(stand_ins):
    with shifted_timings(0.05, -0.05):
        # Looked up at call time, as every scorer does (a lazy import inside the function).
        from duplexeval.judges.asr import transcribe
        from duplexeval.judges.vad_cache import cached_episodes

        t = transcribe(stand_ins, 16000, {"backend": "faster-whisper"})
        eps = cached_episodes(stand_ins, 16000, threshold=0.5)
    assert [(w.start, w.end) for w in t.words] == [(0.07, 0.45), (0.5, 1.0)]  # the last word's end clamped to 1 s
    assert eps == [(0.0, 0.45), (0.91, 0.95)]                               # the first start clamped to 0
    assert t.text == "hello there"


def test_the_originals_are_back_afterwards_even_after_an_error(stand_ins):
    before = (asr_mod.transcribe, vad_mod.cached_episodes)
    with pytest.raises(RuntimeError), shifted_timings(0.05, 0.05):
        raise RuntimeError("a scorer failed")
    assert (asr_mod.transcribe, vad_mod.cached_episodes) == before
    assert [w.start for w in asr_mod.transcribe(stand_ins, 16000).words] == [0.02, 0.45]


def test_a_shifted_episode_still_cuts_its_asr_clip_where_the_vad_found_it(stand_ins):
    """Per-episode ASR cuts around the VAD's own edges (`asr_span`), so a re-score sends
    Whisper the run's clips (cached) and only the times move; an unshifted episode cuts around itself."""
    with shifted_timings(0.05, -0.05):
        eps = vad_mod.cached_episodes(stand_ins, 16000)
    assert [vad_mod.asr_span(e) for e in eps] == [(0.01, 0.5), (0.96, 1.0)]
    assert eps == [(0.0, 0.45), (0.91, 0.95)] and vad_mod.asr_span((0.2, 0.3)) == (0.2, 0.3)


def test_an_episode_pushed_past_the_end_is_dropped(stand_ins):
    with shifted_timings(0.0, 0.2):
        assert vad_mod.cached_episodes(stand_ins, 16000) == [(0.21, 0.7)]


def test_four_shifts_both_ways_and_apart():
    assert {(a, v) for _, a, v in SHIFTS} == {(1, 1), (-1, -1), (1, -1), (-1, 1)}


def test_offline_judges_are_asked_again_any_other_only_replayed():
    assert judge_cache_mode({"judges": {"segmentation": "mtr-segmentation-offline"}}) == "read"
    assert judge_cache_mode({"judges": {"segmentation": "mtr-segmentation-gpt4o"}}) == "replay"
    assert judge_cache_mode({"judges": {"answer": "no-such-judge"}}) == "replay"
    assert judge_cache_mode({}) == "read"
