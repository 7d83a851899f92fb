"""LLM judges against a local OpenAI/Anthropic-shaped server, through the real SDK clients."""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path

import pytest
from _judge_server import FakeLLMServer, answer, echo_key, raw, stall, status
from _judge_specs import local_spec

from duplexeval.io import atomic_write_jsonl
from duplexeval.judges.cache import CacheMiss, JudgeCache
from duplexeval.judges.llm import Judge
from duplexeval.judges.providers import MissingApiKeyError
from duplexeval.judges.retry import JudgeCallError

FAKE_OPENAI_KEY = "sk-test-PLANTED-openai-0123456789abcdef"
FAKE_ANTHROPIC_KEY = "sk-ant-test-PLANTED-anthropic-0123456789"
INPUTS = {"question": "Aria, out of those three, which one's the cheapest per person?",
          "gold_answer": "The taco place, nine dollars a head.",
          "transcript": "The taco place is $9 ahead."}

# (judge id, env var): the real anthropic client on /v1/messages; the real openai client
# (provider openai, base_url pointed at the local server).
PROVIDERS = [("mpe-answer-claude", "ANTHROPIC_API_KEY"), ("mtr-instruction-gpt4o", "OPENAI_API_KEY")]


@pytest.fixture()
def server():
    srv = FakeLLMServer(default_text='{"verdict": "correct", "reason": "names the taco place"}').start()
    yield srv
    srv.stop()


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_ANTHROPIC_KEY)


def make_judge(judge_id: str, server: FakeLLMServer, cache: JudgeCache, **overrides) -> Judge:
    data, path = local_spec(judge_id, server.url, **overrides)
    return Judge.from_spec(data, path, cache)


@pytest.mark.parametrize("judge_id,env", PROVIDERS)
def test_normal_verdict_and_second_call_is_a_cache_hit(tmp_path, server, judge_id, env):
    judge = make_judge(judge_id, server, JudgeCache(tmp_path, "readwrite"))
    first = judge.decide(INPUTS)
    assert (first.value, first.parsed_ok, first.from_cache) == ("correct", True, False)
    assert first.reason == "names the taco place" and first.judge_id == judge_id
    second = judge.decide(INPUTS)
    assert second.from_cache and second.value == first.value and second.raw == first.raw
    assert len(server.requests) == 1
    sent = server.requests[0]
    assert sent["path"].endswith("/v1/messages" if judge_id == "mpe-answer-claude" else "/v1/chat/completions")
    assert sent["body"]["model"] == (judge.snapshot or judge.model)


@pytest.mark.parametrize("judge_id,env", PROVIDERS)
def test_429_waits_for_retry_after_and_the_retry_is_logged(tmp_path, server, judge_id, env, caplog):
    judge = make_judge(judge_id, server, JudgeCache(tmp_path, "readwrite"))
    server.script(status(429, {"Retry-After": "1"}))
    caplog.set_level(logging.WARNING, logger="duplexeval")
    started = time.monotonic()
    verdict = judge.decide(INPUTS)
    assert time.monotonic() - started >= 1.0  # Retry-After honoured, not the 10 ms backoff
    assert verdict.value == "correct" and len(server.requests) == 2
    retries = [r for r in caplog.records if "retrying in 1.00 s" in r.getMessage()]
    assert len(retries) == 1 and "rate-limit" in retries[0].getMessage()


@pytest.mark.parametrize("judge_id,env", PROVIDERS)
def test_500_timeout_and_malformed_body_are_retried_with_backoff(tmp_path, server, judge_id, env, caplog):
    judge = make_judge(judge_id, server, JudgeCache(tmp_path, "readwrite"))
    server.script(status(500), stall(1.5), raw("{this is not json"))
    caplog.set_level(logging.WARNING, logger="duplexeval")
    verdict = judge.decide(INPUTS)
    assert verdict.value == "correct" and verdict.parsed_ok
    assert len(server.requests) == 4
    kinds = [r.getMessage() for r in caplog.records if "retrying" in r.getMessage()]
    assert len(kinds) == 3
    assert "transient" in kinds[0] and "timeout" in kinds[1] and "malformed-response" in kinds[2]


@pytest.mark.parametrize("judge_id,env", PROVIDERS)
def test_retries_are_bounded_and_errors_are_never_cached(tmp_path, server, judge_id, env):
    cache = JudgeCache(tmp_path, "readwrite")
    judge = make_judge(judge_id, server, cache)  # max_retries 3 -> 4 attempts
    server.script(*[status(503)] * 4)
    with pytest.raises(JudgeCallError, match="gave up after 4 attempts"):
        judge.decide(INPUTS)
    assert len(server.requests) == 4
    assert list(cache.entry_paths()) == []
    server.script(status(400))
    with pytest.raises(JudgeCallError, match="not retried"):
        judge.decide(INPUTS)
    assert len(server.requests) == 5 and list(cache.entry_paths()) == []


@pytest.mark.parametrize("judge_id,env", PROVIDERS)
def test_unparseable_verdict_is_recorded_and_counts_as_the_spec_says(tmp_path, server, judge_id, env):
    judge = make_judge(judge_id, server, JudgeCache(tmp_path, "readwrite"))
    server.script(answer("I think the answer is correct!"))
    verdict = judge.decide(INPUTS)
    assert not verdict.parsed_ok and verdict.value == "incorrect"  # MPE §3.5: unparseable = incorrect
    assert verdict.raw == "I think the answer is correct!" and verdict.reason.startswith("unparseable")
    assert len(server.requests) == 1  # never re-asked in a loop
    server.script(answer('{"verdict": "maybe"}'))
    other = judge.decide({**INPUTS, "transcript": "Luigi's."})
    assert not other.parsed_ok and other.value == "incorrect" and "verdict" in other.reason


