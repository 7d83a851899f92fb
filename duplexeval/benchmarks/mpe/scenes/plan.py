"""The shape a generated Duplex-MPE scene must have: the judge spec's `scene_plan` block.

The paper states no rule for where N4 events go. Its counts need both sides of T: 968
scenarios have an N4 event after T (App. A2.2), yet each condition has 1,911 N4 events
over 2,000 scenes (Table 7). So the placement is a spec field, and the same plan both
words the prompt and checks the answer (a writer that ignores the prompt is rejected).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from duplexeval.benchmarks.mpe.scenes.quota import SceneQuota, Totals, allocate
from duplexeval.benchmarks.mpe.scenes.rules import PLACEMENTS

# "alternate" and "totals" are resolved per scene; the rules only ever see one of PLACEMENTS.
SPEC_PLACEMENTS = PLACEMENTS + ("alternate", "totals")


@dataclass(frozen=True)
class ScenePlan:
    turns: tuple[int, int]
    n4_pairs: tuple[int, int]
    n4_placement: str
    quotas: tuple[SceneQuota, ...] = field(default=(), repr=False)  # n4_placement "totals": one per scene

    @staticmethod
    def from_spec(judge_data: dict[str, Any], where: str = "judge spec") -> "ScenePlan":
        """The plan of a scene-writer judge spec; a missing or inconsistent block is a clear error."""
        block = judge_data.get("scene_plan")
        if not isinstance(block, dict):
            raise ValueError(f"{where}: `scene_plan` is missing (turns, n4_pairs, n4_placement; docs/mpe.md)")
        ranges = {}
        for name in ("turns", "n4_pairs"):
            r = block.get(name)
            if not isinstance(r, dict) or not isinstance(r.get("min"), int) or not isinstance(r.get("max"), int):
                raise ValueError(f"{where}: scene_plan.{name} needs integer `min` and `max`")
            if not 0 <= r["min"] <= r["max"]:
                raise ValueError(f"{where}: scene_plan.{name}: min {r['min']} is above max {r['max']}")
            ranges[name] = (r["min"], r["max"])
        if ranges["turns"][0] < 3:
            raise ValueError(f"{where}: scene_plan.turns.min must be >= 3 (T is never first or last)")
        placement = block.get("n4_placement")
        if placement not in SPEC_PLACEMENTS:
            raise ValueError(f"{where}: scene_plan.n4_placement {placement!r}; use one of {', '.join(SPEC_PLACEMENTS)}")
        totals = block.get("totals")
        if (placement == "totals") != (totals is not None):
            raise ValueError(f"{where}: scene_plan.n4_placement `totals` and a `totals` block go together")
        quotas: tuple[SceneQuota, ...] = ()
        if totals is not None:
            quotas = tuple(allocate(Totals.from_block(totals, where), ranges["turns"], ranges["n4_pairs"], where))
        return ScenePlan(ranges["turns"], ranges["n4_pairs"], placement, quotas)

    def quota(self, index: int) -> SceneQuota:
        """Scene `index`'s exact counts: from `totals`, else the plan's ranges."""
        if self.n4_placement != "totals":
            return SceneQuota(-1, -1, self.placement_for(index))
        if not 0 <= index < len(self.quotas):
            raise ValueError(f"scene {index}: scene_plan.totals plans {len(self.quotas)} scenes")
        return self.quotas[index]

    def ranges_for(self, index: int) -> tuple[tuple[int, int], tuple[int, int]]:
        """(turns, n4 pairs) ranges scene `index` is asked for and held to."""
        if self.n4_placement != "totals":
            return self.turns, self.n4_pairs
        q = self.quota(index)
        return (q.turns, q.turns), (q.n4_pairs, q.n4_pairs)

    def placement_for(self, index: int) -> str:
        """This scene's side: `alternate` gives after-t to even, before-t to odd scene indices;
        `totals` the side its quota deals it (`both`: one pair each side of T)."""
        if self.n4_placement == "alternate":
            return "after-t" if index % 2 == 0 else "before-t"
        if self.n4_placement == "totals":
            return self.quota(index).placement
        return self.n4_placement

    def prompt_inputs(self, index: int) -> dict[str, Any]:
        """What the template words the request with (part of the cache key, via the prompt)."""
        turns, pairs = self.ranges_for(index)
        return {"turns_min": turns[0], "turns_max": turns[1], "n4_pairs_min": pairs[0],
                "n4_pairs_max": pairs[1], "n4_placement": self.placement_for(index)}
