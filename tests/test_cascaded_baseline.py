"""The cascaded baseline's configuration, start-up failure, conformance and turn logic (issue 12).

Real processes over real sockets; the LLM is a small OpenAI-compatible server on
127.0.0.1 (tests/_judge_server.py) reached by the real `openai` client. The scored run is
tests/test_cascaded_baseline_run.py.
"""

from __future__ import annotations

import argparse

import numpy as np
import pytest
from _judge_server import FakeLLMServer, status

from duplexeval.agents.cascaded_baseline import (
    ENV_BASE_URL,
    ENV_MODEL,
    SILENCE,
    CascadedBaseline,
    ConfigError,
    LLMStep,
    add_arguments,
    settings_from,
    spoken_form,
)
from duplexeval.runner import load_model_spec
from duplexeval.runner.conformance import run_conformance
from duplexeval.tts import synthesize

KEY = "sk-cascade-unit-0123456789abcdef"


def args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


@pytest.fixture
def llm(monkeypatch):
    server = FakeLLMServer(default_text="The capital of France is Paris.").start()
    monkeypatch.setenv(ENV_BASE_URL, server.url + "/v1")
    monkeypatch.setenv(ENV_MODEL, "unit-model")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("DUPLEXEVAL_CASCADE_API_KEY_ENV", raising=False)
    yield server
    server.stop()


@pytest.mark.parametrize("unset, named", [(ENV_BASE_URL, ENV_BASE_URL), (ENV_MODEL, ENV_MODEL),
                                          ("OPENAI_API_KEY", "OPENAI_API_KEY")])
def test_a_missing_setting_is_named(monkeypatch, unset, named):
    for var, value in ((ENV_BASE_URL, "http://127.0.0.1:9/v1"), (ENV_MODEL, "m"), ("OPENAI_API_KEY", KEY)):
        monkeypatch.setenv(var, value)
    monkeypatch.delenv("DUPLEXEVAL_CASCADE_API_KEY_ENV", raising=False)
    monkeypatch.delenv(unset)
    with pytest.raises(ConfigError, match=named):
        settings_from(args())


def test_flags_win_over_the_environment_and_the_key_is_not_in_the_settings(monkeypatch):
    monkeypatch.setenv(ENV_BASE_URL, "http://a/v1")
    monkeypatch.setenv(ENV_MODEL, "env-model")
    monkeypatch.setenv("MY_KEY", KEY)
    s = settings_from(args("--base-url", "http://b/v1/", "--llm-model", "flag-model", "--api-key-env", "MY_KEY"))
    assert (s["base_url"], s["model"], s["api_key_env"]) == ("http://b/v1", "flag-model", "MY_KEY")
    assert KEY not in repr(s)


def test_without_an_endpoint_the_model_fails_at_start_naming_the_setting(monkeypatch):
    monkeypatch.delenv(ENV_BASE_URL, raising=False)
    results = run_conformance(load_model_spec("cascaded-baseline"))
    assert [r.name for r in results] == ["start"] and results[0].status == "fail"
    assert ENV_BASE_URL in results[0].detail and "exit status 2" in results[0].detail


def test_conformance_passes_against_a_local_openai_compatible_server(llm):
    results = run_conformance(load_model_spec("cascaded-baseline"))
    failed = [f"{r.name}: {r.detail}" for r in results if r.status == "fail"]
    assert not failed, failed
    passed = {r.name for r in results if r.status == "pass"}
    assert {"start", "handshake", "lockstep", "reset", "errors", "fork", "realtime"} <= passed


def test_spoken_form_drops_silence_replies_and_markup():
    assert spoken_form(SILENCE) == "" and spoken_form("[Silence].") == "" and spoken_form("  ") == ""
    assert spoken_form("[silence] nothing to add") == ""
    assert spoken_form("**Paris** is the\n capital.") == "Paris is the capital."


class _StandInASR:
    """A stand-in for faster-whisper's WhisperModel.transcribe: one segment, text by call order."""

    def __init__(self, texts):
        self.texts, self.calls = list(texts), 0

    def transcribe(self, audio, **kwargs):
        assert kwargs["condition_on_previous_text"] is False and kwargs["language"] == "en"
        text = self.texts[min(self.calls, len(self.texts) - 1)]
        self.calls += 1
        return [argparse.Namespace(text=text)], None


def _speech(seconds: float) -> np.ndarray:
    return synthesize("Aria, what is the capital of France? I would like to know it please.", "rms", 16000)[
        : int(seconds * 16000)]


def _drive(agent: CascadedBaseline, audio: np.ndarray, start: int = 0) -> list[np.ndarray]:
    n = agent.in_frame_samples
    frames = -(-len(audio) // n)
    audio = np.concatenate([audio, np.zeros(frames * n - len(audio), dtype=np.float32)])
    return [agent.step(start + i, audio[i * n:(i + 1) * n], None) for i in range(frames)]


def test_a_turn_goes_through_asr_llm_and_tts_and_the_history_grows(llm):
    settings = settings_from(args())
    agent = CascadedBaseline(settings, asr=_StandInASR(["Aria, what is the capital of France?"]))
    agent.start_session("lockstep", 3, None)
    agent.reset()
    speech = _speech(2.5)
    outs = _drive(agent, np.concatenate([speech, np.zeros(16000 * 3, dtype=np.float32)]))
    said = np.concatenate(outs)
    assert np.abs(said).max() > 0.05  # the reply is spoken
    first_loud = int(np.argmax(np.abs(said) > 0.05)) / 16000
    assert first_loud > len(speech) / 16000  # after the user's turn, not during it
    assert [m["role"] for m in agent.history] == ["user", "assistant"]
    assert agent.history[1]["content"] == "The capital of France is Paris."
    sent = [q["body"] for q in llm.requests if q["path"].endswith("/chat/completions")]
    assert sent[-1]["seed"] == 3 and sent[-1]["messages"][-1]["content"] == "Aria, what is the capital of France?"


def test_barge_in_stops_the_reply_and_fork_restores_history_and_queue(llm):
    llm.default_text = "Paris is the capital of France, and it is a large and very old city on the river Seine."
    agent = CascadedBaseline(settings_from(args()), asr=_StandInASR(["Aria, tell me about Paris.", "Stop."]))
    agent.start_session("lockstep", 0, None)
    agent.reset()
    speech = _speech(2.0)
    _drive(agent, np.concatenate([speech, np.zeros(int(16000 * 1.2), dtype=np.float32)]))
    assert agent.scheduler.speaking  # the long reply is still queued
    snap = agent.snapshot()
    calls = llm_calls = len(llm.requests)
    after = _drive(agent, np.concatenate([speech, np.zeros(16000, dtype=np.float32)]), start=100)
    assert agent.scheduler.interrupted == 1  # the user's new turn cut the reply short
    assert len(agent.history) == 4
    agent.restore(snap)
    assert len(agent.history) == 2 and agent.scheduler.speaking
    again = _drive(agent, np.concatenate([speech, np.zeros(16000, dtype=np.float32)]), start=100)
    assert all(np.array_equal(a, b) for a, b in zip(after, again))
    assert len(llm.requests) == llm_calls + 1 == calls + 1  # the same turn again: the memoised reply


def test_an_llm_failure_is_an_error_not_silence(llm):
    llm.script(status(401), status(401), status(401))
    step = LLMStep(settings_from(args("--max-retries", "0")))
    with pytest.raises(Exception, match="401") as info:
        step.reply([{"role": "user", "content": "hi"}], 0)
    assert KEY not in str(info.value)
