"""`duplexeval data import mtr-duplexbench PATH` on a copy laid out exactly as the authors' README documents it.

The folder layout, file names, scenario strings and timing keys are the documented ones;
the JSON structure of an encoding is the one the authors' eval code reads for a round
(inferred: the encodings' own structure is undocumented, docs/data.md). The audio is a
stand-in: stereo noise bursts where the user and the assistant speak.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from click.testing import CliRunner

from duplexeval.benchmarks.mtr.published import GROUPS
from duplexeval.cli import cli

RATE = 8000
SMOOTH = [{"user_start": 0.5, "user_end": 1.5, "model_start": 2.0, "model_end": 3.0},
          {"user_start": 3.5, "user_end": 4.5, "model_start": 5.0, "model_end": 6.0}]
TIMING = {
    "smooth": ("smooth-turntaking", SMOOTH),
    "interruption": ("interruption", [
        {"user_start": 0.5, "user_end": 1.5, "interruption_start": 2.5, "interruption_end": 3.5,
         "model_start": 4.0, "model_end": 5.0},
        {"user_start": 5.5, "user_end": 6.0, "interruption_start": 5.5, "interruption_end": 6.5,
         "model_start": 7.0, "model_end": 7.5}]),
    "pause": ("pause-handling", [{**SMOOTH[0], "user_end": 2.0, "pause_start": 1.0, "pause_end": 1.5,
                                  "model_start": 2.5, "model_end": 3.2},
                                 {**SMOOTH[1], "user_end": 5.0, "pause_start": 4.0, "pause_end": 4.5,
                                  "model_start": 5.5, "model_end": 6.5}]),
    "background": ("background", [{**SMOOTH[0], "background_start": 2.2, "background_end": 2.8}, SMOOTH[1]]),
}


def stereo(rounds: list[dict[str, float]], seconds: float = 8.0) -> np.ndarray:
    rng = np.random.default_rng(0)
    audio = np.zeros((int(seconds * RATE), 2), dtype=np.float32)
    for ts in rounds:
        for ch, (a, b) in ((0, ("user_start", "user_end")), (1, ("model_start", "model_end"))):
            s, e = int(ts[a] * RATE), int(ts[b] * RATE)
            audio[s:e, ch] = rng.normal(0, 0.2, e - s)
    return audio


def entries(did: str, scenario: str, rounds: list[dict[str, float]]) -> list[dict]:
    return [{"dialogue_id": did, "round_num": k, "scenario": scenario, "timestamp": ts}
            for k, ts in enumerate(rounds, 1)]


def make_copy(root: Path) -> Path:
    """Every encoding of the README, one dialogue each, its stereo WAV in the folder the README names."""
    for group, rel, audio_folder in GROUPS:
        kind = group.split("-", 1)[1]
        if group.startswith("multi-"):
            scenario, rounds = "smooth-turntaking_interruption", [TIMING["smooth"][1][0], TIMING["interruption"][1][1]]
        else:
            scenario, rounds = TIMING[kind]
        did = f"{group.split('-')[0]}_{kind}_1"
        enc = root / "data/Scenarios_encoding" / rel
        enc.parent.mkdir(parents=True, exist_ok=True)
        enc.write_text(json.dumps(entries(did, scenario, rounds)))
        (root / audio_folder).mkdir(parents=True, exist_ok=True)
        sf.write(root / audio_folder / f"{did}.wav", stereo(rounds), RATE, subtype="PCM_16")
    (root / "data/Scenarios_encoding/dialogue_quality").mkdir(parents=True)
    (root / "data/Scenarios_encoding/dialogue_quality/semantic_turned_time_v3.jsonl").write_text("{}\n")
    return root


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "datasets"
    monkeypatch.setenv("DUPLEXEVAL_DATA_CACHE", str(root))
    return root


def run_import(path: Path):
    return CliRunner().invoke(cli, ["data", "import", "mtr-duplexbench", str(path)])


def test_the_documented_layout_imports_into_sidecars_the_paper_specs_read(tmp_path, cache):
    copy = make_copy(tmp_path / "MTR-DuplexBench")
    result = run_import(copy)
    assert result.exit_code == 0, result.output
    folder = cache / "mtr-duplexbench" / "imported"
    manifest = json.loads((folder / "duplexeval-import.json").read_text())
    assert manifest["source"]["verified"] is False  # not a `data fetch` snapshot: said so
    side = json.loads((folder / "single-interruption" / "single-interruption.single_interruption_1.json").read_text())
    r1, r2 = side["rounds"]
    assert r1["feature"] == "interruption" and r1["user"] == {"start": 2.5, "end": 3.5}
    assert side["opening"] == {"user": {"start": 0.5, "end": 1.5}, "assistant": {"start": 1.5, "end": 2.5}}
    assert r1["assistant"] == {"start": 4.0, "end": 5.0} and r2["events"][0]["type"] == "interruption"
    pause = json.loads((folder / "single-pause" / "single-pause.single_pause_1.json").read_text())
    assert pause["rounds"][0]["events"] == [{"type": "pause", "start": 1.0, "end": 1.5}]
    wav = copy / "data/Conversational_Features/original/single_pause_1.wav"
    assert pause["audio"] == str(wav.resolve())  # the published audio itself, never a copy or a re-rendering

    # what the paper suite's feature benchmarks then read (no suite override: the spec's own data)
    from duplexeval.benchmarks.mtr.items import load_dialogues, scored_rounds
    from duplexeval.specs import Registry

    bench = Registry.load().get("benchmark", "mtr-pause-handling").data
    dialogues = load_dialogues(bench)
    assert {d.id for d in dialogues} >= {"single-pause.single_pause_1", "multi-2.multi_2_1"}
    assert [s.item_id for s in scored_rounds(bench, dialogues)] == [
        "single-pause.single_pause_1.r01", "single-pause.single_pause_1.r02"]
    # a second import does not replace the first
    again = run_import(copy)
    assert again.exit_code == 2 and "already there" in again.output


@pytest.mark.parametrize("damage, expect", [
    (lambda e: {"rounds": e}, "found ['rounds']; first that does not fit: the top level is not a non-empty list"),
    (lambda e: [{**e[0], "turn": 1}, *e[1:]], "first that does not fit: [0] key 'turn' (unexpected"),
    (lambda e: [{k: v for k, v in e[0].items() if k != "scenario"}, *e[1:]], "[0] key 'scenario' (missing"),
    (lambda e: [{**e[0], "timestamp": {**e[0]["timestamp"], "user_begin": 0.1}}, *e[1:]],
     "[0].timestamp key 'user_begin' is not a known timing key"),
    (lambda e: [{**e[0], "scenario": "smooth"}, *e[1:]], "'smooth' is not one of"),
    (lambda e: [{**e[0], "scenario": "interruption"}, *e[1:]], "its timing is a pause round but its scenario"),
    (lambda e: [{**e[0], "timestamp": {**e[0]["timestamp"], "background_start": 1.0, "background_end": 1.2}}, *e[1:]],
     "times interruption, pause, background in one round".replace("interruption, ", "")),
    (lambda e: [{**e[0], "timestamp": {**e[0]["timestamp"], "user_end": "2.0"}}, *e[1:]],
     "[0].timestamp holds a value that is not a non-negative number"),
])
def test_an_unknown_structure_is_refused_naming_the_file_keys_and_first_misfit(tmp_path, cache, damage, expect):
    copy = make_copy(tmp_path / "copy")
    enc = copy / "data/Scenarios_encoding/single_scenario/scenario_encoding_pause.json"
    enc.write_text(json.dumps(damage(json.loads(enc.read_text()))))
    result = run_import(copy)
    assert result.exit_code == 2, result.output
    assert str(enc) in result.output and expect in result.output, result.output
    assert not (cache / "mtr-duplexbench").exists() or not any((cache / "mtr-duplexbench").iterdir())


def test_a_pause_round_timed_0_0_is_smooth_as_in_the_authors_pause_script(tmp_path, cache):
    copy = make_copy(tmp_path / "copy")
    enc = copy / "data/Scenarios_encoding/single_scenario/scenario_encoding_pause.json"
    e = json.loads(enc.read_text())
    e[1]["timestamp"].update(pause_start=0.0, pause_end=0.0)
    enc.write_text(json.dumps(e))
    assert run_import(copy).exit_code == 0
    side = json.loads((cache / "mtr-duplexbench/imported/single-pause/single-pause.single_pause_1.json").read_text())
    assert [r["feature"] for r in side["rounds"]] == ["pause", "smooth"] and "events" not in side["rounds"][1]


def test_missing_encodings_and_audio_are_refused_with_what_was_found(tmp_path, cache):
    copy = make_copy(tmp_path / "copy")
    (copy / "data/Scenarios_encoding/safety/scenario_encoding_interruption.json").unlink()
    result = run_import(copy)
    assert result.exit_code == 2 and "safety/scenario_encoding_interruption.json is missing" in result.output
    assert "safety/scenario_encoding_smooth.json" in result.output  # what it found instead
    copy = make_copy(tmp_path / "copy2")
    (copy / "data/Safety/audios/safety_smooth_1.wav").rename(copy / "data/Safety/audios/s1.wav")
    result = run_import(copy)
    assert result.exit_code == 2 and "'safety_smooth_1' has no audio" in result.output and "s1.wav" in result.output
    copy = make_copy(tmp_path / "copy3")
    mono = copy / "data/Instruction_Following/audios/instruction_smooth_1.wav"
    sf.write(mono, np.zeros(RATE, dtype=np.float32), RATE)
    result = run_import(copy)
    assert result.exit_code == 2 and "1 channel(s); a dialogue must be stereo" in result.output
    assert not (cache / "mtr-duplexbench" / "imported").exists()


def test_the_paper_suite_stops_at_once_with_the_fetch_and_import_commands(tmp_path, cache):
    runs = tmp_path / "runs"
    result = CliRunner().invoke(cli, ["run", "--suite", "paper-mtr", "--runs-dir", str(runs)])
    assert result.exit_code == 2, result.output
    assert "duplexeval data fetch mtr-duplexbench --revision COMMIT" in result.output
    assert 'duplexeval data import mtr-duplexbench "$(duplexeval data path mtr-duplexbench --revision COMMIT)"' \
        in result.output
    assert not runs.exists()  # stopped before the first job: no run folder, no model started
    # once imported, the published data set no longer stops it
    from duplexeval.data.imported import missing_data
    from duplexeval.runfolder.plan import plan_suite
    from duplexeval.specs import Registry

    assert run_import(make_copy(tmp_path / "copy")).exit_code == 0
    jobs = plan_suite(Registry.load(), "paper-mtr")
    assert missing_data([j.bench for j in jobs], "suite paper-mtr") is None
