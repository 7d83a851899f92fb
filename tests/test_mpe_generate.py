"""The scene generator keeps only answers that pass the schema and the scene rules."""

import copy

from duplexeval.judges.verdict import Verdict
from duplexeval.scenes import load_scene
from duplexeval.scenes.generate import generate_scenes

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
    report = generate_scenes(writer, [ATTRS], tmp_path, speakers={"A": "slt", "B": "rms", "C": "awb", "D": "kal16"},
                             preamble={"text": "You are Aria.", "voice": "slt"}, attempts=3)
    assert writer.calls == [(0, 0), (0, 1), (0, 2)]
    assert len(report.written) == 1 and not report.failed
    assert "unparseable" in report.rejected[0] and "T is the last turn" in report.rejected[1]
    scene = load_scene(report.written[0])
    assert scene.attributes == ATTRS and scene.data["source"] == "generated:test-writer"


def test_a_scene_without_any_valid_sample_is_reported_failed(tmp_path):
    no_gold = copy.deepcopy(GOOD)
    no_gold["turns"][0]["text"] = "Let's bake."
    writer = ScriptedWriter([no_gold])
    report = generate_scenes(writer, [ATTRS], tmp_path, speakers={"A": "slt", "B": "rms", "C": "awb", "D": "kal16"},
                             preamble={"text": "You are Aria.", "voice": "slt"}, attempts=1)
    assert report.written == [] and len(report.failed) == 1
    assert "not stated before T" in report.rejected[0]
