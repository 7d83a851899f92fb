"""Issue 24, item 3: the scene generator can produce Table 7's shape.

The writer spec's `scene_plan.totals` deals every scene index its exact turn count, N4
pair count and side of T. A generated set of 2,000 scenes must then have the golden
denominators (26,182 turns, 2,000 T, 1,911 N4 events, 20,360 silence windows, 968 scenes
with an N4 after T, some scenes with no N4 at all). The LLM is replaced by a stand-in
writer that follows the prompt's counts; schema, rules and plan checks are the real ones.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

from duplexeval.benchmarks.mpe.scenes.generate import GenerationReport, generate_scene
from duplexeval.benchmarks.mpe.scenes.plan import ScenePlan
from duplexeval.benchmarks.mpe.scenes.rules import n4_placement_counts
from duplexeval.judges.verdict import Verdict
from duplexeval.specs import load_spec, repo_root

WRITER_SPEC = repo_root() / "specs" / "judges" / "mpe-scene-generation.yaml"
SPEAKERS = {"A": "slt", "B": "rms", "C": "awb", "D": "kal16"}
PREAMBLE = {"text": "You are Aria.", "voice": "slt"}
ATTRS = {"setting": "kitchen", "activity": "baking", "relationship": "family", "devices": "a timer",
         "register": "casual"}


def golden(cell_id: str) -> float:
    cells = yaml.safe_load((repo_root() / "golden" / "duplex-mpe.yaml").read_text(encoding="utf-8"))["cells"]
    return next(c["value"] for c in cells if c["id"] == cell_id)


def writer_plan() -> ScenePlan:
    return ScenePlan.from_spec(load_spec(WRITER_SPEC, "judge").data)


class PromptFollowingWriter:
    """Stand-in for the LLM writer: a scene with exactly the counts and sides it is asked for."""

    id = "stand-in-writer"

    def decide(self, inputs, artifacts=None, *, sample=0):
        n, pairs, side = inputs["turns_max"], inputs["n4_pairs_max"], inputs["n4_placement"]
        assert inputs["turns_min"] == n and inputs["n4_pairs_min"] == pairs  # totals: exact counts
        before = {"before-t": pairs, "after-t": 0, "both": 1, "either": 0}[side]
        after = pairs - before
        pair = [{"speaker": "C", "label": "N4Q", "text": "Aria, do we need eggs?"},
                {"speaker": "D", "label": "N4R", "text": "Never mind, no eggs."}]
        fill = n - 2 * pairs - 3  # silence turns besides the fact, T and one closing turn
        turns = [{"speaker": "A", "label": "N2", "text": "The cake bakes for forty minutes."}]
        turns += [{"speaker": "B", "label": "N3", "text": "Hmm, flour first."}] * (fill // 2)
        turns += pair * before
        turns.append({"speaker": "B", "label": "T", "variants": {"explicit": "Aria, how long does it bake?",
                      "implicit": "You read the recipe, so how long does it bake?"}, "gold_answer": "forty minutes"})
        turns += pair * after
        turns += [{"speaker": "A", "label": "N1", "text": "Aria is handy."}] * (fill - fill // 2 + 1)
        return Verdict(value={"turns": turns}, parsed_ok=True, raw="", reason="", cache_key=f"k{sample}",
                       judge_id=self.id, label="stand-in")


def test_the_quotas_add_up_to_table_7_exactly() -> None:
    quotas = writer_plan().quotas
    turns = sum(q.turns for q in quotas)
    pairs = sum(q.n4_pairs for q in quotas)
    assert len(quotas) == golden("mpe.t7.t-turns") == 2000
    assert turns == golden("mpe.t7.turns") and round(turns / len(quotas), 2) == 13.09
    assert pairs == golden("mpe.t7.n4-events")
    windows = turns - len(quotas) - 2 * pairs
    assert windows == golden("mpe.t19.silence-windows")
    assert round(windows / 2000, 2) == golden("mpe.derived.windows-per-scene")
    sides = Counter(q.placement for q in quotas)
    assert sides["after-t"] + sides["both"] == golden("mpe.a22.scenes-with-n4-after-t")
    assert sides["either"] > 0  # some scenes have no N4 event
    assert {q.turns for q in quotas} == set(range(11, 17))


@pytest.mark.parametrize("block, message", [
    ({"n4_pairs": 5000}, "cannot be met"),
    ({"turns": 40000}, "outside scene_plan.turns"),
    ({"turn_spread": [1, 1]}, "summing to 0"),
])
def test_totals_that_cannot_be_dealt_are_a_clear_error(block, message) -> None:
    data = load_spec(WRITER_SPEC, "judge").data
    data["scene_plan"]["totals"] = {**data["scene_plan"]["totals"], **block}
    with pytest.raises(ValueError, match=message):
        ScenePlan.from_spec(data, "mpe-scene-generation.yaml")


def test_a_generated_set_of_2000_scenes_has_the_golden_denominators() -> None:
    plan, writer, report = writer_plan(), PromptFollowingWriter(), GenerationReport()
    scenes = [generate_scene(writer, ATTRS, k, speakers=SPEAKERS, preamble=PREAMBLE, plan=plan, attempts=1,
                             report=report) for k in range(len(plan.quotas))]
    assert not report.rejected and all(scenes)
    labels = Counter(t.label for s in scenes for t in s.turns)
    assert sum(labels.values()) == golden("mpe.t7.turns")
    assert labels["T"] == golden("mpe.t7.t-turns")
    assert labels["N4Q"] == labels["N4R"] == golden("mpe.t7.n4-events")
    assert labels["N1"] + labels["N2"] + labels["N3"] == golden("mpe.t19.silence-windows")
    counts = n4_placement_counts(scenes)
    assert counts["scenes_with_n4_after_t"] == golden("mpe.a22.scenes-with-n4-after-t")
    assert counts["n4_events"] == golden("mpe.t7.n4-events")


def test_a_scene_ignoring_its_quota_is_rejected() -> None:
    plan, report = writer_plan(), GenerationReport()

    class OneTurnShort(PromptFollowingWriter):
        def decide(self, inputs, artifacts=None, *, sample=0):
            verdict = super().decide(inputs, sample=sample)
            verdict.value["turns"].insert(1, {"speaker": "C", "label": "N3", "text": "Oops."})
            return verdict

    assert generate_scene(OneTurnShort(), ATTRS, 0, speakers=SPEAKERS, preamble=PREAMBLE, plan=plan, attempts=1,
                          report=report) is None
    assert "the plan asks for" in report.rejected[0]


# ---- issue 36: the quotas hold across resumed and partial generation ---------------------

def small_plan() -> ScenePlan:
    """Table 7's shape scaled to 8 scenes: two with no N4, two before T, two after, two with both."""
    data = load_spec(WRITER_SPEC, "judge").data
    block = {**data["scene_plan"], "totals": {"scenes": 8, "turns": 104, "n4_pairs": 10, "n4_after_t_scenes": 4,
                                              "two_pair_scenes": 2, "turn_spread": [0]}}
    return ScenePlan.from_spec({**data, "scene_plan": block})


