"""Dialogue-feature rules on hand-made timelines, at their boundaries (DESIGN.md "reference rules")."""

from __future__ import annotations

import copy

import pytest
import yaml

from duplexeval.benchmarks.mtr.features import W, continuous_across, feature_outcome, speaks, speech_units
from duplexeval.benchmarks.mtr.format import Event, Round, Span
from duplexeval.specs import repo_root

AUTHORS = yaml.safe_load((repo_root() / "specs/benchmarks/_mtr-features-base.yaml").read_text())["metrics"]
# This module pins the corrected readings (the schema defaults, docs/mtr.md "Readings");
# tests/test_mtr_authors_readings.py pins the authors' readings the spec selects.
P = {**AUTHORS, "speaking": {**AUTHORS["speaking"], "counting": "pooled-midpoint"}, "pause_rule": "silent-then-respond",
     "background_rule": "continuous-from-start", "latency_mean": "successes"}


def words(*spans):
    return [W(f"w{i}", a, b) for i, (a, b) in enumerate(spans)]


def smooth_round(**kw):
    return Round(1, Span(0.0, 2.0, "question"), Span(2.5, 6.0, "reply"), kw.pop("feature", "smooth"), **kw)


def test_one_second_of_words_speaks_and_0_9_does_not():
    assert speaks(words((0.0, 0.5), (0.6, 1.1)), 0.0, 5.0, P)          # 2 words, 1.0 s
    assert not speaks(words((0.0, 0.45), (0.6, 1.05)), 0.0, 5.0, P)    # 2 words, 0.9 s


def test_four_words_speak_and_three_do_not():
    short = [(i * 0.5, i * 0.5 + 0.1) for i in range(4)]  # 0.1 s each: only the count can make it speech
    assert speaks(words(*short), 0.0, 5.0, P)
    assert not speaks(words(*short[:3]), 0.0, 5.0, P)


def test_words_belong_to_a_window_by_midpoint():
    w = words((1.8, 2.4))  # midpoint 2.1: after the turn's end at 2.0
    assert speaks(w + words((2.5, 3.0), (3.1, 3.6)), 2.0, 6.0, P)
    assert not speaks(w, 0.0, 2.0, P)


def test_smooth_success_and_latency_from_turn_end():
    out = feature_outcome(smooth_round(), words((2.4, 2.9), (3.0, 3.6)), 8.0, P)
    assert out["outcome"] == "success" and out["passed"] and out["latency_s"] == pytest.approx(0.4)


def test_no_response_is_its_own_outcome_without_latency():
    out = feature_outcome(smooth_round(), [], 8.0, P)
    assert out["outcome"] == "no_response" and out["latency_s"] is None and not out["passed"]


def test_speaking_during_the_user_turn_fails():
    out = feature_outcome(smooth_round(), words((0.5, 1.0), (1.1, 1.6), (2.4, 3.0), (3.1, 3.6)), 8.0, P)
    assert out["outcome"] == "spoke_during_turn" and not out["passed"]


def test_speech_begun_before_the_turn_end_is_already_speaking():
    w = words((2.1, 2.6), (2.7, 3.2))
    ok = feature_outcome(smooth_round(), w, 8.0, P, episodes=[(2.05, 3.2)])
    assert ok["outcome"] == "success" and ok["latency_s"] == pytest.approx(0.05)
    late = feature_outcome(smooth_round(), w, 8.0, P, episodes=[(1.4, 3.2)])  # began 0.6 s before the end
    assert late["outcome"] == "already_speaking" and late["latency_s"] == pytest.approx(-0.6)


def test_interruption_latency_counts_from_the_interruption_end():
    rnd = Round(2, Span(4.0, 6.0), None, "interruption", (Event("interruption", 4.0, 6.0),))
    p = {**P, "latency_from": "interruption-end"}
    out = feature_outcome(rnd, words((6.7, 7.2), (7.3, 7.9)), 10.0, p)
    assert out["passed"] and out["latency_s"] == pytest.approx(0.7) and out["anchor_s"] == 6.0


def pause_round():
    return Round(3, Span(0.0, 6.0), None, "pause", (Event("pause", 1.5, 3.5),))


def test_pause_window_ends_one_second_after_the_pause():
    # Pause [1.5, 3.5] -> window [1.5, 4.5]; the user's second part is short (turn ends 3.8),
    # so a quick reply's words land near the window's end.
    rnd = Round(3, Span(0.0, 3.8), None, "pause", (Event("pause", 1.5, 3.5),))
    tail = words((4.6, 5.1), (5.2, 5.7))
    four_inside = words((3.85, 3.95), (4.0, 4.1), (4.15, 4.25), (4.3, 4.4))  # last midpoint 4.35 < 4.5
    assert feature_outcome(rnd, four_inside + tail, 9.0, P)["outcome"] == "spoke_in_pause"
    last_outside = words((3.85, 3.95), (4.0, 4.1), (4.15, 4.25), (4.5, 4.6))  # last midpoint 4.55 >= 4.5
    assert feature_outcome(rnd, last_outside + tail, 9.0, P)["outcome"] == "success"


def test_pause_success_when_silent_through_the_pause_and_replying_after_the_turn():
    out = feature_outcome(pause_round(), words((6.3, 6.8), (6.9, 7.5)), 9.0, P)
    assert out["outcome"] == "success"


def test_taking_the_turn_in_the_pause_fails():
    rnd = Round(3, Span(0.0, 1.5), None, "pause", (Event("pause", 1.5, 3.5),))  # turn end = pause start
    out = feature_outcome(rnd, words((1.8, 2.4), (2.5, 3.1)), 9.0, P)
    assert out["outcome"] == "spoke_in_pause"


def test_word_gap_of_2_0_s_is_one_unit_and_2_1_s_is_two():
    assert speech_units(words((0.0, 1.0), (3.0, 4.0)), 2.0) == [(0.0, 4.0)]
    assert speech_units(words((0.0, 1.0), (3.1, 4.0)), 2.0) == [(0.0, 1.0), (3.1, 4.0)]


def background_round(kind="background"):
    return Round(4, Span(0.0, 2.0), Span(2.5, 8.0), kind, (Event(kind, 3.5, 5.0, "other voice"),))


@pytest.mark.parametrize("kind", ["background", "backchannel"])
def test_background_passes_when_one_unit_spans_it(kind):
    keep_talking = words((2.3, 3.0), (3.2, 4.0), (5.9, 6.5))  # gap 1.9 s across the event
    assert feature_outcome(background_round(kind), keep_talking, 9.0, P)["outcome"] == "success"
    stops = words((2.3, 3.0), (3.2, 3.6), (5.8, 6.5))  # gap 2.2 s: stopped at the event
    assert feature_outcome(background_round(kind), stops, 9.0, P)["outcome"] == f"stopped_at_{kind}"


def test_continuous_across_needs_the_unit_to_cover_the_event():
    assert continuous_across(words((3.0, 5.2)), 3.5, 5.0, 2.0)
    assert not continuous_across(words((3.6, 5.2)), 3.5, 5.0, 2.0)


def test_every_threshold_comes_from_the_spec():
    p = copy.deepcopy(P)
    p["speaking"]["min_words_exclusive"] = 1
    assert speaks(words((0.0, 0.1), (0.2, 0.3)), 0.0, 1.0, p)
    assert not speaks(words((0.0, 0.1), (0.2, 0.3)), 0.0, 1.0, P)
