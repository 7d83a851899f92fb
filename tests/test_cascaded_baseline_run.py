"""The cascaded baseline for real: a scored run of two embedded MPE scenes and one MTR dimension (issue 12).

`duplexeval run --suite cascaded-baseline` as a user runs it, with the LLM step served by a
small OpenAI-compatible HTTP server this test starts on 127.0.0.1 (tests/_judge_server.py,
driven by the real `openai` client inside the model process). Everything else is real:
Silero VAD endpointing, Whisper tiny.en ASR, flite TTS, the protocol, the scheduler, the
offline judges and scoring.

The test server plays a simple assistant: in a conversation that mentions Aria (the MPE
scenes' preamble does) it answers only turns that address Aria; in one that never does
(the MTR dialogue) it declines every request, as the embedded safety set wants.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _judge_server import FakeLLMServer, answer

from duplexeval.agents.responder import is_addressed
from duplexeval.commands.run import run_suite

KEY = "sk-cascade-test-0123456789abcdef"
MPE_REPLY = "Sure, I can help with that."
MTR_REPLY = "I'm sorry, but I can't help with that."

pytestmark = pytest.mark.slow


class AssistantLLM(FakeLLMServer):
    """The scripted actions of FakeLLMServer, else a reply made from the conversation it is sent."""

    def _respond(self, handler, action, body):
        if action.kind == "answer" and action.text == self.default_text:
            action = answer(self.reply_for(body["messages"]))
        super()._respond(handler, action, body)

    @staticmethod
    def reply_for(messages: list[dict]) -> str:
        said = [m["content"] for m in messages if m["role"] == "user"]
        if any(is_addressed(s) for s in said):  # a multi-party scene with Aria in it
            return MPE_REPLY if is_addressed(said[-1]) else "[silence]"
        return MTR_REPLY


def configure(monkeypatch, server: FakeLLMServer) -> None:
    monkeypatch.setenv("DUPLEXEVAL_CASCADE_BASE_URL", server.url + "/v1")
    monkeypatch.setenv("DUPLEXEVAL_CASCADE_MODEL", "test-assistant")
    monkeypatch.setenv("DUPLEXEVAL_CASCADE_API_KEY_ENV", "CASCADE_TEST_KEY")
    monkeypatch.setenv("CASCADE_TEST_KEY", KEY)


@pytest.fixture(scope="module")
def scored_run(tmp_path_factory):
    server = AssistantLLM().start()
    mp = pytest.MonkeyPatch()
    try:
        configure(mp, server)
        root = tmp_path_factory.mktemp("runs")
        run_dir, outcomes = run_suite("cascaded-baseline", models=None, benchmarks=None, run_id="cb", runs_dir=root,
                                      limit=None, clock=None)
        yield run_dir, outcomes, server
    finally:
        mp.undo()
        server.stop()


def results(run_dir: Path, bench: str) -> dict:
    return json.loads((run_dir / "cascaded-baseline" / bench / "results.json").read_text())


def test_both_jobs_are_scored(scored_run):
    _, outcomes, _ = scored_run
    assert [(o.job.key, o.status) for o in outcomes] == [
        ("cascaded-baseline/mpe-explicit", "scored"), ("cascaded-baseline/mtr-safety", "scored")], \
        [(o.job.key, o.status, o.reason) for o in outcomes]


def test_mpe_scenes_are_answered_and_scored(scored_run):
    run_dir, _, _ = scored_run
    r = results(run_dir, "mpe-explicit")
    assert r["model_caveat"].startswith("our cascade")
    records = [json.loads(line) for line in (run_dir / "cascaded-baseline/mpe-explicit/records.jsonl").read_text().splitlines()]
    assert len({rec["item"] for rec in records}) == 2
    m = r["metrics"]
    assert m["start"]["denominator"] == 2 and m["shush"]["denominator"] > 0
    # It answers a request to Aria after its endpoint (a real reply, heard by the real ASR
    # and VAD of the scorer) and stays quiet through most turns that are not for it.
    assert m["start"]["outcomes"]["fresh"] >= 1 and m["presence"]["value"] > 0, m
    assert m["shush"]["value"] >= 0.6, m["shush"]


def test_mtr_runs_with_history_as_heard_flagged_and_refuses(scored_run):
    run_dir, _, _ = scored_run
    r = results(run_dir, "mtr-safety")
    assert r["context"]["mode"] == "history-as-heard" and r["context"]["teacher_forcing"] is False
    assert "history as heard" in r["context"]["flag"]
    refusal = r["metrics"]["refusal"]
    assert refusal["denominator"] == 10 and refusal["value"] >= 0.8, refusal


def test_the_llm_was_called_with_the_real_client_and_the_key_stays_out_of_the_run(scored_run):
    run_dir, _, server = scored_run
    chats = [q for q in server.requests if q["path"].endswith("/chat/completions")]
    assert chats, "the model process never called the LLM"
    headers = {k.lower(): v for k, v in chats[0]["headers"].items()}
    assert headers["authorization"] == f"Bearer {KEY}"
    assert headers["user-agent"].startswith("OpenAI/Python")
    body = chats[0]["body"]
    assert body["model"] == "test-assistant" and body["temperature"] == 0.0 and body["messages"][0]["role"] == "system"
    for path in run_dir.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".jsonl", ".log", ".txt", ".html", ".tex"):
            assert KEY not in path.read_text(errors="replace"), path
