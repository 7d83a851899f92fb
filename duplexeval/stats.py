"""Statistics the Duplex-MPE paper reports next to its scores.

- Exact two-sided McNemar on explicit/implicit pairs (App. A5.1, Table 16): only the
  discordant pairs carry information, and under "no difference" they split like fair
  coin flips, so the test is a binomial test on them. The chi-square approximation is
  not used: the paper's p values (90 vs 78 -> 0.3961) are the exact ones.
- Wilson score interval for a rate (it behaves at 0 and 1, unlike the Wald interval).
- Spearman rank correlation between two rankings (presence vs Start, §4.5).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from scipy.stats import binom, norm, spearmanr


@dataclass(frozen=True)
class McNemarResult:
    """b = pairs that passed only in the first condition, c = only in the second."""

    b: int
    c: int
    p_value: float

    @property
    def discordant(self) -> int:
        return self.b + self.c


def mcnemar_exact(b: int, c: int) -> McNemarResult:
    """Exact two-sided McNemar test on discordant pair counts b and c.

    p = min(1, 2 * P[X <= min(b, c)]) with X ~ Binomial(b + c, 1/2). With no discordant
    pairs there is no evidence either way: p = 1.
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return McNemarResult(b, c, 1.0)
    p = 2.0 * float(binom.cdf(min(b, c), n, 0.5))
    return McNemarResult(b, c, min(1.0, p))


def mcnemar_from_pairs(pairs: Sequence[tuple[bool, bool]]) -> McNemarResult:
    """McNemar on (first passed, second passed) pairs, e.g. (explicit, implicit) per scene."""
    b = sum(1 for x, y in pairs if x and not y)
    c = sum(1 for x, y in pairs if y and not x)
    return mcnemar_exact(b, c)


def wilson_interval(successes: int, n: int, confidence: float) -> tuple[float, float] | None:
    """Wilson score interval; None when there is no denominator (never a fake [0, 0])."""
    if n <= 0:
        return None
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in [0, n], got {successes} of {n}")
    z = float(norm.ppf(0.5 + confidence / 2.0))
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def spearman(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """(rho, p) of the Spearman rank correlation; ties get average ranks (scipy)."""
    if len(x) != len(y):
        raise ValueError(f"spearman needs equal lengths, got {len(x)} and {len(y)}")
    if len(x) < 2:
        raise ValueError("spearman needs at least two entries")
    result = spearmanr(x, y)
    return float(result.statistic), float(result.pvalue)
