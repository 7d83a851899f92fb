"""Full-Duplex-Bench v1.5 stop and response latency (duplexeval.benchmarks.fdb.v15_timing), pinned at each boundary
with hand-made speech intervals (seconds)."""

from __future__ import annotations

import pytest

from duplexeval.benchmarks.fdb.v15_timing import (MODEL_MERGE_GAP_S, USER_MERGE_GAP_S, merge, response_gaps,
                                                  sample_timing, stop_intervals)


def test_the_published_merge_gaps():
    assert (USER_MERGE_GAP_S, MODEL_MERGE_GAP_S) == (0.6, 0.5)


@pytest.mark.parametrize("gap, merged", [
    (0.5, [(0.0, 2.5)]),                 # exactly the gap (0.5 is exact in binary): joined
    (0.49, [(0.0, 1.0), (1.5, 2.5)]),    # just under: kept apart
])
def test_merge_joins_a_gap_of_exactly_the_threshold(gap, merged):
    assert merge([(1.5, 2.5), (0.0, 1.0)], gap) == merged     # unsorted input is sorted first


def test_the_gap_is_compared_in_float_seconds_as_published():
    # VAD times are sample counts / 16000; 1.6 - 1.0 is 0.6000000000000001 in binary floating
    # point, so the authors' comparison (gap <= 0.6) keeps these apart, and so does ours.
    assert merge([(0.0, 16000 / 16000), (25600 / 16000, 2.0)], 0.6) == [(0.0, 1.0), (1.6, 2.0)]
    assert merge([(0.0, 0.4), (1.0, 2.0)], 0.6) == [(0.0, 2.0)]   # 1.0 - 0.4 == 0.6 exactly here


def test_merge_keeps_the_later_end_of_a_contained_interval():
    assert merge([(0.0, 3.0), (1.0, 2.0)], 0.5) == [(0.0, 3.0)]


def test_a_user_barging_in_gives_the_overlap_until_the_model_stops():
    # model talks 0-5 s; user starts at 3.2 and talks to 6; model stops at 5: stop latency 1.8 s
    assert stop_intervals([(3.2, 6.0)], [(0.0, 5.0)]) == [(3.2, 5.0)]


def test_touching_intervals_are_no_overlap():
    assert stop_intervals([(5.0, 6.0)], [(0.0, 5.0)]) == []


def test_of_overlaps_ending_at_the_same_millisecond_the_shortest_is_kept():
    # one user interval over two model intervals: two overlaps, ending at different milliseconds
    # (the second one's start is then rounded to 4.0 for output)
    assert stop_intervals([(3.0, 9.0)], [(0.0, 4.0), (4.0004, 9.0)]) == [(3.0, 4.0), (4.0, 9.0)]
    # three overlaps, (1, 5), (4.5, 5) and (4.5, 5.0004), all ending at millisecond 5000: the shortest stays
    assert stop_intervals([(1.0, 5.0), (4.0, 5.0004)], [(0.0, 5.0), (4.5, 5.0004)]) == [(4.5, 5.0)]


def test_on_equal_ends_the_model_pointer_moves_first():
    # user (0, 5) ends with model (1, 5); the next model interval (5.5, 7) cannot overlap user (0, 5),
    # and user (6, 8) is then compared with model (5.5, 7): overlap (6, 7).
    assert stop_intervals([(0.0, 5.0), (6.0, 8.0)], [(1.0, 5.0), (5.5, 7.0)]) == [(1.0, 5.0), (6.0, 7.0)]


def test_response_gap_runs_from_the_user_end_to_the_next_model_start_strictly_after():
    assert response_gaps([(0.0, 2.0)], [(2.0, 3.0), (2.4, 4.0)]) == [(2.0, 2.4)]   # a start at the end is not after


def test_several_user_ends_before_one_model_start_keep_the_latest():
    assert response_gaps([(0.0, 1.0), (1.5, 2.0)], [(3.0, 4.0)]) == [(2.0, 3.0)]


def test_no_model_start_after_the_user_gives_no_gap():
    assert response_gaps([(5.0, 6.0)], [(0.0, 5.5)]) == []


def test_a_whole_sample_merges_first_then_measures():
    # user says two phrases 0.5 s apart (one turn after merging), model answers 0.7 s after
    t = sample_timing([(0.0, 1.0), (1.5, 3.0)], [(3.7, 5.0), (5.25, 6.0)])
    assert t.user == [(0.0, 3.0)] and t.model == [(3.7, 6.0)]
    assert t.response == [(3.0, 3.7)] and t.response_latencies == [0.7]
    assert t.stop == [] and t.stop_latencies == []
    assert t.to_json() == {"latency_stop_list": [], "latency_resp_list": [[3.0, 3.7]]}


def test_times_are_rounded_to_the_millisecond():
    t = sample_timing([(1.00049, 2.00051)], [(0.0, 1.5004)])
    assert t.stop == [(1.0, 1.5)] and t.stop_latencies == [0.5]
