"""Per-scene turn and N4 counts that add up to a data set's published totals (Table 7).

A range per scene (8-11 turns, 1-2 N4 pairs) cannot produce Duplex-MPE's shape: 26,182
turns over 2,000 scenes is 13.09 per scene, 20,360 silence windows is 10.18, and 1,911
N4 events over 2,000 scenes means some scenes have none. The paper gives the totals,
not the distribution, so `scene_plan.totals` states them and this module deals out an
exact count to every scene index: the sums over the first `scenes` scenes are the totals
by construction, and the writer is asked for (and held to) its scene's counts.

What the paper does not give is ours, and a spec field: how many scenes carry two pairs
(`two_pair_scenes`; each puts one pair on each side of T) and how far turn counts spread
(`turn_spread`: a zero-sum cycle of offsets around the mean). Scenes with an N4 after T
are App. A2.2's 968: the two-pair scenes and as many one-pair-after scenes as needed;
the remaining one-pair scenes put their pair before T (1,911 - 968 = 943 events).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# The N4 shape of one scene: (pairs, placement as the rules check it).
NONE, AFTER, BEFORE, BOTH = (0, "either"), (1, "after-t"), (1, "before-t"), (2, "both")


@dataclass(frozen=True)
class SceneQuota:
    turns: int
    n4_pairs: int
    placement: str  # "either" (no pair), "after-t", "before-t", "both" (one pair each side)


@dataclass(frozen=True)
class Totals:
    scenes: int
    turns: int
    n4_pairs: int
    n4_after_t_scenes: int
    two_pair_scenes: int
    turn_spread: tuple[int, ...]

    @staticmethod
    def from_block(block: dict[str, Any], where: str) -> "Totals":
        names = ("scenes", "turns", "n4_pairs", "n4_after_t_scenes", "two_pair_scenes")
        bad = [n for n in names if not isinstance(block.get(n), int) or block[n] < 0]
        if bad:
            raise ValueError(f"{where}: scene_plan.totals.{bad[0]} needs a non-negative integer")
        spread = tuple(block.get("turn_spread", [0]))
        if not spread or sum(spread) != 0 or not all(isinstance(x, int) for x in spread):
            raise ValueError(f"{where}: scene_plan.totals.turn_spread must be integers summing to 0 "
                             f"(got {list(spread)})")
        scenes, turns, pairs, after_t, two_pair = (int(block[n]) for n in names)
        return Totals(scenes, turns, pairs, after_t, two_pair, spread)


def _deal(counts: list[tuple[Any, int]], n: int) -> list[Any]:
    """n slots dealt to categories in proportion, evenly interleaved (largest deficit first)."""
    out, given = [], [0] * len(counts)
    for k in range(n):
        deficits = [c * (k + 1) / n - given[i] for i, (_, c) in enumerate(counts)]
        i = max(range(len(counts)), key=lambda j: (deficits[j], -j))
        given[i] += 1
        out.append(counts[i][0])
    return out


def allocate(totals: Totals, turn_range: tuple[int, int], pair_range: tuple[int, int], where: str) -> list[SceneQuota]:
    """Every scene's counts; a ValueError naming the field when the totals cannot be met."""
    s, two = totals.scenes, totals.two_pair_scenes
    one = totals.n4_pairs - 2 * two
    zero = s - one - two
    one_after = totals.n4_after_t_scenes - two
    one_before = one - one_after
    if s == 0 or min(one, zero, one_after, one_before) < 0:
        raise ValueError(f"{where}: scene_plan.totals cannot be met: {s} scenes, {totals.n4_pairs} N4 pairs, "
                         f"{two} two-pair scenes, {totals.n4_after_t_scenes} scenes with an N4 after T")
    shapes = _deal([(NONE, zero), (AFTER, one_after), (BEFORE, one_before), (BOTH, two)], s)
    cycle = len(totals.turn_spread)
    whole = s - s % cycle  # offsets only on whole cycles, so they sum to zero
    out = []
    for k, (pairs, placement) in enumerate(shapes):
        base = (k + 1) * totals.turns // s - k * totals.turns // s
        turns = base + (totals.turn_spread[k % cycle] if k < whole else 0)
        if not turn_range[0] <= turns <= turn_range[1]:
            raise ValueError(f"{where}: scene {k} would get {turns} turns, outside scene_plan.turns "
                             f"{turn_range[0]}-{turn_range[1]} (check totals.turns and turn_spread)")
        if not pair_range[0] <= pairs <= pair_range[1] or turns < 3 + 2 * pairs:
            raise ValueError(f"{where}: scene {k} would get {pairs} N4 pairs in {turns} turns, outside "
                             f"scene_plan.n4_pairs {pair_range[0]}-{pair_range[1]} or too few turns")
        out.append(SceneQuota(turns, pairs, placement))
    return out
