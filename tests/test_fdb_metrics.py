"""Full-Duplex-Bench v1.0 rules pinned at their boundaries with hand-made timelines.

Each case sits on one side of a threshold of the authors' evaluation code (docs/fdb.md cites
the lines): the turn-over rule's 1 s span and 3 words, the latency anchor and its clamp, the
backchannel rule's 3 s / 1 s segments and 3 / 2 words, which words a VAD segment claims, the
0.2 s bins and the Jensen-Shannon form. scipy is the reference for the divergence and the
interpolation, as the authors call it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
from scipy.interpolate import interp1d
from scipy.spatial.distance import jensenshannon

from duplexeval.benchmarks.fdb import metrics as m


@dataclass(frozen=True)
class W:
    text: str
    start: float | None
    end: float | None


def words(*spans: tuple[float, float]) -> list[W]:
    return [W(f"w{i}", s, e) for i, (s, e) in enumerate(spans)]


RULE = m.TurnRule(min_span_s=1.0, max_short_words=3)
BC = m.BackchannelRule(long_segment_s=3.0, max_words=3, short_segment_s=1.0, max_short_words=2)


# -- turn-over (pause, smooth turn-taking, interruption) ---------------------------------------

def test_no_words_never_take_the_turn():
    assert m.takes_turn([], RULE) is False


def test_three_words_under_one_second_do_not_take_the_turn_four_do():
    assert m.takes_turn(words((0.0, 0.3), (0.3, 0.6), (0.6, 0.99)), RULE) is False
    assert m.takes_turn(words((0.0, 0.2), (0.2, 0.4), (0.4, 0.6), (0.6, 0.99)), RULE) is True


def test_a_span_of_exactly_one_second_takes_the_turn_with_one_word():
    assert m.takes_turn(words((2.0, 3.0)), RULE) is True
    assert m.takes_turn(words((2.0, 2.999)), RULE) is False


def test_the_span_runs_from_the_first_start_to_the_last_end_not_the_sum_of_words():
    # two short words far apart span 4 s: a turn, though only 0.2 s is speech
    ws = words((1.0, 1.1), (4.9, 5.0))
    assert m.words_span(ws) == pytest.approx(4.0)
    assert m.takes_turn(ws, RULE) is True


def test_a_last_word_without_an_end_spans_to_its_start():
    assert m.words_span([W("a", 1.0, 1.2), W("b", 1.5, None)]) == pytest.approx(0.5)


def test_latency_is_measured_from_the_anchor_and_clamped_at_zero():
    ws = words((2.3, 2.6))
    assert m.latency(ws, 2.0) == pytest.approx(0.3)
    early = words((1.8, 2.6))
    assert m.latency(early, 2.0) == 0.0
    assert m.latency(early, 2.0, "signed") == pytest.approx(-0.2)
    assert m.latency(words((2.0, 2.5)), 2.0) == 0.0


def test_latency_anchors_are_the_turn_taking_start_and_the_interruptions_end():
    from duplexeval.benchmarks.fdb.score import anchor_s

    assert anchor_s("smooth-turn-taking", [{"text": "[TURN-TAKING]", "timestamp": [2.01, 2.4]}]) == 2.01
    assert anchor_s("user-interruption", [{"context": "c", "interrupt": "i", "timestamp": [10.53, 13.14]}]) == 13.14
    assert anchor_s("pause", [{"text": "[PAUSE]", "timestamp": [3.3, 4.0]}]) == 0.0


def test_latency_without_words_is_refused():
    with pytest.raises(ValueError, match="at least one word"):
        m.latency([], 1.0)


# -- which words a VAD segment claims -----------------------------------------------------------

def test_a_word_touching_the_segment_end_from_the_right_counts_one_touching_its_start_does_not():
    seg = (1.0, 2.0)
    assert [w.text for w in m.words_overlapping([W("after", 2.0, 2.3)], *seg)] == ["after"]
    assert m.words_overlapping([W("before", 0.7, 1.0)], *seg) == []


def test_inside_spanning_and_straddling_words_count_disjoint_ones_do_not():
    seg = (1.0, 2.0)
    ws = [W("inside", 1.2, 1.5), W("spans", 0.5, 2.5), W("over-start", 0.8, 1.1), W("over-end", 1.9, 2.2),
          W("later", 2.01, 2.4), W("earlier", 0.1, 0.9)]
    assert [w.text for w in m.words_overlapping(ws, *seg)] == ["inside", "spans", "over-start", "over-end"]


def test_words_without_times_follow_the_authors_skips():
    seg = (1.0, 2.0)
    assert m.words_overlapping([W("no-start", None, 1.5)], *seg) == []
    assert m.words_overlapping([W("no-end-early", 1.5, None)], *seg) == []
    assert [w.text for w in m.words_overlapping([W("no-end-at-end", 2.0, None)], *seg)] == ["no-end-at-end"]


# -- backchannel ----------------------------------------------------------------------------------

def test_a_short_segment_with_two_words_is_a_backchannel_three_take_the_turn():
    assert m.segment_takes_turn(0.99, 2, BC) is False
    assert m.segment_takes_turn(0.99, 3, BC) is True
    assert m.segment_takes_turn(0.5, 4, BC) is True


def test_a_segment_of_one_second_or_more_takes_the_turn_even_silent_of_words():
    assert m.segment_takes_turn(1.0, 0, BC) is True
    assert m.segment_takes_turn(0.999, 0, BC) is False


def test_a_segment_over_three_seconds_ends_the_examination_and_is_not_a_backchannel():
    segs = [(0.5, 0.9), (2.0, 5.01), (6.0, 6.3)]
    o = m.backchannel_outcome(segs, [], BC)
    assert o.took_turn is True
    assert o.backchannels == [(0.5, 0.9)]          # the segment after the long one is never counted
    assert [d["long"] for d in o.decisions] == [False, True]


def test_a_segment_of_exactly_three_seconds_is_short_and_takes_the_turn_by_the_one_second_rule():
    o = m.backchannel_outcome([(1.0, 4.0)], [], BC)
    assert o.took_turn is True and o.backchannels == [(1.0, 4.0)]


def test_the_last_short_segment_decides_under_the_authors_reading():
    segs = [(0.0, 2.0), (3.0, 3.4)]                 # first takes the turn (>= 1 s), last does not
    assert m.backchannel_outcome(segs, [], BC, "last-segment").took_turn is False
    assert m.backchannel_outcome(segs, [], BC, "any-segment").took_turn is True
    assert m.backchannel_outcome(segs, [], BC).backchannels == segs   # both counted either way


def test_words_decide_a_short_segment():
    segs = [(1.0, 1.5)]
    three = [W("a", 1.0, 1.1), W("b", 1.1, 1.2), W("c", 1.2, 1.5)]
    assert m.backchannel_outcome(segs, three, BC).took_turn is True
    assert m.backchannel_outcome(segs, three[:2], BC).took_turn is False


def test_unknown_readings_are_refused():
    with pytest.raises(ValueError, match="last-segment"):
        m.backchannel_outcome([], [], BC, "first-segment")
    with pytest.raises(ValueError, match="clamp-zero"):
        m.latency(words((1.0, 2.0)), 0.0, "abs")


def test_frequency_divides_by_the_whole_output():
    assert m.backchannel_frequency([(1.0, 1.2), (5.0, 5.3)], 10.0) == pytest.approx(0.2)
    assert m.backchannel_frequency([], 10.0) == 0.0
    with pytest.raises(ValueError):
        m.backchannel_frequency([], 0.0)


def test_histogram_bins_cover_start_to_end_bin_inclusive_with_one_past_the_duration():
    hist = m.backchannel_histogram([(0.25, 0.45)], 1.0, 0.2, 0.0)
    assert len(hist) == 6                            # int(1.0 / 0.2) + 1
    assert list(np.round(hist, 6)) == [0.0, 0.5, 0.5, 0.0, 0.0, 0.0]   # bins 1 and 2 (0.45 / 0.2 = 2.25)
    tail = m.backchannel_histogram([(0.9, 1.3)], 1.0, 0.2, 0.0)   # bins past the last are dropped
    assert list(np.round(tail, 6)) == [0.0, 0.0, 0.0, 0.0, 0.5, 0.5]


def test_epsilon_keeps_empty_bins_above_zero():
    hist = m.backchannel_histogram([(0.0, 0.1)], 1.0, 0.2, 1e-10)
    assert hist.min() > 0 and hist.sum() == pytest.approx(1.0)


def test_reference_is_stretched_by_linear_interpolation_as_scipy_does():
    ref = [0.1, 0.4, 0.2, 0.3]
    ours = m.resize_reference(ref, 7)
    theirs = interp1d(np.linspace(0, 1, 4), ref, kind="linear", fill_value="extrapolate")(np.linspace(0, 1, 7))
    assert np.allclose(ours, theirs)


def test_jensen_shannon_distance_is_scipys_and_the_divergence_its_square():
    rng = np.random.default_rng(0)
    for _ in range(5):
        p, q = rng.random(9), rng.random(9)
        p[2] = 0.0
        assert m.jensen_shannon(p, q, "distance") == pytest.approx(float(jensenshannon(p, q)))
        assert m.jensen_shannon(p, q, "divergence") == pytest.approx(float(jensenshannon(p, q)) ** 2)
    assert m.jensen_shannon([1, 0], [0, 1]) == pytest.approx(math.sqrt(math.log(2)))
    assert m.jensen_shannon([1, 2, 3], [2, 4, 6]) == pytest.approx(0.0, abs=1e-7)


def test_no_backchannel_scores_the_fixed_value_whatever_the_reference():
    assert m.backchannel_jsd([], 10.0, [0.2, 0.8], bin_s=0.2, epsilon=1e-10, none_value=1.0, form="distance") == 1.0


def test_a_backchannel_where_the_reference_puts_all_its_mass_scores_near_zero():
    ref = list(m.backchannel_histogram([(1.0, 1.3)], 2.0, 0.2, 1e-10))
    same = m.backchannel_jsd([(1.0, 1.3)], 2.0, ref, bin_s=0.2, epsilon=1e-10, none_value=1.0, form="distance")
    elsewhere = m.backchannel_jsd([(0.0, 0.3)], 2.0, ref, bin_s=0.2, epsilon=1e-10, none_value=1.0, form="distance")
    assert same < 1e-3 and elsewhere > 0.8
