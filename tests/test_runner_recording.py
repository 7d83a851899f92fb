"""Recording shape and content: 60 s through `silent` and `babbler` in lockstep (issue 3)."""

from __future__ import annotations

import numpy as np
from runner_helpers import tone

from duplexeval.audio import read_stereo_recording, read_wav
from duplexeval.io import read_jsonl
from duplexeval.judges.vad import speech_probabilities
from duplexeval.runner import FileStimulus, load_model_spec, run_item

RATE = 16000


def test_60_s_through_silent_gives_a_60_s_stereo_recording(tmp_path):
    audio = tone(60.0)
    tail = 5
    result = run_item(load_model_spec("silent"), FileStimulus(audio, RATE, tail_frames=tail), tmp_path / "item")
    assert result.status == "ok", result.reason
    data, rate = read_wav(tmp_path / "item" / "recording.wav")
    assert rate == RATE and data.ndim == 2 and data.shape[1] == 2
    frame = 1280  # silent declares 80 ms frames
    assert data.shape[0] == len(audio) + tail * frame  # lockstep: output length == input length
    heard, said, _ = read_stereo_recording(tmp_path / "item" / "recording.wav")
    assert np.max(np.abs(heard[: len(audio)] - audio)) < 1e-3  # ch0 is what the model heard
    assert np.all(said == 0)  # ch1: silent said nothing
    events = read_jsonl(tmp_path / "item" / "events.jsonl")
    assert events[0]["type"] == "session_start" and events[-1]["type"] == "session_end"
    assert {"frame": 750, "t": 60.0, "type": "input_end"} in events


def test_babbler_talks_in_more_than_90_percent_of_frames(tmp_path):
    result = run_item(load_model_spec("babbler"), FileStimulus(tone(60.0), RATE), tmp_path / "item")
    assert result.status == "ok", result.reason
    heard, said, rate = read_stereo_recording(tmp_path / "item" / "recording.wav")
    assert rate == RATE and len(said) == len(heard) == 60 * RATE
    probs = speech_probabilities(said)  # real Silero, 32 ms windows at 16 kHz
    assert np.mean(probs >= 0.5) > 0.90
    assert np.mean(speech_probabilities(heard) >= 0.5) < 0.1  # the tone input is not speech


def test_realtime_clock_keeps_channels_equal_and_counts_underruns(tmp_path):
    result = run_item(load_model_spec("babbler"), FileStimulus(tone(2.0), RATE), tmp_path / "rt", "realtime")
    assert result.status == "ok", result.reason
    heard, said, _ = read_stereo_recording(tmp_path / "rt" / "recording.wav")
    assert len(heard) == len(said) == 2 * RATE
    import json

    status = json.loads((tmp_path / "rt" / "status.json").read_text())
    assert status["clock"] == "realtime" and status["underrun_frames"] >= 1  # frame 0's output cannot be early
    assert np.mean(np.abs(said[RATE:]) > 0) > 0.5  # babbler's speech arrives on the wall clock
