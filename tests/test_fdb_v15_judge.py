"""Full-Duplex-Bench v1.5's behaviour judge through the real openai client against a 127.0.0.1
server, inside the real pair scorer (score_v15.score_pair): our prompt carries the four
word-timed transcripts under their four keys, one known tag parses into the record, and a
reply outside the four tags makes the sample an error record with the judge's reason, never
a category. The recordings are digital silence, so no ASR or VAD runs (the spec's
silence_floor) and the transcripts are the empty lists the judge is still asked about."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
import soundfile as sf
from _judge_server import FakeLLMServer, answer
from _judge_specs import local_spec

from duplexeval.benchmarks.fdb import score_v15
from duplexeval.benchmarks.fdb.layout import Word
from duplexeval.judges.cache import JudgeCache
from duplexeval.judges.llm import Judge
from duplexeval.specs import Registry

INFO = {"id": "7", "input_duration_s": 2.0, "clean_input_duration_s": 2.0,
        "annotation": {"context_text": "Tell me about bicycles.", "current_turn_text": "Wait, what do they cost?",
                       "timestamps": [0.5, 1.2]}}


@pytest.fixture()
def server():
    srv = FakeLLMServer(default_text='{"verdict": "C_RESPOND", "reason": "answers the cost question"}').start()
    yield srv
    srv.stop()


@pytest.fixture()
def recordings(tmp_path):
    paths = []
    for name in ("7", "7.clean"):
        (tmp_path / name).mkdir()
        sf.write(tmp_path / name / "recording.wav", np.zeros((32000, 2), dtype=np.float32), 16000)
        paths.append(tmp_path / name / "recording.wav")
    return paths


@pytest.fixture()
def judge(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-fdb-0123456789")

    def make(url: str) -> Judge:
        data, path = local_spec("fdb-behavior-gpt4o", url)
        return Judge.from_spec(data, path, JudgeCache(tmp_path / "cache", "readwrite"))
    return make


def bench():
    return Registry.load().get("benchmark", "fdb-v15-user-interruption").data


def test_the_prompt_carries_four_transcripts_and_one_tag_parses(server, recordings, judge):
    rec = score_v15.score_pair("7", INFO, recordings[0], recordings[1], bench(), judge(server.url), Counter())
    assert rec["outcome"] == "ok" and rec["behaviour"] == "C_RESPOND" and rec["judge"] == "fdb-behavior-gpt4o"
    assert rec["stop_latencies_s"] == [] and rec["clean_item"] == "7.clean"
    body = server.requests[0]["body"]
    text = "\n".join(m["content"] for m in body["messages"])
    for key in ("input_clean", "input_noisy", "output_clean", "output_noisy"):
        assert f'"{key}": {{"text":"","chunks":[]}}' in text
    for tag in ("C_RESPOND", "C_RESUME", "C_UNCERTAIN_HANDLING", "C_UNKNOWN"):
        assert tag in text
    assert body["model"] == "gpt-4o-2024-08-06"


def test_words_reach_the_judge_as_compact_json():
    inputs = score_v15.judge_inputs([Word("wait", 0.5, 0.7)], [], [Word("it", 0.9, 1.0), Word("costs", 1.0, 1.4)],
                                    [], 0.5, "Wait, what do they cost?")
    assert inputs["input_noisy"] == '{"text":"wait","chunks":[{"text":"wait","timestamp":[0.5,0.7]}]}'
    assert inputs["input_clean"] == '{"text":"","chunks":[]}'
    assert json.loads(inputs["output_noisy"])["chunks"][1] == {"text": "costs", "timestamp": [1.0, 1.4]}
    assert inputs["transcript"] == "it costs"   # the model's words from the overlap's start on


@pytest.mark.parametrize("reply", ['{"verdict": "C_MAYBE", "reason": "x"}', "C_RESPOND",
                                   '{"verdict": ["C_RESPOND", "C_RESUME"]}'])
def test_a_reply_outside_the_four_tags_is_an_error_record(server, recordings, judge, reply):
    server.script(answer(reply))
    rec = score_v15.score_pair("7", INFO, recordings[0], recordings[1], bench(), judge(server.url), Counter())
    assert rec["outcome"] == "error" and rec["behaviour"] is None and "fdb-behavior-gpt4o" in rec["reason"]


@pytest.mark.parametrize("transcript, tag", [
    ("", "C_UNKNOWN"),                                              # nothing after the overlap
    ("Sorry, could you repeat that?", "C_UNCERTAIN_HANDLING"),      # a request to repeat wins over shared words
    ("A good bicycle costs about five hundred dollars.", "C_RESPOND"),
    ("and the first ones had no pedals at all", "C_RESUME"),
    ("Hello there.", "C_UNKNOWN"),                                  # shares no content word with either
])
def test_the_offline_stand_in_tags_by_reference(transcript, tag):
    from duplexeval.judges.offline import OfflineJudge

    spec = Registry.load().get("judge", "fdb-behavior-offline")
    refs = {"C_RESPOND": "Wait, how much does a good bicycle cost today?",
            "C_RESUME": "The first bicycles had no pedals at all, riders pushed them along."}
    v = OfflineJudge(spec.data, spec.path).decide({"transcript": transcript, "references": refs})
    assert v.value == tag and "offline heuristic judge" in v.label
