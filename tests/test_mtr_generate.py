"""Synthetic 10-round dialogues: a scripted writer, feature placement, rendering; public data offline."""

from __future__ import annotations

import urllib.error

import pytest

from duplexeval.mtr.datasets import DatasetUnavailable, fetch, parse_advbench, scripts_from_rows
from duplexeval.mtr.format import load_dialogue
from duplexeval.mtr.generate import ScriptError, feature_pattern, render_script, write_script


def scripted_writer(inputs):
    """Stands in for the LLM writer: one canned round per requested feature."""
    rounds = []
    for n, feature in enumerate(inputs["features"], 1):
        rounds.append({"user": f"Tell me about item number {n} on the list please",
                       "assistant": f"Item number {n} is a fine choice, and here is a longer answer about it for you.",
                       "background": "Is the kettle on?", "backchannel": "Okay."})
    return {"rounds": rounds}


def test_features_alternate_round_by_round_and_never_open_with_an_interruption():
    assert feature_pattern(["smooth", "interruption", "pause", "background"], 10) == [
        "smooth", "interruption", "pause", "background"] * 2 + ["smooth", "interruption"]
    assert feature_pattern(["interruption"], 3) == ["smooth", "interruption", "interruption"]


def test_scripted_writer_dialogue_renders_with_its_events_placed(tmp_path):
    script = write_script(scripted_writer, "gen-1", "shopping", ["smooth", "interruption", "pause", "background"], rounds=10)
    assert len(script["rounds"]) == 10 and script["rounds"][2]["user"] == ["Tell me about item number", "3 on the list please"]
    user, asst, rounds = render_script(script, 16000)
    assert len(user) == len(asst)
    feats = [r["feature"] for r in rounds]
    assert feats[:4] == ["smooth", "interruption", "pause", "background"]
    r2, r3, r4 = rounds[1], rounds[2], rounds[3]
    inter = r2["events"][0]
    assert inter["type"] == "interruption" and inter["start"] == r2["user"]["start"]
    assert rounds[0]["assistant"]["start"] < inter["start"] < rounds[0]["assistant"]["end"]  # it cuts the reply
    pause = r3["events"][0]
    assert pause["type"] == "pause" and pause["end"] - pause["start"] == pytest.approx(2.0)
    assert r3["user"]["start"] < pause["start"] < pause["end"] < r3["user"]["end"]
    bg = r4["events"][0]
    assert bg["type"] == "background" and r4["assistant"]["start"] < bg["start"] < bg["end"] < r4["assistant"]["end"]
    sidecar = tmp_path / "gen-1.json"
    from duplexeval.mtr.format import write_dialogue

    write_dialogue(sidecar, "gen-1", user, asst, 16000, rounds)
    assert [r.feature for r in load_dialogue(sidecar).rounds] == feats


def test_a_writer_with_the_wrong_round_count_is_refused():
    with pytest.raises(ScriptError, match="returned 2 rounds, expected 10"):
        write_script(lambda _: {"rounds": [{"user": "a", "assistant": "b"}] * 2}, "x", "t", ["smooth"])


def test_judge_writer_goes_through_the_judge_cache(tmp_path, monkeypatch):
    import json

    from _judge_server import FakeLLMServer, answer
    from _judge_specs import local_spec

    from duplexeval.judges.cache import JudgeCache
    from duplexeval.judges.llm import Judge
    from duplexeval.mtr.generate import judge_writer

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-writer")
    server = FakeLLMServer().start()
    body = scripted_writer({"features": feature_pattern(["smooth"], 10)})
    server.actions.append(answer(json.dumps({"verdict": body})))
    try:
        data, path = local_spec("mtr-dialogue-generation", server.url)
        judge = Judge.from_spec(data, path, JudgeCache(tmp_path, "readwrite"))
        first = write_script(judge_writer(judge), "g", "shopping", ["smooth"])
    finally:
        server.stop()
    replay = Judge.from_spec(data, path, JudgeCache(tmp_path, "replay"))
    assert write_script(judge_writer(replay), "g", "shopping", ["smooth"]) == first
    assert len(server.requests) == 1


def refuse(*args, **kwargs):
    raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")


def test_offline_download_fails_with_a_clear_error(tmp_path):
    with pytest.raises(DatasetUnavailable, match=r"advbench: cannot download https://.*offline.*place it at"):
        fetch("advbench", cache_dir=tmp_path, opener=refuse)


def test_candor_is_user_supplied():
    with pytest.raises(DatasetUnavailable, match="licensed corpus"):
        fetch("candor")


def test_a_cached_file_is_used_and_checked_against_its_hash(tmp_path):
    target = tmp_path / "advbench" / "harmful_behaviors.csv"
    target.parent.mkdir(parents=True)
    target.write_text("goal,target\nDo a bad thing,Sure\n")
    assert fetch("advbench", cache_dir=tmp_path, opener=refuse) == target
    with pytest.raises(DatasetUnavailable, match="sha256 differs"):
        fetch("advbench", cache_dir=tmp_path, opener=refuse, sha256="0" * 64)


def test_advbench_rows_become_ten_round_dialogues_with_refusals():
    rows = parse_advbench("goal,target\n" + "".join(f"Request {i},Sure\n" for i in range(25)))
    script = scripts_from_rows("advbench", rows, 10)
    assert [len(d["rounds"]) for d in script["dialogues"]] == [10, 10, 5]
    assert script["dialogues"][0]["rounds"][0]["request"] == "Request 0"
    assert "sorry" in script["dialogues"][0]["rounds"][0]["assistant"].lower()


def test_a_public_benchmark_offline_is_not_run_with_the_reason(monkeypatch):
    from duplexeval.mtr import datasets
    from duplexeval.mtr.items import load_dialogues
    from duplexeval.specs import Registry

    monkeypatch.setattr(datasets.urllib.request, "urlopen", refuse)
    bench = Registry.load().get("benchmark", "mtr-safety").data
    with pytest.raises(DatasetUnavailable, match="advbench: cannot download"):
        load_dialogues(bench)
