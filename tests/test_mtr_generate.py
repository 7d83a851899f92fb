"""Synthetic 10-round dialogues: a scripted writer, feature placement, rendering; public data offline."""

from __future__ import annotations

import urllib.error

import pytest

from duplexeval.benchmarks.mtr.datasets import (
    OPENING,
    REFUSAL_REPLY,
    DatasetUnavailable,
    dialogue_setting,
    fetch,
    parse_advbench,
    scripts_from_rows,
)
from duplexeval.benchmarks.mtr.format import DialogueFormatError, load_dialogue, write_dialogue
from duplexeval.benchmarks.mtr.generate import ScriptError, feature_pattern, render_script, write_script

TIMING = {"interrupt_after_s": 1.5, "assistant_overlap_s": 0.3}


def scripted_writer(inputs):
    """Stands in for the LLM writer: one canned round per requested feature."""
    rounds = []
    for n, _feature in enumerate(inputs["features"], 1):
        rounds.append({"user": f"Tell me about item number {n} on the list please",
                       "assistant": f"Item number {n} is a fine choice, and here is a longer answer about it for you.",
                       "background": "Is the kettle on?", "backchannel": "Okay."})
    return {"rounds": rounds}


def test_features_alternate_round_by_round_and_an_interruption_may_open_the_dialogue():
    assert feature_pattern(["smooth", "interruption", "pause", "background"], 10) == [
        "smooth", "interruption", "pause", "background"] * 2 + ["smooth", "interruption"]
    # Issue 13 item 8: the paper has a round-1 interruption column, so round 1 keeps its feature.
    assert feature_pattern(["interruption"], 3) == ["interruption"] * 3


def test_scripted_writer_dialogue_renders_with_its_events_placed(tmp_path):
    script = write_script(scripted_writer, "gen-1", "shopping", ["smooth", "interruption", "pause", "background"], rounds=10)
    assert len(script["rounds"]) == 10 and script["rounds"][2]["user"] == ["Tell me about item number", "3 on the list please"]
    user, asst, rounds, opening = render_script(script, 16000)
    assert opening is None  # round 1 is smooth: nothing to open with
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
    from duplexeval.benchmarks.mtr.format import write_dialogue

    write_dialogue(sidecar, "gen-1", user, asst, 16000, rounds)
    assert [r.feature for r in load_dialogue(sidecar).rounds] == feats


def test_a_writer_with_the_wrong_round_count_is_refused():
    with pytest.raises(ScriptError, match="returned 2 rounds, expected 10"):
        write_script(lambda _: {"rounds": [{"user": "a", "assistant": "b"}] * 2}, "x", "t", ["smooth"])


def test_judge_writer_goes_through_the_judge_cache(tmp_path, monkeypatch):
    import json

    from _judge_server import FakeLLMServer, answer
    from _judge_specs import local_spec

    from duplexeval.benchmarks.mtr.generate import judge_writer
    from duplexeval.judges.cache import JudgeCache
    from duplexeval.judges.llm import Judge

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
    from duplexeval.benchmarks.mtr import datasets
    from duplexeval.benchmarks.mtr.items import load_dialogues
    from duplexeval.specs import Registry

    monkeypatch.setattr(datasets.urllib.request, "urlopen", refuse)
    bench = Registry.load().get("benchmark", "mtr-safety").data
    with pytest.raises(DatasetUnavailable, match="advbench: cannot download"):
        load_dialogues(bench)


# ---- round-1 interruptions (issue 13, item 8) -------------------------------------------

INTERRUPTIONS = {"id": "int-1", "opening": {"user": "I want to plan a weekend trip.",
                                            "assistant": "Great idea, a short trip to the coast could be very relaxing for you."},
                 "rounds": [{"feature": "interruption", "user": "Wait, is it cheap?",
                             "assistant": "The mountains are usually cheaper, because cabins cost less than hotels."},
                            {"feature": "interruption", "user": "Hold on, is there a train?",
                             "assistant": "There is no night train on that line, so take the morning one."}]}


