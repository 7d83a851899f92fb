"""Scene files: the embedded suite is valid, and each rule violation is refused by name."""

import copy

import pytest
import yaml

from duplexeval.benchmarks.mpe.scenes import EMBEDDED_SCENES, conversation, load_scene, load_scenes
from duplexeval.benchmarks.mpe.scenes.rules import n4_placement_counts, n4_sides
from duplexeval.specs import SpecErrors

BASE = {
    "id": "taco",
    "attributes": {"setting": "dorm", "activity": "dinner", "relationship": "classmates",
                   "devices": "a smart speaker", "register": "casual"},
    "speakers": {"A": "slt", "B": "rms", "C": "awb", "D": "kal16"},
    "preamble": {"text": "You are Aria.", "voice": "slt"},
    "turns": [
        {"speaker": "A", "label": "N2", "text": "Tacos are nine dollars."},
        {"speaker": "B", "label": "N1", "text": "Aria is here."},
        {"speaker": "C", "label": "T", "variants": {"explicit": "Aria, which is cheapest?",
                                                  "implicit": "You heard the prices, which is cheapest?"},
         "gold_answer": "tacos, nine dollars"},
        {"speaker": "D", "label": "N4Q", "text": "Aria, do they take cards?"},
        {"speaker": "A", "label": "N4R", "text": "Never mind, they do."},
    ],
}


