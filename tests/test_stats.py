"""The paper's own numbers pin the statistics (Table 16)."""

import pytest

from duplexeval.stats import mcnemar_exact, mcnemar_from_pairs, spearman, wilson_interval


def test_mcnemar_minicpm_90_vs_78_gives_p_0_3961():
    assert round(mcnemar_exact(90, 78).p_value, 4) == 0.3961


def test_mcnemar_voila_395_vs_430_gives_p_0_2365():
    assert round(mcnemar_exact(395, 430).p_value, 4) == 0.2365


def test_mcnemar_is_symmetric_and_capped_at_one():
    assert mcnemar_exact(78, 90).p_value == mcnemar_exact(90, 78).p_value
    assert mcnemar_exact(5, 5).p_value == 1.0
    assert mcnemar_exact(0, 0).p_value == 1.0


def test_mcnemar_lopsided_split_is_significant():
    assert mcnemar_exact(90, 40).p_value < 0.001


def test_mcnemar_from_pairs_counts_only_discordant():
    pairs = [(True, True)] * 50 + [(False, False)] * 50 + [(True, False)] * 3 + [(False, True)] * 1
    result = mcnemar_from_pairs(pairs)
    assert (result.b, result.c) == (3, 1)


def test_wilson_interval_known_value_and_edges():
    lo, hi = wilson_interval(8, 10, 0.95)
    assert lo == pytest.approx(0.4902, abs=1e-4) and hi == pytest.approx(0.9433, abs=1e-4)
    assert wilson_interval(0, 10, 0.95)[0] == 0.0
    assert wilson_interval(0, 0, 0.95) is None


def test_spearman_reversed_ranking_is_minus_one():
    rho, _ = spearman([1, 2, 3, 4], [40, 30, 20, 10])
    assert rho == pytest.approx(-1.0)
