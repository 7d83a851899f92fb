"""Full-Duplex-Bench v1.5 paired tests: pre vs post and clean vs post, per measure, over a task's samples.

The adaptation numbers of v1.5 (arXiv 2507.23159) are differences with a significance
test: for each measure, the samples' "pre" (or "clean") value against their "post" value.
The public code (evaluation/significance_test.py, defaults of its command line) decides
what the paper leaves out; its rules, in our own words:

- Only samples whose behaviour verdict is C_RESPOND enter (v15_behavior: the model took
  up the overlap), and of those only samples with no speaking rate of exactly 0 on any
  side (a missing side does not exclude a sample; `eligible`).
- Placeholder values count as missing: 0.0 for speaking rate, speech duration, pitch mean
  and std and intensity std; an intensity mean at or below -190 dB.
- A pair with a missing side is dropped; fewer than 2 pairs: no test.
- Outliers by the median absolute deviation of the differences (after - before): with
  MAD scaled by 1.4826, pairs whose difference lies outside median +- 3.5 x that are
  dropped; a MAD of 0 drops nothing; fewer than 2 pairs left: no test.
- A paired t-test (two-sided) on what is left, its 95% interval of the mean difference,
  Cohen's d_z; then Holm's correction over every test of the run (each measure x both
  pairs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

PAIRS = (("pre", "post"), ("clean", "post"))
ZERO_IS_MISSING = {"wpm", "speech_dur_s", "mean_pitch", "std_pitch", "std_intensity"}
INTENSITY_FLOOR_DB = -190.0
MAD_K = 3.5
MAD_SCALE = 1.4826
ALPHA = 0.05


TESTED_BEHAVIOUR = "C_RESPOND"


def eligible(verdict: str | None, sides: dict[str, dict[str, float | None]]) -> bool:
    """Whether a sample enters the paired tests: a C_RESPOND verdict and no side with a speaking rate of 0."""
    return verdict == TESTED_BEHAVIOUR and all(s.get("wpm") != 0 for s in sides.values())


def as_missing(values: Sequence[float | None], measure: str) -> np.ndarray:
    """Values with the placeholders of `measure` (and None) turned into NaN."""
    out = np.array([np.nan if v is None else float(v) for v in values], dtype=float)
    if measure in ZERO_IS_MISSING:
        out[out == 0.0] = np.nan
    if measure == "mean_intensity":
        out[out <= INTENSITY_FLOOR_DB] = np.nan
    return out


@dataclass(frozen=True)
class PairedTest:
    measure: str
    pair: str                 # "pre_vs_post" or "clean_vs_post"
    n_raw: int
    n_valid: int
    n_used: int
    mean_before: float
    mean_after: float
    mean_diff: float
    ci95: tuple[float, float]
    t: float
    df: int
    p: float
    cohen_dz: float | None
    p_holm: float | None = None


class NoTest(ValueError):
    """Too few pairs for a test (the reason says how many); the report shows the reason, never a number."""


def paired_test(before: Sequence[float | None], after: Sequence[float | None], measure: str, pair: str) -> PairedTest:
    """One measure, one pair of sides, over the samples (position i is sample i on both sides)."""
    from scipy import stats

    b, a = as_missing(before, measure), as_missing(after, measure)
    if b.shape != a.shape:
        raise ValueError(f"{measure} {pair}: {len(b)} values before, {len(a)} after (one per sample on each side)")
    valid = ~np.isnan(b) & ~np.isnan(a)
    b0, a0 = b[valid], a[valid]
    if b0.size < 2:
        raise NoTest(f"{measure} {pair}: {b0.size} valid pair(s) of {b.size}, a paired test needs 2")
    diff = a0 - b0
    med = float(np.median(diff))
    scale = MAD_SCALE * float(np.median(np.abs(diff - med)))
    keep = np.ones(b0.size, dtype=bool) if scale == 0 else (diff >= med - MAD_K * scale) & (diff <= med + MAD_K * scale)
    b1, a1 = b0[keep], a0[keep]
    if b1.size < 2:
        raise NoTest(f"{measure} {pair}: {b1.size} pair(s) left after the outlier rule, a paired test needs 2")
    d = a1 - b1
    sd = float(d.std(ddof=1))
    se = sd / np.sqrt(b1.size)
    result = stats.ttest_rel(a1, b1)
    tcrit = float(stats.t.ppf(1 - ALPHA / 2, df=b1.size - 1))
    mean_d = float(d.mean())
    return PairedTest(measure, pair, int(b.size), int(b0.size), int(b1.size), float(b1.mean()), float(a1.mean()),
                      mean_d, (mean_d - tcrit * se, mean_d + tcrit * se), float(result.statistic), int(b1.size - 1),
                      float(result.pvalue), mean_d / sd if sd > 0 else None)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given (monotone, capped at 1)."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def run_tests(sides: dict[str, dict[str, Sequence[float | None]]],
              measures: Sequence[str]) -> tuple[list[PairedTest], dict[str, str]]:
    """sides: {"pre"|"post"|"clean": {measure: values per sample}} -> (tests with Holm's p, {test: why not run})."""
    tests: list[PairedTest] = []
    skipped: dict[str, str] = {}
    for measure in measures:
        for first, second in PAIRS:
            name = f"{first}_vs_{second}:{measure}"
            if measure not in sides.get(first, {}) or measure not in sides.get(second, {}):
                skipped[name] = f"no {measure} on the {first if measure not in sides.get(first, {}) else second} side"
                continue
            try:
                tests.append(paired_test(sides[first][measure], sides[second][measure], measure,
                                         f"{first}_vs_{second}"))
            except NoTest as exc:
                skipped[name] = str(exc)
    adjusted = holm([t.p for t in tests])
    return [PairedTest(**{**t.__dict__, "p_holm": p}) for t, p in zip(tests, adjusted)], skipped
