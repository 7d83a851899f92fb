"""The scene generator keeps only answers that pass the schema, the scene rules and the
judge spec's scene_plan (turn count, N4 pair count, the side of T each pair is on)."""

import copy
import re
import shutil

import pytest
import yaml

from duplexeval.benchmarks.mpe.scenes import load_scene
from duplexeval.benchmarks.mpe.scenes.generate import generate_scenes
from duplexeval.benchmarks.mpe.scenes.plan import ScenePlan
from duplexeval.judges.templates import PromptTemplate
from duplexeval.judges.verdict import Verdict
from duplexeval.specs import SpecErrors, load_spec, repo_root

WRITER_SPEC = repo_root() / "specs" / "judges" / "mpe-scene-generation.yaml"
SPEAKERS = {"A": "slt", "B": "rms", "C": "awb", "D": "kal16"}
PREAMBLE = {"text": "You are Aria.", "voice": "slt"}
# A test plan that lets the 4-turn GOOD scene through (the real one asks for 8 to 11 turns).
PLAN = ScenePlan(turns=(3, 11), n4_pairs=(1, 2), n4_placement="either")

ATTRS = {"setting": "kitchen", "activity": "baking", "relationship": "family", "devices": "a timer",
         "register": "casual"}
GOOD = {"turns": [
    {"speaker": "A", "label": "N2", "text": "The cake bakes for forty minutes."},
    {"speaker": "B", "label": "T", "variants": {"explicit": "Aria, how long does it bake?",
                                              "implicit": "You read the recipe, so how long does it bake?"},
     "gold_answer": "forty minutes"},
    {"speaker": "C", "label": "N4Q", "text": "Aria, do we need eggs?"},
    {"speaker": "D", "label": "N4R", "text": "Never mind, no eggs."},
]}


class ScriptedWriter:
    """Stands in for an LLM judge: sample k returns answers[k] (cached answers behave so)."""

    id = "test-writer"

    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    def decide(self, inputs, artifacts=None, *, sample=0):
        self.calls.append((inputs["scene_index"], sample))
        value = self.answers[sample]
        return Verdict(value=value, parsed_ok=value is not None, raw="", reason="", cache_key=f"k{sample}",
                       judge_id=self.id, label="test")


def test_invalid_answers_are_rejected_and_the_next_sample_is_used(tmp_path):
    t_last = copy.deepcopy(GOOD)
    t_last["turns"] = [t_last["turns"][0], {"speaker": "C", "label": "N3", "text": "Yum."}, t_last["turns"][1]]
    writer = ScriptedWriter([None, t_last, GOOD])
    report = generate_scenes(writer, [ATTRS], tmp_path, speakers=SPEAKERS, preamble=PREAMBLE, plan=PLAN, attempts=3)
    assert writer.calls == [(0, 0), (0, 1), (0, 2)]
    assert len(report.written) == 1 and not report.failed
    assert "unparseable" in report.rejected[0] and "T is the last turn" in report.rejected[1]
    scene = load_scene(report.written[0])
    assert scene.attributes == ATTRS and scene.data["source"] == "generated:test-writer"


def test_a_scene_without_any_valid_sample_is_reported_failed(tmp_path):
    no_gold = copy.deepcopy(GOOD)
    no_gold["turns"][0]["text"] = "Let's bake."
    writer = ScriptedWriter([no_gold])
    report = generate_scenes(writer, [ATTRS], tmp_path, speakers=SPEAKERS, preamble=PREAMBLE, plan=PLAN, attempts=1)
    assert report.written == [] and len(report.failed) == 1
    assert "not stated before T" in report.rejected[0]


# GOOD with its pair moved before T: N2 N4Q N4R T N2 (the pair ends right where T starts).
BEFORE = {"turns": [GOOD["turns"][0], *GOOD["turns"][2:4], GOOD["turns"][1],
                    {"speaker": "A", "label": "N2", "text": "Let's start."}]}
TWO_PAIRS = {"turns": [GOOD["turns"][0], *GOOD["turns"][2:4], *GOOD["turns"][1:4]]}


def run(tmp_path, answers, plan, n_scenes=1, attempts=None):
    writer = ScriptedWriter(answers)
    report = generate_scenes(writer, [ATTRS] * n_scenes, tmp_path, speakers=SPEAKERS, preamble=PREAMBLE, plan=plan,
                             attempts=attempts or len(answers))
    return writer, report


def test_the_writer_spec_deals_table_7s_totals_over_2000_scenes():
    plan = ScenePlan.from_spec(load_spec(WRITER_SPEC, "judge").data)
    assert (plan.turns, plan.n4_pairs, plan.n4_placement) == ((11, 16), (0, 2), "totals")
    assert len(plan.quotas) == 2000  # tests/test_mpe_table7_plan.py checks the sums


def test_either_placement_accepts_a_pair_right_before_t_and_one_after(tmp_path):
    _, report = run(tmp_path / "before", [BEFORE], PLAN)
    assert len(report.written) == 1 and not report.rejected
    _, report = run(tmp_path / "after", [GOOD], PLAN)
    assert len(report.written) == 1 and not report.rejected


