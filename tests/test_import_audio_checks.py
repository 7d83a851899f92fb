"""duplexeval.recordings.checks: the audio checks every importer runs (issue 39), at their boundaries."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

from duplexeval.recordings.checks import TRUNCATION_SLACK_S, Event, audio_problem, read_checked

RATE = 16000


def test_finite_audio_of_the_right_length_passes():
    assert audio_problem(np.zeros((RATE, 2), dtype=np.float32), RATE, min_s=1.0,
                         events=[Event("pause", 1.0)]) is None


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_one_non_finite_sample_is_refused_naming_its_channel(value):
    audio = np.zeros((RATE, 2), dtype=np.float32)
    audio[5, 1] = value
    assert audio_problem(audio, RATE) == "non-finite samples (NaN or inf): channel 1: 1 of 16000 samples"


@pytest.mark.parametrize("rate, ok", [(8000, True), (192000, True), (7999, False), (192001, False), (0, False)])
def test_the_rate_is_bounded(rate, ok):
    assert (audio_problem(np.zeros(rate or 1, dtype=np.float32), rate) is None) == ok


def test_an_expected_rate_is_enforced():
    assert audio_problem(np.zeros(RATE), RATE, expected_rate=24000) == "sample rate 16000 Hz, expected 24000 Hz"


def test_truncation_is_refused_one_frame_of_slack_past_the_need():
    need = 1.0
    short = int((need - TRUNCATION_SLACK_S) * RATE)
    assert audio_problem(np.zeros(short), RATE, min_s=need) is None
    assert "truncated" in audio_problem(np.zeros(short - 1), RATE, min_s=need)


def test_an_event_after_the_audio_is_refused_and_one_inside_the_slack_is_not():
    audio = np.zeros(RATE)
    assert audio_problem(audio, RATE, events=[Event("pause", 1.0 + TRUNCATION_SLACK_S)]) is None
    problem = audio_problem(audio, RATE, events=[Event("pause.json event 0", 1.2)])
    assert problem == "pause.json event 0 ends at 1.200 s, after the audio's end (1.000 s, 16000 samples at 16000 Hz)"


def test_an_empty_or_unreadable_file_is_refused(tmp_path):
    (tmp_path / "x.wav").write_bytes(b"RIFF0000")
    assert read_checked(tmp_path / "x.wav")[2].startswith("not a readable audio file")
    sf.write(tmp_path / "nan.wav", np.full(10, np.nan, dtype=np.float32), RATE, subtype="FLOAT")
    audio, rate, problem = read_checked(tmp_path / "nan.wav")
    assert audio is None and rate == RATE and "channel 0: 10 of 10" in problem
