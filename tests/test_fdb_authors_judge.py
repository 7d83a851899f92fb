"""The Full-Duplex-Bench authors' relevance judge as a reading (issue 36): their prompt and
rating pattern read at run time from a pinned file of their repository (here a local fixture
repository served from 127.0.0.1, laid out as theirs), sha256-checked, never committed; the
real openai client asks a 127.0.0.1 server; a rating that does not parse is asked again, at
most reask.max_asks times, each ask its own cache entry; replay never downloads."""

from __future__ import annotations

import functools
import threading
from collections import Counter
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from _judge_server import FakeLLMServer, answer
from _judge_specs import local_spec

from duplexeval.benchmarks.fdb.authors_judge import AuthorsRelevanceJudge, judge_from_spec
from duplexeval.benchmarks.fdb.score import relevance
from duplexeval.benchmarks.fdb.upstream_prompt import UpstreamPromptError, UpstreamPromptMissing
from duplexeval.io import sha256_file
from duplexeval.judges.cache import JudgeCache
from duplexeval.specs.readings import benchmark_readings

FIXTURE = Path(__file__).parent / "fixtures" / "fdb_upstream" / "eval_user_interruption.py"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
BENCH = {"options": {"relevance": {"min": 0, "max": 5, "step": 1}}}
INFO = {"annotation": [{"context": "Could you suggest some books on personal development?",
                        "interrupt": "Can we talk about fiction books instead?", "timestamp": [10.5, 13.1]}]}
REC = {"transcript": "Sure, To Kill a Mockingbird is a classic novel."}


class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output clean
        pass


@pytest.fixture()
def repo_server(tmp_path):
    """A raw-file host: <root>/<owner>/<name>/<commit>/<path>, as GitHub's raw host lays it out."""
    root = tmp_path / "raw"
    target = root / "authors" / "fdb" / COMMIT / "v1_v1.5" / "evaluation" / "eval_user_interruption.py"
    target.parent.mkdir(parents=True)
    target.write_bytes(FIXTURE.read_bytes())
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture()
def llm():
    srv = FakeLLMServer(default_text="Why: it names a fiction book.\nScore given: 4.").start()
    yield srv
    srv.stop()


@pytest.fixture()
def recording(tmp_path):
    path = tmp_path / "recording.wav"
    sf.write(path, np.zeros((1600, 2), dtype=np.float32), 16000)
    return path


def authors_judge(tmp_path, llm, base_url, mode="readwrite", **pin):
    data, path = local_spec("fdb-interruption-relevance-authors", llm.url)
    data["upstream_prompt"] = {**data["upstream_prompt"], "repo": "authors/fdb", "commit": COMMIT,
                               "sha256": sha256_file(FIXTURE), "base_url": base_url, **pin}
    return judge_from_spec(data, path, JudgeCache(tmp_path / "cache", mode))


