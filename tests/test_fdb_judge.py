"""Full-Duplex-Bench's interruption relevance judge through the real openai client against a
127.0.0.1 server: our prompt carries the three texts, a whole-point rating parses, a rating
off the 0-5 scale or a half point is unparseable, never a score."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import soundfile as sf
from _judge_server import FakeLLMServer, answer
from _judge_specs import local_spec

from duplexeval.benchmarks.fdb.score import judge_fields, relevance
from duplexeval.judges.cache import JudgeCache
from duplexeval.judges.llm import Judge

BENCH = {"options": {"relevance": {"min": 0, "max": 5, "step": 1}}}
INFO = {"annotation": [{"context": "Could you suggest some books on personal development?",
                        "interrupt": "Can we talk about fiction books instead?", "timestamp": [10.5, 13.1]}]}
REC = {"transcript": "Sure, To Kill a Mockingbird is a classic novel."}


@pytest.fixture()
def server():
    srv = FakeLLMServer(default_text='{"verdict": 4, "reason": "names a fiction book"}').start()
    yield srv
    srv.stop()


@pytest.fixture()
def recording(tmp_path):
    path = tmp_path / "recording.wav"
    sf.write(path, np.zeros((1600, 2), dtype=np.float32), 16000)
    return path


@pytest.mark.parametrize("judge_id", ["fdb-interruption-relevance-gpt4o", "fdb-interruption-relevance-gpt4-turbo"])
def test_the_prompt_carries_the_three_texts_and_a_whole_point_parses(tmp_path, server, recording, monkeypatch,
                                                                     judge_id):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-fdb-0123456789")
    data, path = local_spec(judge_id, server.url)
    judge = Judge.from_spec(data, path, JudgeCache(tmp_path / "cache", "readwrite"))
    out = relevance({"relevance": judge}, BENCH, INFO, REC, recording, Counter())
    assert (out["rating"], out["parsed_ok"], out["judge"]) == (4, True, judge_id)
    sent = server.requests[0]["body"]
    text = "\n".join(m["content"] for m in sent["messages"])
    for part in (INFO["annotation"][0]["context"], INFO["annotation"][0]["interrupt"], REC["transcript"]):
        assert part in text
    assert "0 to 5" in text and sent["model"] == data["snapshot"]
    from duplexeval.runfolder.verify import cited_cache_keys

    assert cited_cache_keys([{"item": "1", **judge_fields(out)}]) == [out["verdict_key"]]   # verify checks it


@pytest.mark.parametrize("reply", ['{"verdict": 6, "reason": "x"}', '{"verdict": 3.5, "reason": "x"}',
                                   "I would rate the AI's response as 4."])
def test_off_scale_half_point_or_free_text_is_unparseable(tmp_path, server, recording, monkeypatch, reply):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-fdb-0123456789")
    data, path = local_spec("fdb-interruption-relevance-gpt4o", server.url)
    judge = Judge.from_spec(data, path, JudgeCache(tmp_path / "cache", "readwrite"))
    server.script(answer(reply))
    out = relevance({"relevance": judge}, BENCH, INFO, REC, recording, Counter())
    assert out["parsed_ok"] is False and out["rating"] is None