def write(tmp_path, data, name="scene.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def errors_of(tmp_path, data) -> str:
    with pytest.raises(SpecErrors) as exc:
        load_scene(write(tmp_path, data))
    return str(exc.value)


def test_a_valid_scene_loads_and_gives_two_conversations(tmp_path):
    scene = load_scene(write(tmp_path, BASE))
    explicit, implicit = conversation(scene, "explicit"), conversation(scene, "implicit")
    assert [t.label for t in explicit] == ["N2", "N1", "T", "N4Q", "N4R"]
    assert explicit[2].text.startswith("Aria") and not implicit[2].text.startswith("Aria")
    assert [t.text for i, t in enumerate(explicit) if i != 2] == [t.text for i, t in enumerate(implicit) if i != 2]
    assert explicit[2].gold_answer == "tacos, nine dollars" and explicit[0].voice == "slt"


def test_previous_turn_override_changes_only_that_condition(tmp_path):
    data = copy.deepcopy(BASE)
    data["turns"][2]["previous_text"] = {"implicit": "Our assistant is here."}
    scene = load_scene(write(tmp_path, data))
    assert conversation(scene, "explicit")[1].text == "Aria is here."
    assert conversation(scene, "implicit")[1].text == "Our assistant is here."


def test_two_t_turns_are_refused(tmp_path):
    data = copy.deepcopy(BASE)
    data["turns"][1] = copy.deepcopy(data["turns"][2])
    msg = errors_of(tmp_path, data)
    assert "scene.yaml" in msg and "exactly one T" in msg and "turns[2]" in msg


def test_no_t_turn_is_refused(tmp_path):
    data = copy.deepcopy(BASE)
    data["turns"][2] = {"speaker": "C", "label": "N2", "text": "Hmm."}
    assert "exactly one T turn, found 0" in errors_of(tmp_path, data)


def test_t_first_is_refused(tmp_path):
    data = copy.deepcopy(BASE)
    data["turns"] = [data["turns"][2]] + data["turns"][3:]
    assert "turns[0]: T is the first turn" in errors_of(tmp_path, data)


def test_t_last_is_refused(tmp_path):
    data = copy.deepcopy(BASE)
    data["turns"] = data["turns"][:3]
    assert "turns[2]: T is the last turn" in errors_of(tmp_path, data)


def test_gold_answer_not_stated_earlier_is_refused(tmp_path):
    data = copy.deepcopy(BASE)
    data["turns"][2]["gold_answer"] = "pizza, eleven dollars"
    msg = errors_of(tmp_path, data)
    assert "turns[2]" in msg and "not stated before T" in msg and "11" in msg and "pizza" in msg


def test_gold_answer_stated_only_after_t_is_refused(tmp_path):
    data = copy.deepcopy(BASE)
    data["turns"][0]["text"] = "Let's eat."
    data["turns"][4]["text"] = "Tacos are nine dollars."
    assert "not stated before T" in errors_of(tmp_path, data)


def test_gold_answer_in_words_matches_digits(tmp_path):
    data = copy.deepcopy(BASE)
    data["turns"][0]["text"] = "Tacos are $9."
    load_scene(write(tmp_path, data))


def test_n4r_not_directly_after_n4q_is_refused(tmp_path):
    data = copy.deepcopy(BASE)
    data["turns"].insert(4, {"speaker": "B", "label": "N2", "text": "Hmm."})
    msg = errors_of(tmp_path, data)
    assert "turns[3]: N4Q must be directly followed by its N4R" in msg
    assert "turns[5]: N4R must directly follow an N4Q" in msg


def test_schema_errors_name_file_line_and_field(tmp_path):
    data = copy.deepcopy(BASE)
    data["turns"][1]["label"] = "N5"
    data["turns"][2].pop("gold_answer")
    msg = errors_of(tmp_path, data)
    assert "scene.yaml:" in msg and "turns[1].label" in msg and "'gold_answer' is a required property" in msg


def test_unknown_speaker_voice_is_refused(tmp_path):
    data = copy.deepcopy(BASE)
    del data["speakers"]["D"]
    assert "turns[3]: speaker 'D' has no voice" in errors_of(tmp_path, data)


def _pair_first(data):
    """BASE with its N4 pair moved to the front: N4Q N4R N2 N1 T."""
    data = copy.deepcopy(data)
    data["turns"] = data["turns"][3:5] + data["turns"][:3]
    data["turns"].append({"speaker": "B", "label": "N2", "text": "Let's go."})  # T is never last
    return data


def test_an_n4_pair_before_t_is_valid(tmp_path):
    scene = load_scene(write(tmp_path, _pair_first(BASE)))
    assert [t.label for t in scene.turns] == ["N4Q", "N4R", "N2", "N1", "T", "N2"]
    assert n4_sides(scene) == (1, 0)


def test_an_n4_pair_ending_right_where_t_starts_is_valid(tmp_path):
    # N4R is the turn just before T: the pair ends where T's turn gap begins.
    data = copy.deepcopy(BASE)
    data["turns"] = data["turns"][:2] + data["turns"][3:5] + [data["turns"][2]]
    data["turns"].append({"speaker": "B", "label": "N2", "text": "Let's go."})
    scene = load_scene(write(tmp_path, data))
    assert [t.label for t in scene.turns] == ["N2", "N1", "N4Q", "N4R", "T", "N2"]
    assert n4_sides(scene) == (1, 0)


def test_an_n4_pair_starting_right_after_t_is_valid(tmp_path):
    scene = load_scene(write(tmp_path, BASE))  # ... T N4Q N4R
    assert n4_sides(scene) == (0, 1)


def test_an_n4_pair_around_t_is_refused(tmp_path):
    # N4Q T N4R: the pair would enclose T (the 3 s N4 gap would hold T).
    data = copy.deepcopy(BASE)
    data["turns"] = data["turns"][:2] + [data["turns"][3], data["turns"][2], data["turns"][4]]
    msg = errors_of(tmp_path, data)
    assert "turns[2]: N4Q must be directly followed by its N4R (T comes between" in msg
    assert "turns[4]: N4R must directly follow an N4Q (T comes between" in msg


def test_embedded_suite_has_24_valid_scenes_with_n4_pairs_before_and_after_t():
    scenes = load_scenes(EMBEDDED_SCENES)
    assert len(scenes) == 24  # the suite's run time is planned for 24 scenes (48 conversations)
    labels = {t.label for s in scenes for t in s.turns}
    assert labels == {"T", "N1", "N2", "N3", "N4Q", "N4R"}
    for s in scenes:
        assert 8 <= len(s.turns) <= 13, s.id
        assert sum(n4_sides(s)) >= 1, s.id
    sides = [n4_sides(s) for s in scenes]
    # Both sides of T, as the paper's counts imply (968 scenes with an N4 after T, 1,911 N4
    # events; App. A2.2, Table 7): 12 pairs before T (4 scenes with no pair after T), 20 after.
    assert (sum(b for b, _ in sides), sum(a for _, a in sides)) == (12, 20)
    assert sum(a == 0 for _, a in sides) == 4
    # The boundaries: a pair ending right before T, and one starting right after it.
    assert any(s.turns[s.t_index - 1].label == "N4R" for s in scenes)
    assert any(s.turns[s.t_index + 1].label == "N4Q" for s in scenes)
    # Stop is reported only with >= 30 eligible events (§4.3): a perfect agent must reach it.
    assert sum(t.label == "N4Q" for s in scenes for t in s.turns) == 32
    assert len({s.attributes["setting"] for s in scenes}) >= 12


def test_scenes_validate_prints_the_papers_n4_counts_for_a_set(tmp_path):
    from click.testing import CliRunner

    from duplexeval.cli import cli

    write(tmp_path, BASE, "after.yaml")  # pair after T
    write(tmp_path, {**_pair_first(BASE), "id": "first"}, "before.yaml")  # pair before T
    result = CliRunner().invoke(cli, ["scenes", "validate", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert ("2 scenes valid; 1 with an N4 after T, 1 with one before T; "
            "N4 events: 2 (1 after T, 1 before T)") in result.output
    counts = n4_placement_counts(load_scenes(EMBEDDED_SCENES))
    assert counts == {"scenes_with_n4_after_t": 20, "scenes_with_n4_before_t": 12,
                      "n4_events_after_t": 20, "n4_events_before_t": 12, "n4_events": 32}