def test_the_authors_messages_are_read_from_the_pinned_file_and_sent_verbatim(tmp_path, llm, repo_server, recording,
                                                                              monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-fdb-0123456789")
    monkeypatch.setenv("DUPLEXEVAL_CACHE", str(tmp_path / "dcache"))
    judge = authors_judge(tmp_path, llm, repo_server[0])
    assert isinstance(judge, AuthorsRelevanceJudge)
    out = relevance({"relevance": judge}, BENCH, INFO, REC, recording, Counter())
    assert (out["rating"], out["parsed_ok"], out["judge"]) == (4, True, "fdb-interruption-relevance-authors")
    body = llm.requests[0]["body"]
    system, user = body["messages"]
    assert system == {"role": "system", "content": "\n   Test instructions: rate from 0 to 5 how well the reply "
                      "follows the interruption.\n   Answer as:\n   Why: [reason].\n   Score given: [number].\n   "}
    assert user["content"] == ("\n                - Earlier: " + INFO["annotation"][0]["context"]
                               + "\n                - Cut in: " + INFO["annotation"][0]["interrupt"]
                               + "\n                - Reply: " + REC["transcript"] + "\n                ")
    # seed 0 and nothing else: the API's default temperature, as their call leaves it.
    assert body["seed"] == 0 and "temperature" not in body and body["model"] == "gpt-4-turbo-2024-04-09"
    kept = tmp_path / "dcache" / "upstream" / "authors+fdb" / COMMIT / "v1_v1.5/evaluation/eval_user_interruption.py"
    assert kept.read_bytes() == FIXTURE.read_bytes()


def test_an_unparsed_answer_is_asked_again_up_to_the_bound_each_ask_cached(tmp_path, llm, repo_server, recording,
                                                                           monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-fdb-0123456789")
    monkeypatch.setenv("DUPLEXEVAL_CACHE", str(tmp_path / "dcache"))
    llm.script(answer('{"verdict": 4}'), answer("I would say 4."), answer("Why: on topic.\nScore given: 3.\n"
                                                                         "Why: on reflection.\nScore given: 5."))
    judge = authors_judge(tmp_path, llm, repo_server[0])
    v = judge.decide({"context": "c", "user_turn": "u", "transcript": "t"})
    assert (v.value, v.parsed_ok, v.data["asks"], v.reason) == (5, True, 3, "on reflection.")  # the last match wins
    assert len(llm.requests) == 3
    again = authors_judge(tmp_path, llm, repo_server[0], ).decide({"context": "c", "user_turn": "u", "transcript": "t"})
    assert (again.value, again.from_cache, len(llm.requests)) == (5, True, 3)   # replayed from the three entries
    # The bound: max_asks asks without a rating is unparseable, never a score, never an endless loop.
    llm.script(*[answer("no rating here")] * 5)
    never = judge.decide({"context": "c2", "user_turn": "u2", "transcript": "t2"})
    assert (never.value, never.parsed_ok, never.data["asks"]) == (None, False, 5) and len(llm.requests) == 8


def test_a_changed_file_is_refused_by_name_and_replay_downloads_nothing(tmp_path, llm, repo_server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-fdb-0123456789")
    monkeypatch.setenv("DUPLEXEVAL_CACHE", str(tmp_path / "dcache"))
    inputs = {"context": "c", "user_turn": "u", "transcript": "t"}
    with pytest.raises(UpstreamPromptMissing, match="replay mode downloads nothing"):
        authors_judge(tmp_path, llm, repo_server[0], mode="replay").decide(inputs)
    with pytest.raises(UpstreamPromptError, match="is not the pinned"):
        authors_judge(tmp_path, llm, repo_server[0], sha256="0" * 64).decide(inputs)
    assert not (tmp_path / "dcache" / "upstream" / "authors+fdb").exists() or \
        not any((tmp_path / "dcache" / "upstream").rglob("*.py"))
    authors_judge(tmp_path, llm, repo_server[0]).decide(inputs)   # fetched and kept
    kept = next((tmp_path / "dcache" / "upstream").rglob("*.py"))
    kept.write_text(kept.read_text() + "# edited\n")
    with pytest.raises(UpstreamPromptError, match="sha256 .* is not the pinned"):
        authors_judge(tmp_path, llm, repo_server[0]).decide(inputs)
    with pytest.raises(UpstreamPromptError, match="does not map"):
        kept.unlink()
        authors_judge(tmp_path, llm, repo_server[0], fields={"in_interrupt_text": "user_turn"}).decide(inputs)


def test_the_judge_is_a_reading_of_the_interruption_benchmark_only():
    from duplexeval.specs import Registry

    registry = Registry.load()
    found = benchmark_readings(registry.get("benchmark", "fdb-user-interruption").data)["judges.relevance"]
    assert "fdb-interruption-relevance-authors" in found["values"] and found["rescore"]
    assert "judges.relevance" not in benchmark_readings(registry.get("benchmark", "fdb-backchannel").data)
