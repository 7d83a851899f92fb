"""Issue 13, item 6: the 120 ms / 800 ms episode rules compare whole frames, exactly.

"Bursts under 120 ms don't count as speech; two bursts less than 800 ms apart become one
episode" (§3.4): a gap of exactly merge_gap never merges and a burst of exactly
min_speech counts, at every stream offset. With Silero's 32 ms frames, 128 ms (4 frames)
is the shortest speech and 768 ms (24 frames) the longest gap that merges.
"""

from __future__ import annotations

import pytest

from duplexeval.judges.vad import FRAME_S, EpisodeTracker


def run(tracker: EpisodeTracker, frames: list[tuple[int, int]]) -> list[tuple[float, float]]:
    for speech, n in frames:
        for _ in range(n):
            tracker.push_prob(0.9 if speech else 0.0)
    tracker.finish()
    return tracker.episodes()


@pytest.mark.parametrize("offset", [0, 1, 7, 31, 250, 3001])
def test_merge_gap_exactly_800_ms_never_merges(offset: int) -> None:
    # 10 ms frames: 80 frames = 800 ms exactly, wherever in the stream the gap falls.
    eps = run(EpisodeTracker(frame_s=0.01), [(0, offset), (1, 20), (0, 80), (1, 20)])
    assert len(eps) == 2


@pytest.mark.parametrize("offset", [0, 1, 7, 31, 250, 3001])
def test_merge_gap_of_790_ms_merges(offset: int) -> None:
    eps = run(EpisodeTracker(frame_s=0.01), [(0, offset), (1, 20), (0, 79), (1, 20)])
    assert len(eps) == 1


@pytest.mark.parametrize("offset", [0, 3, 333])
def test_min_speech_exactly_120_ms_counts_and_110_ms_does_not(offset: int) -> None:
    assert len(run(EpisodeTracker(frame_s=0.01), [(0, offset), (1, 12)])) == 1
    assert run(EpisodeTracker(frame_s=0.01), [(0, offset), (1, 11)]) == []


def test_silero_frames_represent_128_ms_as_the_shortest_speech_and_768_ms_as_the_longest_merging_gap() -> None:
    assert FRAME_S == 0.032
    assert run(EpisodeTracker(), [(1, 3)]) == []          # 96 ms: under 120 ms
    assert len(run(EpisodeTracker(), [(1, 4)])) == 1       # 128 ms
    assert len(run(EpisodeTracker(), [(1, 4), (0, 24), (1, 4)])) == 1   # 768 ms gap merges
    assert len(run(EpisodeTracker(), [(1, 4), (0, 25), (1, 4)])) == 2   # 800 ms gap never merges


def test_vad_hysteresis_is_a_parameter() -> None:
    # p = 0.3 ends a burst with hysteresis 0.15 (below 0.35) but not with 0.25 (above 0.25).
    short = run(EpisodeTracker(frame_s=0.01, hysteresis=0.15), [(1, 20)] + [(0, 0)])
    assert len(short) == 1
    t = EpisodeTracker(frame_s=0.01, hysteresis=0.25)
    for p in [0.9] * 20 + [0.3] * 20 + [0.0]:
        t.push_prob(p)
    t.finish()
    assert t.episodes() == [(0.0, 0.4)]
    t = EpisodeTracker(frame_s=0.01, hysteresis=0.15)
    for p in [0.9] * 20 + [0.3] * 20 + [0.0]:
        t.push_prob(p)
    t.finish()
    assert t.episodes() == [(0.0, 0.2)]
