"""The dual-channel dialogue format: one channel convention, checked on load, inputs never modified."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from duplexeval.audio import write_wav
from duplexeval.benchmarks.mtr.format import DialogueFormatError, load_dialogue, write_dialogue
from duplexeval.io import sha256_file

RATE = 16000


def tone(seconds: float, freq: float = 220.0) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    return (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def make(tmp_path, name="d1"):
    user = np.concatenate([tone(1.0), np.zeros(2 * RATE, np.float32), tone(1.0)])
    asst = np.concatenate([np.zeros(int(1.2 * RATE), np.float32), tone(1.5, 330.0), np.zeros(int(1.3 * RATE), np.float32)])
    rounds = [{"round": 1, "feature": "smooth", "user": {"start": 0.0, "end": 1.0}, "assistant": {"start": 1.2, "end": 2.7}},
              {"round": 2, "feature": "smooth", "user": {"start": 3.0, "end": 4.0}}]
    return write_dialogue(tmp_path / f"{name}.json", name, user, asst, RATE, rounds)


def test_round_trip_and_inputs_untouched(tmp_path):
    sidecar = make(tmp_path)
    wav = sidecar.with_suffix(".wav")
    before = (sha256_file(sidecar), sha256_file(wav), os.stat(wav).st_mtime_ns)
    d = load_dialogue(sidecar)
    user, asst = d.audio()
    assert d.id == "d1" and d.rate == RATE and len(d.rounds) == 2 and d.rounds[0].assistant.end == 2.7
    assert np.abs(user[: RATE]).max() > 0.2 and np.abs(asst[: RATE]).max() == 0
    assert not user.flags.writeable  # callers cannot change the loaded audio in place
    assert (sha256_file(sidecar), sha256_file(wav), os.stat(wav).st_mtime_ns) == before


def test_declared_channel_swap_is_an_error_naming_the_file(tmp_path):
    sidecar = make(tmp_path)
    data = json.loads(sidecar.read_text())
    data["channels"] = {"0": "assistant", "1": "user"}
    sidecar.write_text(json.dumps(data))
    with pytest.raises(DialogueFormatError, match=r"d1\.json.*channels declared.*never swapped"):
        load_dialogue(sidecar)


def test_audio_swapped_against_its_declaration_is_caught(tmp_path):
    sidecar = make(tmp_path)
    wav = sidecar.with_suffix(".wav")
    import soundfile as sf

    stereo, _ = sf.read(wav, dtype="float32")
    write_wav(wav, stereo[:, ::-1], RATE)
    data = json.loads(sidecar.read_text())
    del data["audio_sha256"]
    sidecar.write_text(json.dumps(data))
    with pytest.raises(DialogueFormatError, match=r"d1\.json.*look swapped"):
        load_dialogue(sidecar)


def test_mono_file_is_refused(tmp_path):
    sidecar = make(tmp_path)
    write_wav(sidecar.with_suffix(".wav"), tone(4.0), RATE)
    data = json.loads(sidecar.read_text())
    del data["audio_sha256"]
    sidecar.write_text(json.dumps(data))
    with pytest.raises(DialogueFormatError, match="must be stereo"):
        load_dialogue(sidecar)


def test_changed_audio_fails_its_sha256(tmp_path):
    sidecar = make(tmp_path)
    write_wav(sidecar.with_suffix(".wav"), np.zeros((4 * RATE, 2), np.float32), RATE)
    with pytest.raises(DialogueFormatError, match="audio_sha256"):
        load_dialogue(sidecar)


def test_schema_errors_name_the_file_and_field(tmp_path):
    sidecar = make(tmp_path)
    data = json.loads(sidecar.read_text())
    data["rounds"][0]["feature"] = "mumbling"
    sidecar.write_text(json.dumps(data))
    with pytest.raises(DialogueFormatError, match=r"d1\.json: rounds\.0\.feature"):
        load_dialogue(sidecar)
