"""Each Duplex-MPE scoring rule pinned on hand-made timelines (paper 004, §3.4-§3.5, App. A3-A4)."""

import pytest
from mpe_helpers import SPEC, episodes_from_bursts

from duplexeval.benchmarks.mpe import metrics as mpe

P = SPEC["metrics"]
T_END = 10.0


# -- Start --------------------------------------------------------------------------------

def test_onset_at_4_9_s_after_t_end_is_a_fresh_start():
    out = mpe.start_outcome(T_END, [(T_END + 4.9, T_END + 6.0)], P)
    assert out.outcome == "fresh" and out.passed
    assert out.times["latency_s"] == pytest.approx(4.9)


def test_onset_at_5_1_s_after_t_end_is_a_miss():
    out = mpe.start_outcome(T_END, [(T_END + 5.1, T_END + 6.0)], P)
    assert out.outcome == "miss" and out.passed is False


def test_already_speaking_at_t_end_is_not_a_start_but_counts_as_presence():
    out = mpe.start_outcome(T_END, [(T_END - 3.0, T_END + 2.0)], P)
    assert out.outcome == "already_speaking" and out.passed is False
    assert out.outcome in mpe.PRESENCE_OUTCOMES


def test_speech_that_ended_before_t_ended_does_not_block_a_fresh_start():
    out = mpe.start_outcome(T_END, [(T_END - 3.0, T_END - 1.0), (T_END + 0.4, T_END + 2.0)], P)
    assert out.outcome == "fresh"


def test_start_window_comes_from_the_spec():
    params = {**P, "start": {"window_s": 6.0}}
    assert mpe.start_outcome(T_END, [(T_END + 5.1, T_END + 6.0)], params).outcome == "fresh"


# -- VAD episode rules as they reach the metrics --------------------------------------------

def test_a_110_ms_burst_is_not_speech():
    episodes = episodes_from_bursts([(T_END + 1.0, T_END + 1.11)], total_s=T_END + 6)
    assert episodes == []
    assert mpe.start_outcome(T_END, episodes, P).outcome == "miss"


def test_a_130_ms_burst_is_speech():
    episodes = episodes_from_bursts([(T_END + 1.0, T_END + 1.13)], total_s=T_END + 6)
    assert len(episodes) == 1
    assert mpe.start_outcome(T_END, episodes, P).outcome == "fresh"


def test_bursts_700_ms_apart_merge_into_one_episode_across_t_end():
    # A pause of 700 ms around T's end is one episode: Aria never stopped talking.
    bursts = [(T_END - 2.0, T_END - 0.3), (T_END + 0.4, T_END + 1.5)]
    episodes = episodes_from_bursts(bursts, total_s=T_END + 6)
    assert len(episodes) == 1
    assert mpe.start_outcome(T_END, episodes, P).outcome == "already_speaking"


def test_bursts_900_ms_apart_stay_two_episodes_and_the_second_is_fresh():
    bursts = [(T_END - 2.0, T_END - 0.3), (T_END + 0.6, T_END + 1.5)]
    episodes = episodes_from_bursts(bursts, total_s=T_END + 6)
    assert len(episodes) == 2
    out = mpe.start_outcome(T_END, episodes, P)
    assert out.outcome == "fresh" and out.times["onset"] == pytest.approx(T_END + 0.6, abs=0.02)


# -- Shush --------------------------------------------------------------------------------

def test_shush_window_runs_from_turn_start_to_next_turn_start():
    assert mpe.shush_window(3.0, 5.0, 5.5, 60.0, P) == (3.0, 5.5)
    assert mpe.shush_window(3.0, 5.0, None, 7.0, P) == (3.0, 7.0)
    assert mpe.shush_window(3.0, 5.0, 5.5, 60.0, {**P, "shush": {**P["shush"], "window": "turn"}}) == (3.0, 5.0)


def test_silent_window_passes_without_a_transcript():
    out = mpe.shush_window_outcome([], None, None, False, P)
    assert out.passed and out.outcome == "silent"
    assert not mpe.needs_judge([], None, P)


def test_speech_with_empty_transcript_fails_shush_before_any_judge():
    speech = [(1.0, 2.0)]
    assert not mpe.needs_judge(speech, "", P)
    out = mpe.shush_window_outcome(speech, "", None, False, P)
    assert out.passed is False and out.outcome == "unreadable_speech"


def test_content_fails_shush_and_a_backchannel_passes():
    speech = [(1.0, 1.5)]
    assert mpe.shush_window_outcome(speech, "Nine dollars.", "content", True, P).passed is False
    assert mpe.shush_window_outcome(speech, "Okay.", "backchannel", True, P).passed is True
    assert mpe.shush_window_outcome(speech, "Okay.", None, False, P).passed is False  # unparseable


# -- Stop (App. A4.1) ---------------------------------------------------------------------
# N4Q 20.0-22.0, gap 3 s, N4R 25.0-27.0: deadline 27.0, window closes 27.5.
Q0, Q1, R0, R1 = 20.0, 22.0, 25.0, 27.0


def eligibility(episodes):
    return mpe.stop_eligibility(Q0, Q1, R0, episodes, P).outcome


def test_stop_excludes_aria_already_talking_when_n4q_starts():
    assert eligibility([(19.0, 26.0)]) == "excluded_already_talking"


def test_stop_excludes_aria_talking_over_the_question():
    assert eligibility([(21.0, 26.0)]) == "excluded_talked_over_question"


def test_stop_excludes_no_onset_in_the_gap():
    assert eligibility([]) == "excluded_no_onset_in_gap"
    assert eligibility([(25.5, 26.0)]) == "excluded_no_onset_in_gap"


def test_stop_excludes_aria_finishing_before_n4r():
    assert eligibility([(22.5, 24.0)]) == "excluded_finished_early"


def test_stop_eligible_when_quiet_during_q_starts_in_gap_and_talks_into_n4r():
    assert eligibility([(22.5, 26.0)]) == "eligible"


def test_stop_passes_when_silent_by_the_deadline_and_until_the_window_closes():
    out = mpe.stop_outcome(R0, R1, [(22.5, 26.9)], P)
    assert out.passed and out.outcome == "yielded"


def test_stop_fails_when_still_talking_at_the_deadline():
    assert mpe.stop_outcome(R0, R1, [(22.5, 27.1)], P).passed is False


def test_stop_fails_when_aria_speaks_again_before_window_end_plus_tail():
    assert mpe.stop_outcome(R0, R1, [(22.5, 26.0), (27.3, 27.8)], P).passed is False
    assert mpe.stop_outcome(R0, R1, [(22.5, 26.0), (27.6, 28.0)], P).passed is True


def test_stop_is_not_reported_under_30_eligible_events_but_counts_are_shown():
    low = mpe.stop_result(20, 29, 40, P)
    assert low["value"] is None and low["reported"] is False
    assert (low["eligible"], low["n4_events"]) == (29, 40)
    assert low["yield_rate_all_n4"] == {"value": 0.5, "numerator": 20, "denominator": 40}
    high = mpe.stop_result(21, 30, 40, P)
    assert high["reported"] is True and high["value"] == pytest.approx(0.7)


def test_rates_without_denominator_are_none_not_zero():
    assert mpe.rate(0, 0) == {"value": None, "numerator": 0, "denominator": 0}
