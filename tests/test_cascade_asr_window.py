"""The cascade agent's ASR window (duplexeval/agents/whisper_window.py): its spec names it,
Whisper's own 30 s window through the short path says exactly what faster-whisper says, and
at the spec's window the real Whisper still hears a spoken question well enough to answer it."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from duplexeval.agents import cascade
from duplexeval.agents.cascade import ASR_OPTIONS, CascadeAgent, add_arguments, load_asr
from duplexeval.agents.responder import reply_to
from duplexeval.agents.whisper_window import WHISPER_WINDOW_S, WindowedWhisper, window_frames
from duplexeval.specs import Registry
from duplexeval.tts import synthesize

QUESTIONS = ("Aria, what is the capital of France?", "Aria, what is two plus three?",
             "Tomatoes need six hours of sun.")


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DUPLEXEVAL_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def whisper():
    return load_asr()


def spec_window_s() -> float:
    """The window the cascade's spec launches it with (its command line, parsed as the agent parses it)."""
    command = Registry.load().get("model", "cascade").data["launch"]["command"]
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    known, _ = parser.parse_known_args([str(a) for a in command[3:]])
    return float(known.asr_window_s)


def test_the_spec_names_a_window_shorter_than_whispers_own():
    window = spec_window_s()
    assert 0 < window < WHISPER_WINDOW_S  # the cheaper path is the one the suite runs
    assert CascadeAgent.__init__.__defaults__ == (WHISPER_WINDOW_S,)  # without the option: Whisper's own


@pytest.mark.parametrize(("frames", "window_s", "expected"), [
    (1, 10.0, 1000), (999, 10.0, 1000), (1000, 10.0, 1000), (1001, 10.0, 2000),  # whole windows
    (2999, 10.0, 3000), (3000, 10.0, 3000), (4500, 10.0, 3000),  # never past Whisper's 3,000 frames
    (253, 30.0, 3000), (253, 0.5, 300),
])
def test_window_frames_round_up_to_whole_windows_within_whispers(frames, window_s, expected):
    assert window_frames(frames, window_s) == expected


@pytest.mark.parametrize("window_s", [0.0, -1.0, 30.5])
def test_a_window_outside_whispers_is_refused_by_name(window_s, capsys):
    with pytest.raises(ValueError, match="ASR window"):
        window_frames(10, window_s)
    with pytest.raises(SystemExit, match="--asr-window-s"):
        cascade.main(["--socket", "/nonexistent/model.sock", "--asr-window-s", str(window_s)])


def test_whispers_own_window_through_the_short_path_says_what_faster_whisper_says(whisper):
    """The short path changes only the window: at 30 s it is faster-whisper's transcribe, word for word."""
    windowed = WindowedWhisper(whisper, WHISPER_WINDOW_S)
    for text in QUESTIONS:
        audio = synthesize(text, "slt", 16000)
        upstream = " ".join(" ".join(s.text.strip() for s in whisper.transcribe(audio, **ASR_OPTIONS)[0]).split())
        assert windowed.transcribe(audio) == upstream


def test_at_the_specs_window_the_cascade_answers_a_spoken_question(whisper):
    windowed = WindowedWhisper(whisper, spec_window_s())
    heard = windowed.transcribe(synthesize(QUESTIONS[0], "slt", 16000))
    assert reply_to(heard) == "The capital of France is Paris.", heard
    assert reply_to(windowed.transcribe(synthesize(QUESTIONS[1], "slt", 16000))) == "That is 5."
    assert reply_to(windowed.transcribe(synthesize(QUESTIONS[2], "slt", 16000))) is None  # not addressed: silent
    assert windowed.transcribe(np.zeros(1600, dtype=np.float32)) == ""  # 0.1 s of silence: no words


def test_each_window_keeps_its_own_transcripts():
    key = cascade.transcript_store().key
    assert key(cascade.transcript_components("ab" * 32, 10.0)) != key(cascade.transcript_components("ab" * 32))