def test_replay_with_the_server_stopped_gives_identical_verdicts_and_no_requests(tmp_path, monkeypatch):
    """The auditor's path: record once, then replay offline with no key and no server."""
    server = FakeLLMServer().start()
    cases = [dict(INPUTS, transcript=t) for t in ("The taco place.", "Luigi's at eleven.", "", "Karaoke")]
    script = [answer('{"verdict": "correct", "reason": "a"}'), status(429, {"Retry-After": "0"}),
              answer('{"verdict": "incorrect", "reason": "b"}'), status(500), answer("garbage"),
              stall(1.5), answer('{"verdict": "incorrect", "reason": "c"}')]
    recorded = {}
    for judge_id, _ in PROVIDERS:
        server.script(*script)
        judge = make_judge(judge_id, server, JudgeCache(tmp_path / "cache", "readwrite"))
        recorded[judge_id] = [judge.decide(c) for c in cases]
    count = len(server.requests)
    server.stop()
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    for judge_id, _ in PROVIDERS:
        judge = make_judge(judge_id, server, JudgeCache(tmp_path / "cache", "replay"))
        replayed = [judge.decide(c) for c in cases]
        strip = lambda v: {k: x for k, x in v.to_json().items() if k != "from_cache"}  # noqa: E731
        assert [strip(v) for v in replayed] == [strip(v) for v in recorded[judge_id]]
        assert all(v.from_cache for v in replayed)
        with pytest.raises(CacheMiss, match="replay mode: key [0-9a-f]{64}"):
            judge.decide(dict(INPUTS, transcript="never asked"))
    assert len(server.requests) == count


def test_missing_key_names_the_variable(tmp_path, server, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    judge = make_judge("mpe-answer-claude", server, JudgeCache(tmp_path, "readwrite"))
    with pytest.raises(MissingApiKeyError, match="ANTHROPIC_API_KEY"):
        judge.decide(INPUTS)
    assert server.requests == []


def test_samples_are_independent_cache_entries(tmp_path, server):
    judge = make_judge("mtr-segmentation-gpt4o", server, JudgeCache(tmp_path, "readwrite"))
    server.default_text = '{"verdict": [{"start": 0.0, "end": 1.5}], "reason": "one turn"}'
    segments = [{"speaker": "user", "start": 0.0, "end": 1.5, "text": "hello there"}]
    verdicts = judge.decide_samples({"segments": segments})
    assert len(verdicts) == 6 and len({v.cache_key for v in verdicts}) == 6
    assert verdicts[0].value == [{"start": 0.0, "end": 1.5}]
    assert len(server.requests) == 6


def test_a_planted_key_appears_in_no_file_of_the_run_or_the_cache(tmp_path, server, caplog):
    """Keys only from the environment; never written to any file, log or report."""
    run_dir, cache_dir = tmp_path / "runs" / "r1", tmp_path / "cache"
    run_dir.mkdir(parents=True)
    handler = logging.FileHandler(run_dir / "judge.log")
    logging.getLogger("duplexeval").addHandler(handler)
    caplog.set_level(logging.DEBUG, logger="duplexeval")
    records = []
    try:
        for judge_id, _ in PROVIDERS:
            judge = make_judge(judge_id, server, JudgeCache(cache_dir, "readwrite"))
            server.script(status(429, {"Retry-After": "0"}), status(500), answer("not json"))
            records.append(judge.decide(INPUTS).to_json())
            server.script(echo_key(401))
            with pytest.raises(JudgeCallError) as err:
                judge.decide(dict(INPUTS, transcript="x"))
            records.append({"error": str(err.value)})
            assert "invalid key" in str(err.value)  # the server did echo it; we redacted it
    finally:
        logging.getLogger("duplexeval").removeHandler(handler)
        handler.close()
    atomic_write_jsonl(run_dir / "records.jsonl", records)
    (run_dir / "caplog.txt").write_text(caplog.text)
    assert any(FAKE_OPENAI_KEY in json.dumps(r["headers"]) for r in server.requests)  # it was really sent
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) >= 5
    for path in files:
        data = path.read_bytes()
        for secret in (FAKE_OPENAI_KEY, FAKE_ANTHROPIC_KEY):
            assert secret.encode() not in data, f"{secret} leaked into {path}"
            assert secret[-12:].encode() not in data, f"part of {secret} leaked into {path}"


def test_anthropic_spec_with_temperature_is_refused(tmp_path, server):
    with pytest.raises(ValueError, match="temperature"):
        make_judge("mpe-answer-claude", server, JudgeCache(tmp_path), decoding={"max_tokens": 10, "temperature": 0})


def test_concurrency_limit_is_shared_per_provider(tmp_path, server):
    from concurrent.futures import ThreadPoolExecutor

    judge = make_judge("mtr-instruction-gpt4o", server, JudgeCache(tmp_path, "off"))  # concurrency 2
    active, peak, lock = [0], [0], threading.Lock()
    original = judge.provider.complete

    def counting(*args, **kwargs):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        try:
            time.sleep(0.05)
            return original(*args, **kwargs)
        finally:
            with lock:
                active[0] -= 1

    judge.provider.complete = counting
    with ThreadPoolExecutor(6) as pool:
        list(pool.map(lambda i: judge.decide(dict(INPUTS, transcript=str(i))), range(6)))
    assert peak[0] <= 2 and len(server.requests) == 6


def test_spec_path_relative_template_is_used(tmp_path, server):
    judge = make_judge("mtr-instruction-gpt4o", server, JudgeCache(tmp_path))
    assert judge.template.path == (Path(__file__).resolve().parents[1] / "specs/judges/prompts/mtr-instruction.j2")
