"""`duplexeval data import duplex-mpe PATH` on a copy holding what the paper says the set holds.

The copy's file layout is undocumented; the rows here have the one structure the importer
accepts (docs/data.md, inferred from the paper: one row per conversation, explicit and
implicit, turns with speaker, label, text, T's gold answer, each turn's own clip). The
clips are stand-ins (noise of a given length), which is all the scheduler reads of them.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from click.testing import CliRunner

from duplexeval.cli import cli

TURNS = [("A", "N2", "The pie is eight dollars."), ("B", "N3", "Everything smells good."),
         ("C", "N2", "Can we get a box?"), ("A", "T", None), ("B", "N4Q", "Aria, do they close at nine?"),
         ("C", "N4R", "Never mind, the sign says nine."), ("D", "N1", "Aria keeps our budget.")]
T_TEXT = {"explicit": "Aria, how much is the pie?", "implicit": "You keep our budget, so how much is the pie?"}


def make_copy(root: Path, *, with_audio: bool = True, changed_before_t: bool = True) -> Path:
    rows = []
    rng = np.random.default_rng(0)
    for condition in ("explicit", "implicit"):
        turns = []
        for i, (speaker, label, text) in enumerate(TURNS):
            t = {"speaker": speaker, "label": label, "text": T_TEXT[condition] if label == "T" else text}
            if label == "T":
                t["gold_answer"] = "eight dollars"
            if i == 2 and changed_before_t and condition == "implicit":
                t["text"] = "Can we get a box, since you are keeping count?"
            if with_audio:
                clip = root / "audio" / f"bakery-{condition}-{i}.wav"
                clip.parent.mkdir(parents=True, exist_ok=True)
                sf.write(clip, rng.normal(0, 0.1, 16000 + 800 * i).astype(np.float32), 16000)
                t["audio"] = clip.relative_to(root).as_posix()
            turns.append(t)
        rows.append({"scene_id": "Bakery_01", "condition": condition, "turns": turns})
    (root / "data").mkdir(parents=True, exist_ok=True)
    (root / "data" / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "datasets"
    monkeypatch.setenv("DUPLEXEVAL_DATA_CACHE", str(root))
    return root


def run_import(path: Path):
    return CliRunner().invoke(cli, ["data", "import", "duplex-mpe", str(path)])


def test_published_rows_become_scenes_that_keep_their_clips(tmp_path, cache):
    copy = make_copy(tmp_path / "Duplex-MPE")
    result = run_import(copy)
    assert result.exit_code == 0, result.output
    assert "scenes: 1 scenes (the paper: 2000 per condition)" in result.output
    from duplexeval.benchmarks.mpe.scenes.loader import load_bench_scenes
    from duplexeval.benchmarks.mpe.scenes.render import render_turns
    from duplexeval.specs import Registry

    bench = Registry.load().get("benchmark", "mpe-implicit").data  # the paper spec, no override: imported data
    (scene,) = load_bench_scenes(bench)
    assert scene.id == "bakery-01" and scene.gold_answer == "eight dollars"
    t = scene.turns[3]
    assert t.variants == T_TEXT and t.previous_text["implicit"].endswith("keeping count?")
    rendered = render_turns(scene, "implicit", 16000)
    clip, _ = sf.read(copy / "audio" / "bakery-implicit-3.wav", dtype="float32")
    assert np.array_equal(rendered.turns[3].audio, clip)  # the published clip itself: exact boundaries
    assert [len(r.audio) for r in rendered.turns] == [16000 + 800 * i for i in range(len(TURNS))]


def test_rows_without_audio_are_marked_as_spoken_by_our_tts(tmp_path, cache):
    assert run_import(make_copy(tmp_path / "c", with_audio=False)).exit_code == 0
    import yaml

    scene = yaml.safe_load((cache / "duplex-mpe/imported/scenes/bakery-01.yaml").read_text())
    assert "spoken by the suite's TTS" in scene["source"] and "audio" not in scene


def add_scene(copy: Path, scene_id: str = "Market_02", label=lambda label: label) -> None:
    """A second scene (no audio needed: the first's rows decide), rows appended to their own file."""
    rows = []
    for condition in ("explicit", "implicit"):
        turns = [{"speaker": sp, "label": label(lb), "text": T_TEXT[condition] if lb == "T" else tx,
                  **({"gold_answer": "eight dollars"} if lb == "T" else {})} for sp, lb, tx in TURNS]
        rows.append({"scene_id": scene_id, "condition": condition, "turns": turns})
    (copy / "data" / f"{scene_id}.json").write_text(json.dumps(rows))


DAMAGES = [
    (lambda rows: [{**rows[0], "dialogue": 1}, rows[1]], "key 'dialogue' (unexpected"),
    (lambda rows: [{k: v for k, v in rows[0].items() if k != "condition"}, rows[1]], "key 'condition' (missing"),
    (lambda rows: [rows[0]], "scene bakery-01 has no implicit row"),
    (lambda rows: [rows[0], {**rows[1], "turns": [{**rows[1]["turns"][0], "addressee": "C"}, *rows[1]["turns"][1:]]}],
     "turns[0]: unknown structure: found ['addressee', 'audio', 'label', 'speaker', 'text']"),
    (lambda rows: [rows[0], {**rows[1], "turns": [{k: v for k, v in t.items() if k != "audio"} for t in rows[1]["turns"]]}],
     "some turns carry audio and some do not"),
    (lambda rows: [rows[0], {**rows[1], "turns": [{**t, "label": "N4_X"} if t["label"] == "N4Q" else t
                                                  for t in rows[1]["turns"]]}], "label 'N4_X'"),
    (lambda rows: [rows[0], {**rows[1], "turns": [{**t, "audio": "audio/nan.wav"} if t["label"] == "T" else t
                                                  for t in rows[1]["turns"]]}],
     "audio 'audio/nan.wav': non-finite samples (NaN or inf): channel 0: 8000 of 8000 samples"),
]


def damaged_copy(root: Path, damage) -> Path:
    copy = make_copy(root)
    sf.write(copy / "audio" / "nan.wav", np.full(8000, np.nan, dtype=np.float32), 16000, subtype="FLOAT")
    f = copy / "data" / "test.jsonl"
    rows = [json.loads(line) for line in f.read_text().splitlines()]
    f.write_text("".join(json.dumps(r) + "\n" for r in damage(rows)))
    return copy


@pytest.mark.parametrize("damage, expect", DAMAGES)
def test_a_damaged_or_unknown_scene_is_skipped_by_name_and_the_rest_imported(tmp_path, cache, damage, expect):
    copy = damaged_copy(tmp_path / "c", damage)
    add_scene(copy)
    result = run_import(copy)
    assert result.exit_code == 4, result.output   # partial: README "Exit codes"
    assert str(copy / "data" / "test.jsonl") in result.output and expect in result.output, result.output
    assert "partial import: 1 sample(s) skipped" in result.output
    assert sorted(p.name for p in (cache / "duplex-mpe" / "imported" / "scenes").iterdir()) == ["market-02.yaml"]


@pytest.mark.parametrize("damage, expect", DAMAGES[:2])
def test_a_copy_of_which_no_scene_fits_is_refused(tmp_path, cache, damage, expect):
    copy = damaged_copy(tmp_path / "c", damage)
    result = run_import(copy)
    assert result.exit_code == 2 and "no scene fits" in result.output and expect in result.output, result.output
    assert not (cache / "duplex-mpe" / "imported").exists()


def test_the_project_page_spelling_n4_q_with_the_pair_before_t_imports_as_n4q(tmp_path, cache):
    copy = make_copy(tmp_path / "c")
    spelt = {"N4Q": "N4_Q", "N4R": "N4_R"}
    # the project page's scenes: an N4 question/answer before T, labels written N4_Q / N4_R
    before_t = [("A", "N2", "The pie is eight dollars."), ("B", "N4Q", "Aria, is it warm?"),
                ("C", "N4R", "Never mind, it is warm."), ("A", "T", None), ("D", "N1", "Aria keeps our budget.")]
    rows = []
    for condition in ("explicit", "implicit"):
        rows.append({"scene_id": "Page_03", "condition": condition, "turns": [
            {"speaker": sp, "label": spelt.get(lb, lb), "text": T_TEXT[condition] if lb == "T" else tx,
             **({"gold_answer": "eight dollars"} if lb == "T" else {})} for sp, lb, tx in before_t]})
    (copy / "data" / "page.json").write_text(json.dumps(rows))
    result = run_import(copy)
    assert result.exit_code == 0, result.output
    from duplexeval.benchmarks.mpe.scenes.loader import load_scenes
    from duplexeval.benchmarks.mpe.scenes.rules import n4_sides

    scene = next(s for s in load_scenes(cache / "duplex-mpe" / "imported" / "scenes") if s.id == "page-03")
    assert [t.label for t in scene.turns] == ["N2", "N4Q", "N4R", "T", "N1"]
    assert n4_sides(scene) == (1, 0)


def test_a_pair_that_differs_outside_t_imports_and_says_where(tmp_path, cache):
    copy = damaged_copy(tmp_path / "c", lambda rows: [rows[0], {**rows[1], "turns": [
        {**rows[1]["turns"][0], "text": "The pie costs eight."}, *rows[1]["turns"][1:]]}])
    result = run_import(copy)
    assert result.exit_code == 0, result.output
    assert "1 scenes whose conversations differ besides T, 1 of them outside T" in result.output
    differ = json.loads((cache / "duplex-mpe" / "imported" / "differences.json").read_text())
    assert differ == {"bakery-01": [{"turn": 0, "label": "N2", "where": "outside T"},
                                    {"turn": 2, "label": "N2", "where": "before T"}]}
    from duplexeval.benchmarks.mpe.scenes.loader import load_scenes
    from duplexeval.benchmarks.mpe.scenes.model import conversation

    (scene,) = load_scenes(cache / "duplex-mpe" / "imported" / "scenes")
    assert conversation(scene, "explicit")[0].text == "The pie is eight dollars."
    assert conversation(scene, "implicit")[0].text == "The pie costs eight."   # each condition plays its own


def test_a_copy_without_rows_is_refused_with_what_it_holds(tmp_path, cache):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "README.md").write_text("x")
    result = run_import(tmp_path / "c")
    assert result.exit_code == 2 and "no *.json / *.jsonl rows (found ['README.md'])" in result.output
