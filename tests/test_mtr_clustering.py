"""Majority-vote clustering of 6 turn segmentations (MTR-DuplexBench 方法详解 1), on hand-made votes."""

from __future__ import annotations

import pytest

from duplexeval.benchmarks.mtr.clustering import (
    Turn,
    cluster_votes,
    overlap_share,
    resolve_overlaps,
    response_windows,
    survives,
)

PAPER = {"overlap_threshold": 0.3, "overlap_basis": "shorter", "survival": "majority"}


def spans(turns):
    return [(round(t.start, 3), round(t.end, 3)) for t in turns]


def test_identical_votes_give_the_turns_back():
    vote = [(1.0, 3.0), (6.0, 8.0)]
    turns = cluster_votes([vote] * 6, **PAPER)
    assert spans(turns) == [(1.0, 3.0), (6.0, 8.0)] and [t.votes for t in turns] == [6, 6]


def test_disagreeing_votes_take_the_median_start_and_end():
    votes = [[(1.0, 3.0)], [(1.2, 3.2)], [(0.8, 2.9)], [(1.1, 3.1)], [(0.9, 3.4)], [(1.3, 2.8)]]
    (turn,) = cluster_votes(votes, **PAPER)
    assert turn.votes == 6
    assert turn.start == pytest.approx(1.05) and turn.end == pytest.approx(3.05)  # medians of six


def test_overlap_of_31_percent_joins_and_29_percent_does_not():
    # Share of the shorter span: [0, 10] vs [6.9, 16.9] overlap 3.1 s of 10 s.
    assert overlap_share((6.9, 16.9), (0.0, 10.0)) == pytest.approx(0.31)
    joined = cluster_votes([[(0.0, 10.0)]] * 3 + [[(6.9, 16.9)]] * 3, overlap_threshold=0.3, survival="any")
    assert len(joined) == 1 and joined[0].votes == 6
    apart = cluster_votes([[(0.0, 10.0)]] * 3 + [[(7.1, 17.1)]] * 3, overlap_threshold=0.3, survival="any")
    assert len(apart) == 2  # 29 %: two clusters (then cut at the overlap's midpoint)
    assert spans(apart) == [(0.0, 8.55), (8.55, 17.1)]


def test_exactly_30_percent_joins():
    assert overlap_share((7.0, 17.0), (0.0, 10.0)) == pytest.approx(0.3)
    assert len(cluster_votes([[(0.0, 10.0)], [(7.0, 17.0)]], overlap_threshold=0.3, survival="any")) == 1


def test_even_split_three_of_six_does_not_survive_a_majority():
    votes = [[(1.0, 3.0), (5.0, 7.0)]] * 3 + [[(1.0, 3.0)]] * 3
    assert spans(cluster_votes(votes, **PAPER)) == [(1.0, 3.0)]  # 3/6 is not more than half
    assert spans(cluster_votes(votes, **{**PAPER, "survival": "half-or-more"})) == [(1.0, 3.0), (5.0, 7.0)]
    assert survives(4, 6, "majority") and not survives(3, 6, "majority") and survives(3, 6, "half-or-more")


def test_four_of_six_survive_and_a_lone_spurious_turn_does_not():
    votes = [[(1.0, 3.0), (5.0, 7.0)]] * 4 + [[(1.0, 3.0)], [(1.0, 3.0), (9.0, 9.5)]]
    assert spans(cluster_votes(votes, **PAPER)) == [(1.0, 3.0), (5.0, 7.0)]


def test_unparseable_votes_drop_out_of_the_count():
    votes = [[(1.0, 3.0)], [(1.0, 3.0)], None, None, None, None]
    assert spans(cluster_votes(votes, **PAPER)) == [(1.0, 3.0)]  # 2 of 2 valid votes


def test_a_vote_puts_at_most_one_turn_in_a_cluster():
    # One vote splits the turn in two; both halves overlap the cluster, only one joins it.
    votes = [[(1.0, 5.0)]] * 5 + [[(1.0, 2.9), (3.1, 5.0)]]
    turns = cluster_votes(votes, **PAPER)
    assert spans(turns) == [(1.0, 5.0)] and turns[0].votes == 6


def test_overlapping_clusters_are_resolved():
    # Two surviving turns overlapping by 20 % of the shorter: cut at the overlap's midpoint.
    votes = [[(0.0, 5.0), (4.0, 9.0)]] * 6
    assert spans(cluster_votes(votes, **PAPER)) == [(0.0, 4.5), (4.5, 9.0)]
    # Overlap above the threshold (but kept apart by the one-turn-per-vote rule): the turn with more votes wins.
    kept = resolve_overlaps([Turn(0.0, 5.0, 4), Turn(1.0, 5.5, 6)], overlap_threshold=0.3)
    assert spans(kept) == [(1.0, 5.5)]


def test_response_window_runs_from_turn_start_to_the_next_turn_end():
    turns = [Turn(1.0, 3.0, 6), Turn(6.0, 8.0, 6), Turn(11.0, 12.0, 6)]
    assert response_windows(turns, 20.0) == [(1.0, 8.0), (6.0, 12.0), (11.0, 20.0)]


@pytest.mark.parametrize("basis,expected", [("shorter", 0.5), ("union", 0.2), ("candidate", 0.25)])
def test_overlap_bases(basis, expected):
    assert overlap_share((0.0, 8.0), (6.0, 10.0), basis) == pytest.approx(expected)