def test_round_1_interruption_cuts_the_opening_reply(tmp_path):
    user, asst, rounds, opening = render_script(INTERRUPTIONS, 16000, timing=TIMING)
    r1 = rounds[0]
    assert r1["round"] == 1 and r1["feature"] == "interruption"
    cut = r1["events"][0]
    assert cut["type"] == "interruption" and cut["start"] == r1["user"]["start"]
    # The user cuts in 1.5 s into the opening's reply, which stops 0.3 s later.
    assert r1["user"]["start"] == pytest.approx(opening["assistant"]["start"] + 1.5, abs=1e-3)
    assert opening["assistant"]["end"] == pytest.approx(r1["user"]["start"] + 0.3, abs=1e-3)
    assert opening["user"]["end"] < opening["assistant"]["start"]
    a, b = int(opening["assistant"]["end"] * 16000) + 1, int(r1["assistant"]["start"] * 16000)
    assert abs(asst[a:b]).max() == 0.0  # the opening reply really stops at the cut
    assert abs(asst[int(opening["assistant"]["start"] * 16000):a]).max() > 0.01
    sidecar = write_dialogue(tmp_path / "int-1.json", "int-1", user, asst, 16000, rounds, opening=opening)
    d = load_dialogue(sidecar)
    assert d.opening is not None and d.opening.round == 0 and d.rounds[0].feature == "interruption"


def test_round_1_interruption_without_an_opening_is_refused():
    script = {**INTERRUPTIONS, "opening": None}
    with pytest.raises(ScriptError, match=r"round 1: an interruption needs an assistant reply before it .*`opening`"):
        render_script(script, 16000)


def test_an_opening_reply_too_short_to_interrupt_is_refused():
    script = {**INTERRUPTIONS, "opening": {"user": "Hi.", "assistant": "Yes?"}}
    with pytest.raises(ScriptError, match="the reply of the opening is too short to interrupt"):
        render_script(script, 16000, timing=TIMING)


def test_a_sidecar_opening_with_an_interruption_and_no_opening_is_refused(tmp_path):
    user, asst, rounds, opening = render_script(INTERRUPTIONS, 16000, timing=TIMING)
    with pytest.raises(DialogueFormatError, match=r"int-1.json: rounds\[0\] is an interruption but the dialogue has no `opening`"):
        write_dialogue(tmp_path / "int-1.json", "int-1", user, asst, 16000, rounds)
    late = {"user": {**opening["user"], "end": rounds[0]["user"]["start"] + 0.5}, "assistant": opening["assistant"]}
    with pytest.raises(DialogueFormatError, match="opening.user ends after round 1 starts"):
        write_dialogue(tmp_path / "int-1.json", "int-1", user, asst, 16000, rounds, opening=late)


def test_the_writer_gives_an_interruption_first_dialogue_one_smooth_exchange_as_its_opening():
    asked = []

    def writer(inputs):
        asked.append(inputs)
        return scripted_writer(inputs)

    script = write_script(writer, "gen-i", "travel", ["interruption"], rounds=3)
    assert asked[0]["rounds"] == 4 and asked[0]["features"] == ["smooth", "interruption", "interruption", "interruption"]
    assert script["opening"]["user"] == "Tell me about item number 1 on the list please"
    assert [r["feature"] for r in script["rounds"]] == ["interruption"] * 3
    assert "opening" not in write_script(scripted_writer, "gen-s", "travel", ["smooth", "interruption"], rounds=2)


# ---- AdvBench inside interruption contexts (issue 13, item 11) ---------------------------

def test_advbench_rows_in_interruption_contexts_cut_the_previous_reply():
    rows = parse_advbench("goal,target\n" + "".join(f"Request number {i} please,Sure\n" for i in range(3)))
    script = scripts_from_rows("advbench", rows, 10, "interruption")
    (d,) = script["dialogues"]
    assert d["id"] == "advbench-interruption-001" and d["opening"] == OPENING
    assert [r["feature"] for r in d["rounds"]] == ["interruption"] * 3 and d["rounds"][0]["request"] == "Request number 0 please"
    _, _, rounds, opening = render_script(d, 16000, timing=TIMING)  # the refusal is long enough to be cut
    assert rounds[0]["user"]["start"] < opening["assistant"]["end"] + 1e-9
    assert rounds[1]["user"]["start"] == pytest.approx(rounds[0]["assistant"]["start"] + 1.5, abs=1e-3)
    assert rounds[0]["assistant"]["text"] == REFUSAL_REPLY
    assert scripts_from_rows("advbench", rows, 10)["dialogues"][0]["id"] == "advbench-001"  # smooth: as before


def test_a_text_set_builds_only_smooth_or_interruption_dialogues():
    assert dialogue_setting({"id": "mtr-safety-interruption", "features": ["interruption"]}) == "interruption"
    assert dialogue_setting({"id": "mtr-instruction"}) == "smooth"
    with pytest.raises(ValueError, match=r"benchmark mtr-x: features \['pause'\] cannot be built from a text data set"):
        dialogue_setting({"id": "mtr-x", "features": ["pause"]})
