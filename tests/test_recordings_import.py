"""Recordings across conventions: export ours in the MTR authors' layout, import them back, refuse bad files.

The round trip runs the embedded suite's oracle on mtr-safety-interruption (4 rounds,
teacher-forced, real Silero VAD, Whisper tiny.en and the offline judge), exports its
recordings with `--layout mtr-authors`, re-imports them with `import-recordings`, and
requires the re-scored records.jsonl / results.json to equal the original run's but for
the fields that say where the recordings came from.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from click.testing import CliRunner

from duplexeval.cli import cli
from duplexeval.commands.run import run_suite
from duplexeval.recordings.align import user_channel_problem
from duplexeval.specs import repo_root

BENCH = "mtr-safety-interruption"
SOURCE_FIELDS = {"model_caveat", "context", "inputs_sha256"}


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("runs")
    run, outcomes = run_suite("embedded", models=["oracle"], benchmarks=[BENCH], run_id="orig", runs_dir=root,
                              limit=None, clock=None)
    assert [o.status for o in outcomes] == ["scored"]
    out = tmp_path_factory.mktemp("exported")
    result = CliRunner().invoke(cli, ["export-recordings", str(run), "--layout", "mtr-authors", str(out)])
    assert result.exit_code == 0, result.output
    return run, out / "oracle" / BENCH


def import_args(src: Path, runs: Path, run_id: str, layout: str = "mtr-authors") -> list[str]:
    return ["import-recordings", BENCH, str(src), "--model", "oracle", "--layout", layout, "--suite", "embedded",
            "--runs-dir", str(runs), "--run-id", run_id]


def test_export_writes_the_authors_names_channels_and_round_start_file(exported):
    run, out = exported
    names = sorted(p.name for p in out.glob("*.wav"))
    assert names == [f"dialogue_safety_1_round_{r}_interruption.wav" for r in (1, 2, 3, 4)]
    starts = json.loads((out / "round_start.json").read_text())
    rounds = json.loads((run / "oracle" / BENCH / "rounds.json").read_text())
    for entry in starts:
        item = f"safety-int-01.r{entry['round_num']:02d}"
        assert entry["dialogue_id"] == "safety_1" and entry["scenario"] == "interruption"
        assert entry["timestamp"]["user_start"] == rounds[item]["round"]["user"]["start"]
        assert entry["timestamp"]["model_end"] == rounds[item]["window"]["end_s"]
    # left = user = what the model heard (channel 0 of our recording), byte for byte
    ours = run / "oracle" / BENCH / "items" / "safety-int-01.r02" / "recording.wav"
    assert (out / "dialogue_safety_1_round_2_interruption.wav").read_bytes() == ours.read_bytes()
    export = json.loads((out / "duplexeval-export.json").read_text())
    assert export["files"]["dialogue_safety_1_round_2_interruption.wav"]["item"] == "safety-int-01.r02"


def test_reimported_recordings_score_identically(exported, tmp_path):
    run, out = exported
    result = CliRunner().invoke(cli, import_args(out, tmp_path, "back"))
    assert result.exit_code == 0, result.output
    orig, back = run / "oracle" / BENCH, tmp_path / "back" / "oracle" / BENCH
    assert (orig / "records.jsonl").read_text() == (back / "records.jsonl").read_text()
    a, b = json.loads((orig / "results.json").read_text()), json.loads((back / "results.json").read_text())
    assert {k: v for k, v in a.items() if k not in SOURCE_FIELDS} == {k: v for k, v in b.items() if k not in SOURCE_FIELDS}
    assert b["context"]["mode"] == "recorded-elsewhere" and "recorded elsewhere" in b["model_caveat"]
    manifest = json.loads((tmp_path / "back" / "manifest.json").read_text())
    assert manifest["recorded-elsewhere"] is True and manifest["jobs"][0]["model_sha256"] is None
    assert manifest["sources"][0]["layout"] == "mtr-authors" and len(manifest["sources"][0]["files"]) == 4
    verified = CliRunner().invoke(cli, ["verify", str(tmp_path / "back")])
    assert verified.exit_code == 0 and "intact" in verified.output, verified.output
    # the rest of the tool chain reads it like any run
    compared = CliRunner().invoke(cli, ["compare", str(tmp_path / "back"), "--allow-missing", "--golden",
                                         str(repo_root() / "golden" / "embedded.yaml")])  # one benchmark of many
    assert compared.exit_code == 0, compared.output
    assert [line.split()[-1] for line in compared.output.splitlines()
            if line.startswith("embedded.mtr.oracle.safety-interruption.refusal")] == ["ok", "ok"], compared.output
    reported = CliRunner().invoke(cli, ["report", str(tmp_path / "back")])
    assert reported.exit_code == 0 and (tmp_path / "back" / "report.html").is_file(), reported.output
    assert "recorded elsewhere" in (tmp_path / "back" / "report.html").read_text()
    assert CliRunner().invoke(cli, ["sensitivity", str(tmp_path / "back")]).exit_code == 0
    assert CliRunner().invoke(cli, ["verify", str(tmp_path / "back")]).exit_code == 0
    # a second import into the same run and benchmark is refused, nothing overwritten
    again = CliRunner().invoke(cli, import_args(out, tmp_path, "back"))
    assert again.exit_code == 2 and "already holds" in again.output


def test_our_own_layout_imports_too(exported, tmp_path):
    run, _ = exported
    src = tmp_path / "ours"
    src.mkdir()
    for item in (run / "oracle" / BENCH / "items").iterdir():
        shutil.copyfile(item / "recording.wav", src / f"{item.name}.wav")
    result = CliRunner().invoke(cli, import_args(src, tmp_path, "ours-run", layout="duplexeval"))
    assert result.exit_code == 0, result.output
    assert (run / "oracle" / BENCH / "records.jsonl").read_text() == \
        (tmp_path / "ours-run" / "oracle" / BENCH / "records.jsonl").read_text()


def test_swapped_shifted_and_wrong_dialogue_files_are_refused_by_name(exported, tmp_path):
    from duplexeval.benchmarks.mtr.items import load_dialogues
    from duplexeval.commands.recordings import _bench

    _, out = exported
    src = tmp_path / "bad"
    shutil.copytree(out, src)
    swapped, shifted, wrong = (src / f"dialogue_safety_1_round_{r}_interruption.wav" for r in (1, 2, 3))
    audio, rate = sf.read(swapped, dtype="int16")
    sf.write(swapped, audio[:, ::-1], rate, subtype="PCM_16")
    audio, rate = sf.read(shifted, dtype="int16")
    delay = np.zeros((rate // 2, 2), dtype=np.int16)
    sf.write(shifted, np.concatenate([delay, audio])[:len(audio)], rate, subtype="PCM_16")
    audio, rate = sf.read(wrong, dtype="float32")
    other = next(d for d in load_dialogues(_bench(BENCH, "embedded")[0]) if d.id != "safety-int-01")
    user, _ = other.audio()
    heard = np.zeros(len(audio), dtype=np.float32)
    heard[:min(len(user), len(audio))] = user[:len(audio)]
    audio[:, 0] = heard
    sf.write(wrong, audio, rate, subtype="PCM_16")

    result = CliRunner().invoke(cli, import_args(src, tmp_path, "refused"))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "refused 3 of 4 file(s)" in result.output
    lines = {line.split(": ")[0].strip(): line for line in result.output.splitlines() if ".wav: " in line}
    assert "channels look swapped" in lines[swapped.name]
    assert "shifted by +0.50 s" in lines[shifted.name]
    assert "does not match the stimulus" in lines[wrong.name]
    assert not (tmp_path / "refused").exists()  # nothing written


def test_a_model_channel_of_nan_or_a_user_channel_of_inf_is_refused(exported, tmp_path):
    """Issue 39: an all-NaN model channel imported and scored `safe 1.000`; now refused at import
    (duplexeval.recordings.checks, shared by every family's importer)."""
    _, out = exported
    src = tmp_path / "nan-src"
    shutil.copytree(out, src)
    nan, inf = (src / f"dialogue_safety_1_round_{r}_interruption.wav" for r in (1, 2))
    audio, rate = sf.read(nan, dtype="float32")
    audio[:, 1] = np.nan
    sf.write(nan, audio, rate, subtype="FLOAT")
    frames = len(audio)
    audio, rate = sf.read(inf, dtype="float32")
    audio[100, 0] = np.inf
    sf.write(inf, audio, rate, subtype="FLOAT")
    result = CliRunner().invoke(cli, import_args(src, tmp_path, "nan"))
    assert result.exit_code == 2 and "refused 2 of 4 file(s)" in result.output, result.output
    lines = {line.split(": ")[0].strip(): line for line in result.output.splitlines() if ".wav: " in line}
    assert f"channel 1: {frames} of {frames} samples" in lines[nan.name]
    assert "non-finite samples (NaN or inf): channel 0: 1 of" in lines[inf.name]
    assert not (tmp_path / "nan").exists()


def test_unknown_and_missing_files_are_refused_naming_them(exported, tmp_path):
    _, out = exported
    src = tmp_path / "odd"
    shutil.copytree(out, src)
    (src / "dialogue_safety_1_round_4_interruption.wav").rename(src / "safety_1_round_4.wav")
    result = CliRunner().invoke(cli, import_args(src, tmp_path, "odd"))
    assert result.exit_code == 2
    assert "first that does not fit: safety_1_round_4.wav" in result.output
    assert "dialogue_safety_1_round_1_interruption.wav" in result.output  # what a name should look like
    (src / "safety_1_round_4.wav").unlink()
    result = CliRunner().invoke(cli, import_args(src, tmp_path, "odd"))
    assert result.exit_code == 2 and "1 of 4 planned round(s) have no file: dialogue_safety_1_round_4" in result.output


def test_duplex_mpe_recordings_are_refused_with_the_reason(tmp_path):
    result = CliRunner().invoke(cli, ["import-recordings", "mpe-explicit", str(tmp_path), "--model", "x"])
    assert result.exit_code == 2 and "no fixed stimulus" in result.output


# --- the check itself, on noise (fast) ------------------------------------------------------

RATE = 16000


def stereo(user: np.ndarray, model: np.ndarray) -> np.ndarray:
    return np.stack([user, model], axis=1)


@pytest.fixture
def stimulus() -> np.ndarray:
    return np.random.default_rng(0).normal(0, 0.1, 4 * RATE).astype(np.float32)


def test_a_faithful_copy_passes_and_a_re_encoded_one_too(stimulus):
    reply = np.random.default_rng(1).normal(0, 0.1, len(stimulus)).astype(np.float32)
    assert user_channel_problem(stereo(stimulus, reply), RATE, stimulus, 4.0) is None
    quantised = np.round(stimulus * 32767) / 32767 + np.random.default_rng(2).normal(0, 0.005, len(stimulus))
    assert user_channel_problem(stereo(quantised, reply), RATE, stimulus, 4.0) is None


def test_a_10_ms_offset_passes_and_a_30_ms_one_does_not(stimulus):
    silent = np.zeros(len(stimulus), dtype=np.float32)
    for ms, ok in ((10, True), (30, False)):
        d = RATE * ms // 1000
        late = np.concatenate([np.zeros(d, dtype=np.float32), stimulus])[:len(stimulus)]
        problem = user_channel_problem(stereo(late, silent), RATE, stimulus, 4.0)
        assert (problem is None) == ok, (ms, problem)
    assert "shifted by +0.03 s" in problem


def test_a_file_shorter_than_the_window_is_truncated(stimulus):
    problem = user_channel_problem(stereo(stimulus[:RATE * 3], stimulus[:RATE * 3]), RATE, stimulus, 4.0)
    assert problem.startswith("truncated: 3.00 s long")


def test_mono_is_refused(stimulus):
    assert "not stereo" in user_channel_problem(stimulus[:, None], RATE, stimulus, 4.0)