def test_after_t_placement_rejects_a_pair_before_t(tmp_path):
    writer, report = run(tmp_path, [BEFORE, GOOD], ScenePlan((3, 11), (1, 2), "after-t"))
    assert len(report.written) == 1 and writer.calls == [(0, 0), (0, 1)]
    assert "turns[1]: N4 pair before T; the plan puts every pair after T" in report.rejected[0]


def test_before_t_placement_rejects_a_pair_after_t(tmp_path):
    _, report = run(tmp_path, [GOOD, TWO_PAIRS, BEFORE], ScenePlan((3, 11), (1, 2), "before-t"))
    assert len(report.written) == 1 and len(report.rejected) == 2
    assert "turns[2]: N4 pair after T; the plan puts every pair before T" in report.rejected[0]
    assert "turns[4]: N4 pair after T" in report.rejected[1]  # one pair on the wrong side is enough


def test_alternate_placement_gives_even_scenes_after_t_and_odd_scenes_before_t(tmp_path):
    plan = ScenePlan((3, 11), (1, 2), "alternate")
    assert [plan.placement_for(k) for k in range(4)] == ["after-t", "before-t", "after-t", "before-t"]
    assert plan.prompt_inputs(1)["n4_placement"] == "before-t"
    # Scene 1 refuses the after-T answer, then takes the before-T one.
    writer, report = run(tmp_path, [GOOD, BEFORE], plan, n_scenes=2)
    assert writer.calls == [(0, 0), (1, 0), (1, 1)] and len(report.written) == 2
    assert "gen-0001" in report.rejected[0] and "plan puts every pair before T" in report.rejected[0]


def test_pair_and_turn_counts_are_checked_inclusively_at_both_ends(tmp_path):
    # TWO_PAIRS (N2 N4Q N4R T N4Q N4R) has 6 turns and 2 pairs: at min = max it passes.
    _, report = run(tmp_path / "at", [TWO_PAIRS], ScenePlan((6, 6), (2, 2), "either"))
    assert len(report.written) == 1
    _, report = run(tmp_path / "pairs", [TWO_PAIRS], ScenePlan((3, 11), (1, 1), "either"))
    assert "2 N4Q/N4R pairs; the plan asks for 1 to 1" in report.rejected[0]
    _, report = run(tmp_path / "turns", [TWO_PAIRS], ScenePlan((7, 11), (1, 2), "either"))
    assert "6 turns; the plan asks for 7 to 11" in report.rejected[0]


@pytest.mark.parametrize("placement, says", [
    ("before-t", "Put every N4Q/N4R pair before T."),
    ("after-t", "Put every N4Q/N4R pair after T."),
    ("either", "Each N4Q/N4R pair may come before T or after T"),
])
def test_the_prompt_words_the_plan(placement, says):
    spec = load_spec(WRITER_SPEC, "judge")
    template = PromptTemplate(spec.path.parent / spec.data["template"]["path"], spec.data["template"]["version"])
    plan = ScenePlan((8, 11), (1, 2), placement)
    inputs = {"attributes": ATTRS, "speakers": sorted(SPEAKERS), "scene_index": 0, **plan.prompt_inputs(0)}
    system = template.render(inputs)[0]["content"]
    assert says in system and "Write 8 to 11 turns" in system and "Include 1 to 2 N4Q/N4R pair(s)" in system
    others = {"before-t": "pair before T.", "after-t": "pair after T.", "either": "may come before T or after T"}
    assert not any(v in system for k, v in others.items() if k != placement)


@pytest.mark.parametrize("block, message", [
    (None, "`scene_plan` is missing"),
    ({"turns": {"min": 9, "max": 8}, "n4_pairs": {"min": 1, "max": 2}, "n4_placement": "either"},
     "scene_plan.turns: min 9 is above max 8"),
    ({"turns": {"min": 8, "max": 11}, "n4_pairs": {"min": 1, "max": 2}, "n4_placement": "sideways"},
     "scene_plan.n4_placement 'sideways'"),
])
def test_a_bad_scene_plan_is_a_clear_error(block, message):
    data = {} if block is None else {"scene_plan": block}
    with pytest.raises(ValueError, match=re.escape("writer.yaml: " + message)):
        ScenePlan.from_spec(data, "writer.yaml")


def test_the_judge_schema_refuses_an_unknown_placement_and_a_plan_on_another_task(tmp_path):
    data = yaml.safe_load(WRITER_SPEC.read_text(encoding="utf-8"))
    shutil.copytree(WRITER_SPEC.parent / "prompts", tmp_path / "prompts")
    data["scene_plan"]["n4_placement"] = "sideways"
    path = tmp_path / WRITER_SPEC.name  # the id must equal the file name
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(SpecErrors, match="scene_plan.n4_placement: 'sideways' is not one of"):
        load_spec(path, "judge")
    data["scene_plan"]["n4_placement"] = "either"
    data["task"] = "mpe-answer"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(SpecErrors) as exc:
        load_spec(path, "judge")
    assert "task: 'mpe-scene-generation' was expected" in str(exc.value)
    assert "must equal the file name" not in str(exc.value)