def folder_counts(out: Path) -> dict:
    from duplexeval.benchmarks.mpe.scenes.loader import load_scenes

    scenes = load_scenes(out)
    labels = Counter(t.label for s in scenes for t in s.turns)
    return {"scenes": len(scenes), "turns": sum(labels.values()), "n4": labels["N4Q"],
            "after": n4_placement_counts(scenes)["scenes_with_n4_after_t"]}


class FailsOnce(PromptFollowingWriter):
    """Sample 0 of the listed indices is unusable (a stand-in for an LLM's bad answer)."""

    def __init__(self, bad):
        self.bad = set(bad)

    def decide(self, inputs, artifacts=None, *, sample=0):
        if sample == 0 and inputs["scene_index"] in self.bad:
            return Verdict(value=None, parsed_ok=False, raw="", reason="stand-in: no JSON", cache_key="x",
                           judge_id=self.id, label="stand-in")
        return super().decide(inputs, sample=sample)


def test_a_resumed_call_keeps_written_scenes_and_fills_the_failed_indices(tmp_path) -> None:
    from duplexeval.benchmarks.mpe.scenes.generate import generate_scenes

    plan, attrs = small_plan(), [{**ATTRS, "activity": f"baking {k}"} for k in range(8)]
    first = generate_scenes(FailsOnce({3, 6}), attrs, tmp_path, speakers=SPEAKERS, preamble=PREAMBLE, plan=plan,
                            attempts=1)
    assert len(first.written) == 6 and first.missing == [3, 6] and first.totals_met is False
    second = generate_scenes(FailsOnce({3, 6}), attrs, tmp_path, speakers=SPEAKERS, preamble=PREAMBLE, plan=plan,
                             attempts=2)
    assert len(second.kept) == 6 and len(second.written) == 2 and second.missing == [] and second.totals_met
    assert folder_counts(tmp_path) == {"scenes": 8, "turns": 104, "n4": 10, "after": 4}


def test_chunks_written_by_separate_calls_add_up_to_the_totals(tmp_path) -> None:
    from duplexeval.benchmarks.mpe.scenes.generate import generate_scenes

    plan, attrs = small_plan(), [{**ATTRS, "activity": f"baking {k}"} for k in range(8)]
    writer = PromptFollowingWriter()
    a = generate_scenes(writer, attrs[:3], tmp_path, speakers=SPEAKERS, preamble=PREAMBLE, plan=plan, attempts=1)
    assert a.missing == [3, 4, 5, 6, 7]
    b = generate_scenes(writer, attrs[3:], tmp_path, speakers=SPEAKERS, preamble=PREAMBLE, plan=plan, attempts=1,
                        first_index=3)
    assert b.totals_met and folder_counts(tmp_path) == {"scenes": 8, "turns": 104, "n4": 10, "after": 4}
    # The second chunk without its first index would be held to scenes 0-4's quotas: refused, nothing overwritten.
    before = sorted(p.read_bytes() for p in tmp_path.glob("*.yaml"))
    with pytest.raises(ValueError, match="other attributes"):
        generate_scenes(writer, attrs[3:], tmp_path, speakers=SPEAKERS, preamble=PREAMBLE, plan=plan, attempts=1)
    assert sorted(p.read_bytes() for p in tmp_path.glob("*.yaml")) == before
