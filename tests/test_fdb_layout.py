"""Full-Duplex-Bench's per-sample folder layout (duplexeval.benchmarks.fdb.layout*): read, refuse by name, import,
export. The copies here are hand-made in the documented layout (dataset/README.md of the authors' code)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from duplexeval.benchmarks.fdb import layout, layout_export, layout_import
from duplexeval.benchmarks.fdb.layout import FdbLayoutError

RATE = 16000


def wav(path: Path, seconds: float = 1.0, channels: int = 1) -> None:
    data = 0.1 * np.sin(np.arange(int(RATE * seconds)) / 10.0)
    sf.write(path, np.stack([data] * channels, axis=1) if channels > 1 else data, RATE)


def sample(folder: Path, files: dict[str, object]) -> Path:
    folder.mkdir(parents=True)
    for name, content in files.items():
        if name.endswith(".wav"):
            wav(folder / name)
        else:
            (folder / name).write_text(json.dumps(content))
    return folder


META = {"context_text": "Tell me about Paris.", "current_turn_text": "And the food?", "timestamps": [0.2, 0.6]}
PAUSE = [{"text": "[PAUSE]", "timestamp": [0.3, 0.5]}]
INTERRUPT = [{"context": "Suggest books.", "interrupt": "Fiction, please.", "timestamp": [0.4, 0.7]}]


def copy(root: Path) -> Path:
    sample(root / "v1_0" / "candor_pause_handling" / "1", {"input.wav": 1, "pause.json": PAUSE,
                                                          "transcription.json": [{"text": "hi", "timestamp": [0, 1]}]})
    sample(root / "v1_0" / "synthetic_user_interruption" / "7", {
        "input.wav": 1, "context.wav": 1, "interrupt.wav": 1, "interrupt.json": INTERRUPT})
    sample(root / "v1_0" / "icc_backchannel" / "3", {"input.wav": 1})   # transcription.json: "if available"
    sample(root / "v1_5" / "background_speech" / "12", {"input.wav": 1, "clean_input.wav": 1, "metadata.json": META})
    return root


def test_a_copy_in_the_documented_layout_is_read_whole(tmp_path):
    samples = layout.scan(copy(tmp_path / "fdb"))
    assert [(s.version, s.task, s.sample_id) for s in samples] == [
        ("v1_0", "candor_pause_handling", "1"), ("v1_0", "icc_backchannel", "3"),
        ("v1_0", "synthetic_user_interruption", "7"), ("v1_5", "background_speech", "12")]


def test_a_version_folder_given_directly_is_read_too(tmp_path):
    root = copy(tmp_path / "fdb")
    assert [s.task for s in layout.scan(root / "v1_5")] == ["background_speech"]


@pytest.mark.parametrize("break_it, complaint", [
    (lambda r: (r / "v1_5" / "overlap_talk").mkdir(), "overlap_talk: not a v1.5 task folder"),
    (lambda r: (r / "v1_5" / "background_speech" / "12" / "notes.txt").write_text("x"),
     "'notes.txt' is not a file of the v1.5 background_speech layout"),
    (lambda r: (r / "v1_5" / "background_speech" / "12" / "clean_input.wav").unlink(), "clean_input.wav is missing"),
    (lambda r: (r / "v1_5" / "background_speech" / "12" / "metadata.json").write_text(
        json.dumps({**META, "timestamps": [0.6, 0.2]})), "metadata.json: timestamps[1]: expected an end"),
    (lambda r: (r / "v1_5" / "background_speech" / "12" / "metadata.json").write_text('{"context_text": '),
     "metadata.json:1: not JSON"),
    (lambda r: (r / "v1_0" / "candor_pause_handling" / "1" / "pause.json").write_text(
        json.dumps([{"label": "[PAUSE]"}])), "pause.json: [0]: expected {text: str, timestamp: [start, end]}"),
    (lambda r: (r / "v1_0" / "synthetic_user_interruption" / "7" / "interrupt.json").write_text(
        json.dumps([{**INTERRUPT[0], "interrupt": None}])), "interrupt.json: [0].interrupt: expected text"),
    (lambda r: (r / "v1_0" / "icc_backchannel" / "3" / "input.wav").write_bytes(b"RIFF0000"), "not a readable WAV"),
    (lambda r: (r / "v1_0" / "icc_backchannel" / "4").write_text("x"), "expected a sample folder <ID>/"),
])
def test_what_does_not_fit_is_refused_by_name(tmp_path, break_it, complaint):
    root = copy(tmp_path / "fdb")
    break_it(root)
    with pytest.raises(FdbLayoutError, match=None) as err:
        layout.scan(root)
    assert complaint in str(err.value), str(err.value)


def test_a_folder_that_is_no_copy_names_what_it_expected(tmp_path):
    (tmp_path / "x" / "audio").mkdir(parents=True)
    with pytest.raises(FdbLayoutError, match="expected v1_0/ and/or v1_5/.*found audio"):
        layout.scan(tmp_path / "x")


def test_asr_files_allow_an_open_end_and_read_as_words(tmp_path):
    path = tmp_path / "output.json"
    path.write_text(json.dumps({"text": "a b", "chunks": [{"text": "a", "timestamp": [0.0, 0.5]},
                                                           {"text": "b", "timestamp": [0.5, None]}]}))
    assert layout.read_asr(path) == [layout.Word("a", 0.0, 0.5), layout.Word("b", 0.5, None)]
    path.write_text(json.dumps({"text": "a", "words": []}))
    with pytest.raises(FdbLayoutError, match=r"expected \{text, chunks\}, found \['text', 'words'\]"):
        layout.read_asr(path)


def test_import_copies_the_data_and_indexes_every_sample(tmp_path):
    root = copy(tmp_path / "fdb")
    # a sample that already went through their pipeline: its model files are not data
    wav(root / "v1_5" / "background_speech" / "12" / "output.wav")
    out = tmp_path / "out"
    report = layout_import.convert(root, out)
    lines = report.lines
    assert report.skipped == {}
    assert "v1.5 background_speech: 1 samples (the dataset README: 100)" in lines
    assert lines[-1].startswith("1 samples held model outputs")
    rows = {r["id"]: r for r in layout_import.read_index(out)}
    assert rows["12"]["event"]["timestamp"] == [0.2, 0.6] and rows["12"]["not_imported"] == ["output.wav"]
    assert rows["7"]["event"] == {"source": "interrupt.json", "timestamp": [0.4, 0.7], "context": "Suggest books.",
                                  "interrupt": "Fiction, please."}
    assert rows["1"]["event"]["label"] == "[PAUSE]" and rows["3"]["event"] is None
    assert (out / "v1_5" / "background_speech" / "12" / "clean_input.wav").is_file()
    assert not (out / "v1_5" / "background_speech" / "12" / "output.wav").exists()
    with pytest.raises(FdbLayoutError, match="no index.json"):
        layout_import.read_index(tmp_path)


def words_at_loud_stretches(audio: np.ndarray, rate: int) -> list[tuple[str, float, float]]:
    """A stand-in for the ASR (named so): one word per 0.25 s block whose peak is above 0.05."""
    n = rate // 4
    return [(f"w{k}", k * 0.25, (k + 1) * 0.25) for k in range(len(audio) // n)
            if np.abs(audio[k * n:(k + 1) * n]).max() > 0.05]


def test_export_writes_their_layout_and_crops_the_asr_after_an_interruption(tmp_path):
    src = copy(tmp_path / "fdb")
    heard = np.zeros(RATE)
    said = np.zeros(RATE)
    said[: RATE // 4] = 0.3                 # the model talks in 0-0.25 s (before the interruption ends at 0.7 s)
    said[3 * RATE // 4:] = 0.3              # and again in 0.75-1.0 s
    rec = tmp_path / "rec.wav"
    sf.write(rec, np.stack([heard, said], axis=1), RATE)
    items = {"int-7": (rec, src / "v1_0" / "synthetic_user_interruption" / "7", None),
             "bg-12": (rec, src / "v1_5" / "background_speech" / "12", rec),
             "broken": (tmp_path / "missing.wav", None, None)}
    out = tmp_path / "export"
    written, skipped = layout_export.export_items(items, out, words_at_loud_stretches,
                                                  asr={"backend": "stand-in"}, source="test")
    assert written == ["bg-12", "int-7"] and "unreadable recording" in skipped["broken"]
    # as their ASR step: only speech after 0.7 s is transcribed, times shifted back by 0.7
    crop = json.loads((out / "int-7" / "output.json").read_text())
    assert [c["timestamp"] for c in crop["chunks"]] == [[pytest.approx(0.7), pytest.approx(0.95)]]
    full = json.loads((out / "bg-12" / "output.json").read_text())
    assert [c["timestamp"] for c in full["chunks"]] == [[0.0, 0.25], [0.75, 1.0]] and full["text"] == "w0 w3"
    # what was exported is their layout: it reads back through the same checks
    assert layout.check_sample(out / "int-7", "v1_0", "synthetic_user_interruption").files[-2:] == (
        "output.json", "output.wav")
    assert "clean_output.json" in layout.check_sample(out / "bg-12", "v1_5", "background_speech").files
    assert not (out / layout_export.EXPORT_FILE).exists(), "their scripts take every entry for a sample folder"
    manifest = json.loads(layout_export.manifest_path(out).read_text())
    assert manifest["asr"] == {"backend": "stand-in"} and set(manifest["samples"]) == {"bg-12", "int-7"}
    with pytest.raises(FdbLayoutError, match="not empty"):
        layout_export.export_items(items, out, words_at_loud_stretches, asr={}, source="test")


def test_a_bench_folder_exports_finished_items_with_their_clean_twin(tmp_path):
    from duplexeval.runner.integrity import artifact_fields

    src = copy(tmp_path / "fdb")
    bench = tmp_path / "run" / "babbler" / "fdb-background"
    for item, ok in (("12", True), ("12.clean", True), ("13", False)):
        d = bench / "items" / item
        d.mkdir(parents=True)
        sf.write(d / "recording.wav", np.zeros((RATE, 2)), RATE, subtype="PCM_16")
        (d / "events.jsonl").write_text("")
        status = {"status": "ok" if ok else "error", "reason": None if ok else "model fault"}
        status.update(artifact_fields(d, ok))
        (d / "status.json").write_text(json.dumps(status))
    written, skipped = layout_export.export_bench_dir(
        bench, tmp_path / "out", lambda item: src / "v1_5" / "background_speech" / "12", words_at_loud_stretches,
        asr={"backend": "stand-in"}, clean_for=lambda item: None if item.endswith(".clean") else f"{item}.clean")
    assert written == ["12"]
    assert skipped == {"13": "error: model fault", "13.clean": "unfinished"}
    assert "clean_output.wav" in layout.check_sample(tmp_path / "out" / "12", "v1_5", "background_speech").files


# --- the copies as the public evidence shows them (issue 35) ---------------------------------

def public_copy(root: Path) -> Path:
    """A copy laid out the way users of the drive folder find it: release folders written v1.0/ and v1.5/,
    v1.5 samples with the user's opening (context.wav) and the event's clip beside input.wav, the event's
    text under backchannel_text / background_text, ICC's pooled human backchannels at task level, and a
    v1.0 sample without transcription.json."""
    sample(root / "v1.0" / "candor_pause_handling" / "1", {"input.wav": 1, "pause.json": PAUSE})
    sample(root / "v1.0" / "icc_backchannel" / "3", {"input.wav": 1})
    (root / "v1.0" / "icc_backchannel" / "aggregated_all_data.json").write_text(json.dumps({"3": [[0.1, 0.3]]}))
    sample(root / "v1.5" / "user_backchannel" / "5", {
        "input.wav": 1, "clean_input.wav": 1, "context.wav": 1, "backchannel.wav": 1,
        "metadata.json": {"context_text": "Tell me about Paris.", "backchannel_text": "uh huh", "timestamps": [0.2, 0.6]}})
    sample(root / "v1.5" / "background_speech" / "12", {
        "input.wav": 1, "clean_input.wav": 1, "context.wav": 1, "background.wav": 1,
        "metadata.json": {"context_text": "Tell me about Paris.", "background_text": "The train leaves at nine.",
                          "timestamps": [0.2, 0.6]}})
    sample(root / "v1.5" / "talking_to_other" / "8", {
        "input.wav": 1, "clean_input.wav": 1, "context.wav": 1, "current_turn.wav": 1, "metadata.json": META})
    return root


def test_the_public_layout_imports_every_sample(tmp_path):
    out = tmp_path / "out"
    report = layout_import.convert(public_copy(tmp_path / "fdb"), out)
    assert report.skipped == {}
    rows = {(r["task"], r["id"]): r for r in layout_import.read_index(out)}
    assert sorted(rows) == [("background_speech", "12"), ("candor_pause_handling", "1"), ("icc_backchannel", "3"),
                            ("talking_to_other", "8"), ("user_backchannel", "5")]
    # both spellings of the event's text read as the event text, the key it came from kept
    assert rows[("user_backchannel", "5")]["event"]["current_turn_text"] == "uh huh"
    assert rows[("user_backchannel", "5")]["event"]["event_text_key"] == "backchannel_text"
    assert rows[("background_speech", "12")]["event"]["event_text_key"] == "background_text"
    assert "event_text_key" not in rows[("talking_to_other", "8")]["event"]
    # release folders land under this project's names; the clips and the task-level file are kept
    assert (out / "v1_5" / "user_backchannel" / "5" / "backchannel.wav").is_file()
    assert (out / "v1_5" / "background_speech" / "12" / "context.wav").is_file()
    assert (out / "v1_0" / "icc_backchannel" / "aggregated_all_data.json").is_file()
    assert "task file v1_0/icc_backchannel/aggregated_all_data.json" in report.lines


def test_both_spellings_of_one_release_are_refused(tmp_path):
    root = public_copy(tmp_path / "fdb")
    (root / "v1_0").mkdir()
    with pytest.raises(FdbLayoutError, match=r"both v1_0/ and v1\.0/ hold v1\.0: keep one"):
        layout.survey(root)


def _truncate(path: Path, frames: int) -> None:
    sf.write(path, np.full(frames, 0.1), RATE)


@pytest.mark.parametrize("break_it, complaint", [
    # issue 39: an input truncated to 28 samples, a pause annotated after the audio's end, NaN samples
    (lambda d: _truncate(d / "v1.0" / "candor_pause_handling" / "1" / "input.wav", 28),
     "pause.json event 0 ([PAUSE]) ends at 0.500 s, after the audio's end (0.002 s, 28 samples at 16000 Hz)"),
    (lambda d: (d / "v1.0" / "candor_pause_handling" / "1" / "pause.json").write_text(
        json.dumps([{"text": "[PAUSE]", "timestamp": [0.3, 4.0]}])), "ends at 4.000 s, after the audio's end"),
    (lambda d: sf.write(d / "v1.0" / "candor_pause_handling" / "1" / "input.wav",
                        np.full(RATE, np.nan, dtype=np.float32), RATE, subtype="FLOAT"),
     "non-finite samples (NaN or inf): channel 0: 16000 of 16000 samples"),
    (lambda d: (d / "v1.5" / "user_backchannel" / "5" / "metadata.json").write_text(
        json.dumps({"context_text": "a", "laugh_text": "ha", "timestamps": [0.2, 0.6]})),
     "expected the event's text under one of current_turn_text, backchannel_text, background_text"),
    (lambda d: (d / "v1.5" / "user_backchannel" / "5" / "laugh.wav").write_bytes(b""),
     "'laugh.wav' is not a file of the v1.5 user_backchannel layout"),
    (lambda d: (d / "v1.0" / "icc_backchannel" / "aggregated_all_data.json").write_text('{"3": [[0.3, 0.1]]}'),
     "aggregated_all_data.json: 3[0][1]: expected an end"),
    (lambda d: (d / "v1.5" / "overlap_talk").mkdir(), "overlap_talk: not a v1.5 task folder"),
])
def test_a_damaged_or_unknown_sample_is_skipped_by_name_and_the_rest_imported(tmp_path, break_it, complaint):
    root = public_copy(tmp_path / "fdb")
    break_it(root)
    report = layout_import.convert(root, tmp_path / "out")
    assert len(report.skipped) == 1, report.skipped
    assert complaint in next(iter(report.skipped.values())), report.skipped
    assert len(layout_import.read_index(tmp_path / "out")) >= 4


def test_data_import_says_partial_and_exits_4(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from duplexeval.cli import cli

    root = public_copy(tmp_path / "fdb")
    _truncate(root / "v1.0" / "candor_pause_handling" / "1" / "input.wav", 28)
    result = CliRunner().invoke(cli, ["data", "import", "fdb", str(root), "--cache", str(tmp_path / "c")])
    assert result.exit_code == 4, result.output + result.stderr
    assert "partial import: 1 sample(s) skipped" in result.stderr and "28 samples" in result.stderr
    assert "v1.5 user_backchannel: 1 samples" in result.output and "Traceback" not in result.stderr


def test_a_copy_where_nothing_fits_is_refused(tmp_path):
    root = tmp_path / "fdb"
    sample(root / "v1.0" / "candor_pause_handling" / "1", {"input.wav": 1})   # no pause.json
    with pytest.raises(FdbLayoutError, match="no sample fits the Full-Duplex-Bench layout.*pause.json is missing"):
        layout_import.convert(root, tmp_path / "out")
