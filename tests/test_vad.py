"""Silero VAD: the rate is never guessed, and the MPE episode rules (§3.4) hold."""

from __future__ import annotations

import numpy as np
import pytest

from duplexeval.audio import resample
from duplexeval.judges.vad import EpisodeTracker, StreamingVAD, detect_episodes, silero_session
from duplexeval.tts import synthesize

RATE = 16000


@pytest.fixture(scope="module", autouse=True)
def _tts_cache(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("DUPLEXEVAL_CACHE", str(tmp_path_factory.mktemp("cache")))
    yield
    mp.undo()


def trimmed(text: str, voice: str = "slt") -> np.ndarray:
    """flite speech without its leading/trailing silence, so inserted gaps are exact."""
    audio = synthesize(text, voice, RATE)
    loud = np.nonzero(np.abs(audio) > 0.01)[0]
    return audio[loud[0]:loud[-1] + 1]


def silence(seconds: float) -> np.ndarray:
    return np.zeros(int(round(seconds * RATE)), dtype=np.float32)


def two_utterances(gap_s: float) -> np.ndarray:
    return np.concatenate([silence(0.5), trimmed("Okay, the taco place sounds good to me."), silence(gap_s),
                           trimmed("Let us go there tonight."), silence(0.5)])


def frames(tracker: EpisodeTracker, pattern: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Feeds (probability, seconds) runs at the tracker's frame length."""
    for prob, seconds in pattern:
        for _ in range(int(round(seconds / tracker.frame_s))):
            tracker.push_prob(prob)
    tracker.finish()
    return tracker.episodes()


# -- the rate: 24 kHz input must not stretch timestamps (Full-Duplex-Bench bug) -------------

def test_24khz_audio_gives_the_same_timestamps_as_16khz():
    audio = np.concatenate([silence(1.0), trimmed("The taco place is nine dollars a head."), silence(1.0)])
    at_16k = detect_episodes(audio, RATE)
    at_24k = detect_episodes(resample(audio, RATE, 24000), 24000)
    assert len(at_16k) == len(at_24k) == 1
    (s16, e16), (s24, e24) = at_16k[0], at_24k[0]
    assert abs(s24 - s16) <= 0.033 and abs(e24 - e16) <= 0.033  # one 32 ms frame
    assert 0.95 <= s24 <= 1.15  # speech starts at 1.0 s, not 1.5 s (stretched) or 0.67 s
    speech_end = 1.0 + len(trimmed("The taco place is nine dollars a head.")) / RATE
    assert abs(e24 - speech_end) < 0.2


def test_offline_mode_is_told_the_rate_too():
    audio = np.concatenate([silence(1.0), trimmed("The taco place is nine dollars a head."), silence(1.0)])
    (s16, _), = detect_episodes(audio, RATE, mode="offline")
    (s24, _), = detect_episodes(resample(audio, RATE, 24000), 24000, mode="offline")
    assert abs(s24 - s16) <= 0.033 and 0.95 <= s24 <= 1.15


# -- the 120 ms / 800 ms rules, on hand-made frame sequences ---------------------------------

def test_a_burst_under_120_ms_is_not_speech():
    tracker = EpisodeTracker(frame_s=0.01)
    assert frames(tracker, [(0.0, 0.5), (0.9, 0.11), (0.0, 0.5)]) == []


def test_a_burst_of_130_ms_is_speech():
    tracker = EpisodeTracker(frame_s=0.01)
    assert frames(tracker, [(0.0, 0.5), (0.9, 0.13), (0.0, 0.5)]) == [(0.5, 0.63)]


def test_bursts_700_ms_apart_merge_into_one_episode():
    tracker = EpisodeTracker(frame_s=0.01)
    assert frames(tracker, [(0.9, 0.5), (0.0, 0.7), (0.9, 0.5)]) == [(0.0, 1.7)]


def test_bursts_900_ms_apart_stay_two_episodes():
    tracker = EpisodeTracker(frame_s=0.01)
    assert frames(tracker, [(0.9, 0.5), (0.0, 0.9), (0.9, 0.5)]) == [(0.0, 0.5), (1.4, 1.9)]


def test_short_bursts_are_dropped_before_merging():
    """§3.4 order: two 100 ms clicks 300 ms apart are no speech (merge-first would say 500 ms)."""
    tracker = EpisodeTracker(frame_s=0.01)
    assert frames(tracker, [(0.9, 0.1), (0.0, 0.3), (0.9, 0.1), (0.0, 1.0)]) == []
    # and a dropped click cannot bridge two episodes 1.05 s apart
    tracker = EpisodeTracker(frame_s=0.01)
    eps = frames(tracker, [(0.9, 0.5), (0.0, 0.5), (0.9, 0.05), (0.0, 0.5), (0.9, 0.5)])
    assert len(eps) == 2


def test_hysteresis_keeps_a_burst_through_a_dip_above_the_lower_threshold():
    tracker = EpisodeTracker(frame_s=0.01)  # threshold 0.5, lower threshold 0.35
    assert frames(tracker, [(0.9, 0.2), (0.4, 0.1), (0.9, 0.2), (0.0, 1.0)]) == [(0.0, 0.5)]


# -- the same rules on real flite speech ------------------------------------------------------

def test_flite_utterances_700_ms_apart_are_one_episode():
    assert len(detect_episodes(two_utterances(0.7), RATE)) == 1


def test_flite_utterances_1000_ms_apart_are_two_episodes():
    # 1.0 s rather than 0.9 s: Silero's offset lags ~70 ms, so a 0.9 s pause measures
    # ~0.83 s, one frame from the rule; the exact boundary is tested on frames above.
    episodes = detect_episodes(two_utterances(1.0), RATE)
    assert len(episodes) == 2
    assert 0.85 <= episodes[1][0] - episodes[0][1] <= 1.05


# -- streaming ------------------------------------------------------------------------------

def test_streaming_in_odd_chunks_matches_detect_episodes_and_tracks_silence():
    audio = two_utterances(1.0)
    vad = StreamingVAD()
    saw_speaking = False
    for i in range(0, len(audio), 777):
        vad.push(audio[i:i + 777])
        saw_speaking |= vad.speaking
        if vad.speaking:
            assert vad.silence_s == 0.0
    assert saw_speaking and not vad.speaking
    tail = vad.silence_s
    assert 0.3 <= tail <= 0.6  # 0.5 s of trailing silence, minus Silero's offset lag
    vad.push(silence(2.0))
    assert abs(vad.silence_s - (tail + 2.0)) < 0.04
    vad.flush()
    assert vad.episodes() == detect_episodes(np.concatenate([audio, silence(2.0)]), RATE)


def test_a_silent_stream_never_speaks():
    vad = StreamingVAD()
    vad.push(silence(1.0))
    assert not vad.speaking and vad.silence_s == pytest.approx(1.0, abs=0.04) and vad.episodes() == []


def test_the_model_is_loaded_once_per_process():
    assert silero_session() is silero_session()


def test_unknown_mode_and_stereo_are_refused():
    with pytest.raises(ValueError, match="mode"):
        detect_episodes(silence(0.1), RATE, mode="lookahead")
    with pytest.raises(ValueError, match="mono"):
        detect_episodes(np.zeros((100, 2), dtype=np.float32), RATE)
