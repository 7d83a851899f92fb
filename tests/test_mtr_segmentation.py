"""Turn segmentation of an embedded dialogue with known turns: offline segmenter, and 6 votes
from an OpenAI-compatible server on 127.0.0.1 (real openai client), replayed with the server stopped."""

from __future__ import annotations

import json

import pytest
from _judge_server import FakeLLMServer, answer
from _judge_specs import local_spec
from click.testing import CliRunner

from duplexeval.benchmarks.mtr.format import load_dialogue
from duplexeval.benchmarks.mtr.generate import render_script_file
from duplexeval.benchmarks.mtr.segmentation import dialogue_segments, segment_turns
from duplexeval.judges.cache import JudgeCache
from duplexeval.judges.llm import Judge, load_judge
from duplexeval.specs import Registry, repo_root

TOLERANCE_S = 0.3


@pytest.fixture(scope="module")
def dialogue(tmp_path_factory):
    out = tmp_path_factory.mktemp("quality")
    (sidecar,) = render_script_file(repo_root() / "data/embedded/mtr/quality.yaml", out, 16000)
    return load_dialogue(sidecar)


@pytest.fixture(scope="module")
def bench():
    return Registry.load().get("benchmark", "mtr-quality").data | {
        "asr": {"backend": "faster-whisper", "model": "tiny.en", "language": "en", "options": {"beam_size": 1}}}


@pytest.fixture(scope="module")
def segments(dialogue, bench):
    user, asst = dialogue.audio()
    return dialogue_segments(user, asst, dialogue.rate, bench["vad"], bench["asr"])


def assert_recovers(turns, dialogue):
    truth = [(r.user.start, r.user.end) for r in dialogue.rounds]
    assert len(turns) == len(truth), (turns, truth)
    for t, (s, e) in zip(turns, truth):
        assert abs(t.start - s) <= TOLERANCE_S and abs(t.end - e) <= TOLERANCE_S, (t, s, e)


def test_segments_of_both_speakers_sorted_with_text(segments):
    assert [s["start"] for s in segments] == sorted(s["start"] for s in segments)
    assert {s["speaker"] for s in segments} == {"user", "assistant"}
    assert any("strawberries" in s["text"].lower() for s in segments if s["speaker"] == "user")


def test_offline_segmenter_recovers_every_boundary(dialogue, bench, segments):
    judge = load_judge("mtr-segmentation-offline")
    seg = segment_turns(segments, judge, bench["segmentation"])
    assert_recovers(seg.turns, dialogue)
    assert all(t.votes == bench["segmentation"]["votes"] for t in seg.turns)


def jittered_votes(dialogue):
    truth = [(r.user.start, r.user.end) for r in dialogue.rounds]
    jitter = [0.0, 0.15, -0.15, 0.1, -0.1, 0.2]
    votes = []
    for k, j in enumerate(jitter):
        turns = [{"start": round(s + j, 2), "end": round(e - j, 2)} for s, e in truth]
        if k == 1:
            turns = turns[:2] + turns[3:]                               # one vote misses a turn
        if k == 2:
            turns.append({"start": truth[-1][1] + 0.5, "end": truth[-1][1] + 1.0})  # one invents a turn
        votes.append(json.dumps({"verdict": turns, "reason": f"sample {k}"}))
    return votes


def test_six_votes_from_a_local_server_cluster_to_the_turns_and_replay_offline(tmp_path, monkeypatch, dialogue, bench,
                                                                               segments):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-segmentation")
    server = FakeLLMServer().start()
    try:
        for text in jittered_votes(dialogue):
            server.actions.append(answer(text))
        data, path = local_spec("mtr-segmentation-gpt4o", server.url)
        judge = Judge.from_spec(data, path, JudgeCache(tmp_path / "judge", "readwrite"))
        seg = segment_turns(segments, judge, bench["segmentation"], {"dialogue": str(dialogue.audio_path)})
    finally:
        server.stop()
    assert len(server.requests) == 6
    assert len(set(seg.cache_keys)) == 6 and len(list(JudgeCache(tmp_path / "judge").entry_paths())) == 6
    assert_recovers(seg.turns, dialogue)
    # The server is gone: replay answers all 6 from the cache, and a miss would be an error.
    replay = Judge.from_spec(data, path, JudgeCache(tmp_path / "judge", "replay"))
    again = segment_turns(segments, replay, bench["segmentation"], {"dialogue": str(dialogue.audio_path)})
    assert again.turns == seg.turns and again.cache_keys == seg.cache_keys


def test_segment_command_writes_turns_and_never_touches_the_input(tmp_path, dialogue):
    from duplexeval.cli import cli as main
    from duplexeval.io import sha256_file

    before = sha256_file(dialogue.audio_path), sha256_file(dialogue.path)
    out = tmp_path / "turns.json"
    result = CliRunner().invoke(main, ["segment", str(dialogue.path), "--judge", "mtr-segmentation-offline",
                                       "--asr-model", "tiny.en", "--out", str(out)])
    assert result.exit_code == 0, result.output
    turns = json.loads(out.read_text())["turns"]
    assert len(turns) == len(dialogue.rounds)
    assert turns[0]["response_window"][1] == pytest.approx(turns[1]["end"])
    assert (sha256_file(dialogue.audio_path), sha256_file(dialogue.path)) == before
