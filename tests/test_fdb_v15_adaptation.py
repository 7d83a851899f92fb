"""Full-Duplex-Bench v1.5 before/after adaptation (v15_adaptation) and its paired tests (v15_stats), pinned with
hand-made word timelines and signals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from duplexeval.benchmarks.fdb.layout import Word
from duplexeval.benchmarks.fdb.v15_adaptation import (intensity_db, measure, partition, speech_only, split_time,
                                                      trimmed_mean, words_per_minute)
from duplexeval.benchmarks.fdb.v15_stats import NoTest, as_missing, eligible, holm, paired_test, run_tests

WORDS = [Word("one", 1.0, 1.5), Word("two", 2.0, 2.5), Word("three", 4.0, 4.8)]


@pytest.mark.parametrize("overlap_end, split", [
    (0.5, 1.0),     # before every word: the first word's start
    (1.0, 1.0),     # at a word's start: that word (it is "during" it)
    (1.49, 1.0),    # inside a word: that word's start
    (1.5, 2.0),     # at a word's end: the next word
    (3.0, 4.0),     # in a gap: the next word
    (4.8, 4.8),     # at the last word's end: the last end
    (9.0, 4.8),     # after every word: the last end
])
def test_the_split_is_aligned_to_words(overlap_end, split):
    assert split_time(overlap_end, WORDS, duration_s=10.0) == split


def test_the_split_without_words_is_the_overlap_end_clamped_into_the_recording():
    assert split_time(3.0, [], 10.0) == 3.0
    assert split_time(12.0, [], 10.0) == 10.0
    assert split_time(5.0, [Word("x", 11.0, 11.5)], 10.0) == 10.0   # a word past the end: clamped


def test_a_word_ending_exactly_at_the_split_is_pre():
    pre, post = partition(WORDS, 2.5)
    assert [w.text for w in pre] == ["one", "two"] and [w.text for w in post] == ["three"]
    pre, post = partition(WORDS, 2.499)
    assert [w.text for w in pre] == ["one"]


def test_words_per_minute_over_the_first_start_to_last_end():
    assert words_per_minute(WORDS) == pytest.approx(3 / (3.8 / 60))
    assert words_per_minute([Word("a", 2.0, 2.0)]) == 0.0            # no span: zero, as published
    assert words_per_minute([Word("b", 3.0, 3.5), Word("a", 1.0, 2.0)]) == 0.0   # negative span in ASR order: zero
    assert words_per_minute([]) == 0.0


def test_intensity_is_the_mean_and_sample_std_of_10ms_rms_db():
    rate = 16000
    loud = np.full(160, 0.5)
    quiet = np.full(160, 0.05)
    mean, std = intensity_db(np.concatenate([loud, quiet, np.full(100, 0.9)]), rate)   # the partial frame is dropped
    db = [20 * math.log10(0.5), 20 * math.log10(0.05)]
    assert mean == pytest.approx(np.mean(db)) and std == pytest.approx(np.std(db, ddof=1))
    assert intensity_db(np.zeros(0), rate) is None
    short_mean, short_std = intensity_db(np.full(80, 0.5), rate)           # under one frame: their fallback
    assert short_mean == pytest.approx(20 * math.log10(math.sqrt(0.25 + 1e-10))) and short_std == 0.0
    assert intensity_db(np.zeros(320), rate)[0] == pytest.approx(-200.0)    # the 1e-10 floor


def test_silence_is_cut_before_intensity_and_an_empty_side_has_no_measure():
    rate = 16000
    audio = np.concatenate([np.zeros(1600), np.full(1600, 0.5)])
    assert len(speech_only(audio, rate, [(0.1, 0.2)])) == 1600
    assert len(speech_only(audio, rate, [])) == 3200                        # no speech found: kept whole
    seg = measure(audio, rate, [Word("hi", 0.1, 0.2)], [(0.1, 0.2)])
    assert seg is not None and seg.mean_intensity == pytest.approx(20 * math.log10(0.5)) and seg.words == 1
    assert measure(audio[:0], rate, [], []) is None


def test_the_trim_drops_values_outside_the_5th_to_95th_percentile_from_3_values_on():
    assert trimmed_mean([1.0, 2.0]) == (1.5, 2, 2)                          # under 3 values: no trim
    vals = [float(v) for v in range(1, 21)]                                 # 5th pct 1.95, 95th 19.05
    mean, kept, given = trimmed_mean(vals + [None, float("nan")])
    assert (kept, given) == (18, 20) and mean == pytest.approx(sum(range(2, 20)) / 18)


def test_placeholders_count_as_missing():
    assert np.isnan(as_missing([0.0, 1.0], "wpm")).tolist() == [True, False]
    assert np.isnan(as_missing([-190.0, -189.9], "mean_intensity")).tolist() == [True, False]
    assert np.isnan(as_missing([0.0, None], "mean_intensity")).tolist() == [False, True]


def test_the_paired_test_drops_mad_outliers_of_the_differences():
    before = [100.0, 110.0, 120.0, 130.0, 140.0, 150.0]
    after = [105.0, 116.0, 124.0, 135.0, 146.0, 400.0]                    # the last difference (250) is an outlier
    t = paired_test(before, after, "wpm", "pre_vs_post")
    assert (t.n_raw, t.n_valid, t.n_used, t.df) == (6, 6, 5, 4)
    assert t.mean_diff == pytest.approx(np.mean([5, 6, 4, 5, 6]))
    from scipy import stats

    assert t.p == pytest.approx(stats.ttest_rel(after[:5], before[:5]).pvalue)
    assert t.ci95[0] < t.mean_diff < t.ci95[1]


def test_too_few_pairs_is_no_test_with_the_reason():
    with pytest.raises(NoTest, match="1 valid pair"):
        paired_test([1.0, 0.0], [2.0, 3.0], "wpm", "pre_vs_post")           # 0 wpm is missing


def test_holm_adjusts_step_down_and_stays_monotone():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])


def test_run_tests_covers_pre_and_clean_against_post_and_names_what_it_skips():
    sides = {"pre": {"wpm": [100.0, 120.0, 130.0]}, "post": {"wpm": [110.0, 125.0, 150.0]},
             "clean": {"wpm": [90.0, 0.0, 0.0]}}
    tests, skipped = run_tests(sides, ["wpm", "mean_intensity"])
    assert [t.pair for t in tests] == ["pre_vs_post"]
    assert tests[0].p_holm == pytest.approx(tests[0].p)
    assert "1 valid pair" in skipped["clean_vs_post:wpm"]
    assert skipped["pre_vs_post:mean_intensity"] == "no mean_intensity on the pre side"


def test_only_respond_samples_without_a_zero_speaking_rate_are_tested():
    sides = {"pre": {"wpm": 120.0}, "post": {"wpm": 140.0}, "clean": {"wpm": 130.0}}
    assert eligible("C_RESPOND", sides)
    assert not eligible("C_RESUME", sides) and not eligible(None, sides)
    assert not eligible("C_RESPOND", {**sides, "clean": {"wpm": 0.0}})
    assert eligible("C_RESPOND", {**sides, "pre": {}})        # a side without a rate does not exclude
