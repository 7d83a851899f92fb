"""score_item / score_bench_dir on item folders made by the real scheduler, Silero VAD,
flite speech on the model channel, the offline ASR and the offline judges."""

from pathlib import Path

import pytest
from mpe_helpers import RATE, AmplitudeVAD, ClipModel, fake_conversation, run_scheduler, spec, write_item

from duplexeval.benchmarks.mpe.results import score_bench_dir
from duplexeval.benchmarks.mpe.scenes.scheduler import MPEScheduler
from duplexeval.benchmarks.mpe.score import CallCounter, score_item
from duplexeval.judges.asr import Transcript
from duplexeval.judges.llm import Judge
from duplexeval.specs import load_spec, repo_root
from duplexeval.tts import synthesize

FRAME = 1280
LABELS = [("N2", 1.0), ("T", 1.3), ("N2", 1.1), ("N4Q", 1.2), ("N4R", 1.05), ("N3", 0.9)]
SPEC = spec()


@pytest.fixture(scope="module")
def judges():
    # One file each, not the whole registry: these tests need only the two offline judges.
    specs = {role: load_spec(repo_root() / "specs" / "judges" / f"{jid}.yaml", "judge")
             for role, jid in SPEC["judges"].items()}
    return {role: Judge.from_spec(s.data, s.path) for role, s in specs.items()}


def make_item(item_dir: Path, cues) -> Path:
    model = ClipModel(FRAME, cues)
    sch = MPEScheduler(fake_conversation(LABELS), SPEC, vad_factory=lambda: AmplitudeVAD(FRAME / RATE))
    inputs, outputs, events, _ = run_scheduler(sch, FRAME, model)
    write_item(item_dir, inputs, outputs, events)
    return item_dir


def by_metric(records, metric):
    return [r for r in records if r["metric"] == metric]


def refuse_asr(audio, rate, asr):
    raise AssertionError("ASR must not run on a recording without speech")


def test_silent_model_passes_every_shush_window_with_zero_asr_and_judge_calls(tmp_path, judges):
    item = make_item(tmp_path / "silent", [])
    calls = CallCounter()
    records = score_item(item, SPEC, judges, transcriber=refuse_asr, calls=calls)
    shush = by_metric(records, "shush")
    assert len(shush) == 3 and all(r["passed"] and r["outcome"] == "silent" for r in shush)
    assert (calls.asr, calls.judge) == (0, 0)
    assert by_metric(records, "start")[0]["outcome"] == "miss"
    assert by_metric(records, "answer") == []
    assert by_metric(records, "stop")[0]["outcome"] == "excluded_no_onset_in_gap"


def test_answering_t_with_the_gold_answer_is_fresh_and_correct(tmp_path, judges):
    # Right at T's end: flite's lead-in silence puts the onset ~0.2 s later, so the causal
    # VAD confirms speech before the 0.5 s gap ends and the next turn waits (§3.4).
    item = make_item(tmp_path / "answer", [("T", "end", 0.0, synthesize("Nine dollars.", "kal16", RATE))])
    records = score_item(item, SPEC, judges)
    start = by_metric(records, "start")[0]
    assert start["outcome"] == "fresh" and start["times"]["latency_s"] < 1.0
    answer = by_metric(records, "answer")[0]
    assert answer["passed"], answer
    assert answer["judge_id"] == "mpe-answer-offline" and answer["cache_key"]
    assert all(r["passed"] for r in by_metric(records, "shush"))


def test_nine_dollars_in_a_silence_window_fails_shush(tmp_path, judges):
    item = make_item(tmp_path / "intrude", [("N2", "start", 0.2, synthesize("Nine dollars.", "kal16", RATE))])
    records = score_item(item, SPEC, judges)
    first = by_metric(records, "shush")[0]
    assert first["passed"] is False and first["outcome"] == "intrusion", first
    assert "9" in first["transcript"]


def test_speech_with_an_empty_transcript_fails_shush_without_a_judge_call(tmp_path, judges):
    item = make_item(tmp_path / "mumble", [("N2", "start", 0.2, synthesize("Okay.", "slt", RATE))])
    calls = CallCounter()
    empty = lambda audio, rate, asr: Transcript("", [], "test", "test")  # noqa: E731
    records = score_item(item, SPEC, judges, transcriber=empty, calls=calls)
    first = by_metric(records, "shush")[0]
    assert first["passed"] is False and first["outcome"] == "unreadable_speech"
    assert calls.asr == 1 and calls.judge == 0


def test_a_backchannel_passes_shush(tmp_path, judges):
    item = make_item(tmp_path / "okay", [("N2", "start", 0.2, synthesize("Okay.", "slt", RATE))])
    records = score_item(item, SPEC, judges)
    first = by_metric(records, "shush")[0]
    assert first["passed"] is True and first["outcome"] == "backchannel", first


def test_scoring_twice_gives_byte_identical_results(tmp_path, judges):
    bench = tmp_path / "model" / "mpe-explicit"
    make_item(bench / "items" / "a", [("T", "end", 0.2, synthesize("Nine dollars.", "kal16", RATE))])
    make_item(bench / "items" / "b", [("N3", "start", 0.1, synthesize("Got it.", "slt", RATE))])
    (bench / "items" / "c").mkdir()  # unfinished: no status.json
    first = score_bench_dir(bench, SPEC, judges)
    bytes1 = (bench / "results.json").read_bytes(), (bench / "records.jsonl").read_bytes()
    score_bench_dir(bench, SPEC, judges)
    bytes2 = (bench / "results.json").read_bytes(), (bench / "records.jsonl").read_bytes()
    assert bytes1 == bytes2
    m = first["metrics"]
    assert m["start"]["outcomes"] == {"fresh": 1, "already_speaking": 0, "miss": 1, "error": 0}
    assert m["answer"] == {**m["answer"], "numerator": 1, "denominator": 1}
    assert first["complete"] is False and first["incomplete"]["items"] == {"unfinished": 1}
    assert m["shush"]["denominator"] == 6
    assert m["stop"]["reported"] is False and m["stop"]["n4_events"] == 2
    assert first["items"] == {"error": 0, "ok": 2, "total": 3, "unfinished": 1}
