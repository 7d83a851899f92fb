"""MTR history-as-heard played one-pass (one session per dialogue, each round cut at its
window end) against per-round (a fresh session per round): same bytes, same scores.

Two deterministic models without teacher_forcing: the babbler (24 kHz, resampled) with its
spec's capabilities taken away, and a stand-in that echoes what it heard (tests/echo_agent.py,
16 kHz), whose output depends on its input. Three rounds of the embedded S+I dialogue
on the lockstep clock; the realtime clock's cut on two short stand-in items (a tone).
Scores use real Silero VAD and a stand-in transcriber (one word per 0.3 s of audio).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from duplexeval.benchmarks.mtr.items import history_as_heard, load_dialogues, scored_rounds
from duplexeval.benchmarks.mtr.plan import HISTORY_FLAG, MtrPlan
from duplexeval.benchmarks.mtr.score import judges_for, score_bench_dir
from duplexeval.runfolder.plan import Job
from duplexeval.runner.items import ModelHost, prepare_out_dir
from duplexeval.runner.stimulus import Stimulus
from duplexeval.specs import Registry
from duplexeval.specs.loader import Spec

ROUNDS = 3
TESTS = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def registry():
    return Registry.load()


def mtr_bench(registry, played: str | None = None) -> dict:
    bench = json.loads(json.dumps(registry.get("benchmark", "mtr-combo-si").data))
    bench["data"] = {"source": "embedded", "path": "data/embedded/mtr/features.yaml"}
    bench["rounds"] = ROUNDS
    if played is not None:
        bench["context"]["history_as_heard"] = played
    return bench


def echo_spec(crash_at: int | None = None) -> dict:
    """The echo stand-in (tests/echo_agent.py): 16 kHz, no teacher_forcing, no labels."""
    extra = ["--crash-at", str(crash_at)] if crash_at is not None else []
    return {"id": "echo-standin" if crash_at is None else f"echo-standin-crash{crash_at}", "kind": "model",
            "launch": {"backend": "local", "startup_timeout_s": 20, "step_timeout_s": 5,
                       "command": [sys.executable, str(TESTS / "echo_agent.py"), "--socket", "{socket}", *extra]},
            "audio": {"in_rate": 16000, "out_rate": 16000, "frame_ms": 80},
            "clocks": ["lockstep", "realtime"], "capabilities": []}


def babbler_without_forcing(registry) -> dict:
    """The babbler (24 kHz) with its spec's capabilities taken away: history-as-heard."""
    return {**json.loads(json.dumps(registry.get("model", "babbler").data)), "capabilities": []}


def plan_for(registry, model: dict, bench: dict, folder: Path, sessions: int | None = None) -> MtrPlan:
    from duplexeval.specs.modelspec import model_spec_from

    runner = model_spec_from(model).with_max_sessions(sessions) if sessions else None
    job = Job(model=Spec("model", model["id"], model, TESTS), benchmark=registry.get("benchmark", "mtr-combo-si"),
              bench=bench, runner=runner)
    return MtrPlan(job, folder, clock="lockstep", seed=0, cache_mode="readwrite", limit=None)


def play(plan: MtrPlan) -> list:
    plan.prepare()
    host = ModelHost(plan.spec)
    try:
        return [r for unit in plan.units() for r in plan.play(host, unit)]
    finally:
        host.close()


def standin_transcriber(audio: np.ndarray, rate: int, options: dict) -> SimpleNamespace:
    """Stand-in ASR: one word per 0.3 s of the audio it is given (a pure function of its length)."""
    n = max(1, int(len(audio) / rate / 0.3))
    words = [SimpleNamespace(text=f"w{k}", start=0.3 * k, end=0.3 * k + 0.25) for k in range(n)]
    return SimpleNamespace(words=words, text=" ".join(w.text for w in words))


def scores(plan: MtrPlan) -> tuple[list[dict], dict]:
    results = score_bench_dir(plan.bench_dir, plan.job.bench, judges_for(plan.job.bench), context=plan.context,
                              transcriber=standin_transcriber)
    records = [json.loads(line) for line in (plan.bench_dir / "records.jsonl").read_text().splitlines()]
    return records, results


@pytest.mark.parametrize("which", ["echo", "babbler"])
def test_one_pass_and_per_round_record_the_same_bytes_and_scores(tmp_path, registry, which):
    model = echo_spec() if which == "echo" else babbler_without_forcing(registry)
    one = plan_for(registry, model, mtr_bench(registry), tmp_path / "one")
    per = plan_for(registry, model, mtr_bench(registry, "per-round"), tmp_path / "per")
    assert (one.mode, one.one_pass, per.one_pass) == ("history-as-heard", True, False)
    assert [u.item_ids for u in one.units()] == [("feat-si.r01", "feat-si.r02", "feat-si.r03")]
    assert len(per.units()) == ROUNDS
    a, b = play(one), play(per)
    assert [r.status for r in a] == [r.status for r in b] == ["ok"] * ROUNDS
    for r in a:
        x = (one.bench_dir / "items" / r.item_id / "recording.wav").read_bytes()
        y = (per.bench_dir / "items" / r.item_id / "recording.wav").read_bytes()
        assert x == y, r.item_id
    said = (one.bench_dir / "items/feat-si.r03/recording.wav").stat().st_size
    assert said > (one.bench_dir / "items/feat-si.r01/recording.wav").stat().st_size  # rounds end apart
    ra, sa = scores(one)
    rb, sb = scores(per)
    assert ra == rb and sa["metrics"] == sb["metrics"] and sa["rounds"] == sb["rounds"]
    if which == "echo":  # the echo speaks after each user turn: the rounds' speech is really there
        assert all(r["segments"] for r in ra)
    assert sa["context"] == {"mode": "history-as-heard", "teacher_forcing": False, "flag": HISTORY_FLAG,
                             "history_as_heard": "one-pass"}
    assert sb["context"]["history_as_heard"] == "per-round"
    assert json.loads((one.bench_dir / "context.json").read_text())["history_as_heard"] == "one-pass"


def test_each_round_has_its_own_events_cut_at_its_window_end(tmp_path, registry):
    plan = plan_for(registry, echo_spec(), mtr_bench(registry), tmp_path / "one")
    play(plan)
    for k in range(1, ROUNDS + 1):
        item = plan.bench_dir / "items" / f"feat-si.r{k:02d}"
        events = [json.loads(line) for line in (item / "events.jsonl").read_text().splitlines()]
        status = json.loads((item / "status.json").read_text())
        assert [e["round"] for e in events if e["type"] == "round_start"] == [k]  # only its own round
        end = events[-1]
        assert end["type"] == "session_end" and end["frames"] == status["frames"]
        assert end["one_pass"]["session_frames"] >= status["frames"]
        assert all(e["frame"] <= status["frames"] for e in events)


def test_a_fault_mid_dialogue_errors_only_the_rounds_not_reached(tmp_path, registry):
    bench = mtr_bench(registry)
    rounds = scored_rounds(bench, load_dialogues(bench))
    # Crash inside round 3's window, after round 2's window has ended (80 ms frames).
    r2_end, r3_end = (int(np.ceil(sr.window.end_s / 0.08)) for sr in rounds[1:3])
    assert r3_end - r2_end > 2
    plan = plan_for(registry, echo_spec(crash_at=r2_end + 1), bench, tmp_path / "one")
    results = play(plan)
    assert [r.status for r in results] == ["ok", "ok", "error"]
    assert "simulated crash" in results[2].reason  # the server's stderr joins the reason
    ok = plan_for(registry, echo_spec(), mtr_bench(registry, "per-round"), tmp_path / "per")
    play(ok)
    for k in (1, 2):  # the rounds complete before the crash keep exactly their recordings
        name = f"items/feat-si.r{k:02d}/recording.wav"
        assert (plan.bench_dir / name).read_bytes() == (ok.bench_dir / name).read_bytes()
    records, results_json = scores(plan)
    assert [r["outcome"] == "error" for r in records] == [False, False, True]
    assert results_json["complete"] is False


def test_a_crashed_run_resumes_the_dialogue_as_a_whole(tmp_path, registry):
    plan = plan_for(registry, echo_spec(), mtr_bench(registry), tmp_path / "one")
    first = play(plan)
    assert [r.status for r in first] == ["ok"] * ROUNDS
    again = play(plan_for(registry, echo_spec(), mtr_bench(registry), tmp_path / "one"))
    assert all(r.skipped for r in again)  # a finished dialogue plays no session
    before = {r.item_id: (r.item_dir / "recording.wav").read_bytes() for r in first}
    # A kill before round 3 was written: its folder has no status.json (nothing finished).
    shutil.rmtree(plan.bench_dir / "items/feat-si.r03")
    (plan.bench_dir / "items/feat-si.r02/status.json").unlink()
    redone = play(plan_for(registry, echo_spec(), mtr_bench(registry), tmp_path / "one"))
    assert [(r.status, r.skipped) for r in redone] == [("ok", False)] * ROUNDS  # round 1 replayed too
    assert {r.item_id: (r.item_dir / "recording.wav").read_bytes() for r in redone} == before


class Prefix(Stimulus):
    """A stand-in item: a tone (the same for every item) heard up to `seconds`, its frame count
    as `n_frames`, one event at its last frame."""

    def __init__(self, audio: np.ndarray, seconds: float):
        self.audio, self.seconds = audio, seconds
        self.events: list[dict] = []

    def bind(self, rate: int, frame_samples: int) -> None:
        super().bind(rate, frame_samples)
        self.n_frames = int(round(self.seconds * rate)) // frame_samples

    def next_input(self, frame_idx: int) -> np.ndarray | None:
        if frame_idx >= self.n_frames:
            return None
        if frame_idx == self.n_frames - 1:
            self.events.append({"frame": frame_idx, "type": "last_frame"})
        f = self.frame_samples
        return self.audio[frame_idx * f:(frame_idx + 1) * f]

    def drain_events(self) -> list[dict]:
        out, self.events = self.events, []
        return out


def test_one_pass_on_the_realtime_clock_cuts_each_item_from_one_session(tmp_path):
    from duplexeval.audio import read_stereo_recording
    from duplexeval.runner.fork import play_group
    from duplexeval.specs.modelspec import model_spec_from

    tone = (0.3 * np.sin(2 * np.pi * 330 * np.arange(32000) / 16000)).astype(np.float32)
    items = [("a", lambda: Prefix(tone, 0.8)), ("b", lambda: Prefix(tone, 1.6))]
    spec = model_spec_from(echo_spec())
    out = prepare_out_dir(spec, ["a", "b"], tmp_path, "realtime", 16000, 0, None)
    host = ModelHost(spec)
    try:
        results = play_group(host, out, "g", items, rate=16000, seed=0, prompt=None, one_pass_clock="realtime")
    finally:
        host.close()
    assert [r.status for r in results] == ["ok", "ok"]
    statuses = [json.loads((r.item_dir / "status.json").read_text()) for r in results]
    assert [(s["clock"], s["frames"]) for s in statuses] == [("realtime", 10), ("realtime", 20)]
    assert statuses[0]["one_pass"]["session_frames"] == 20 and "underrun_frames" in statuses[0]["one_pass"]
    h1, s1, _ = read_stereo_recording(results[0].item_dir / "recording.wav")
    h2, s2, _ = read_stereo_recording(results[1].item_dir / "recording.wav")
    assert len(h1) == 10 * 1280 and np.array_equal(h1, h2[: len(h1)]) and np.array_equal(s1, s2[: len(s1)])
    assert np.abs(s2).max() > 0.0  # the echo was heard
    events = [json.loads(line) for line in (results[0].item_dir / "events.jsonl").read_text().splitlines()]
    assert [e["frame"] for e in events if e["type"] == "last_frame"] == [9]  # its own event only


def test_history_as_heard_mode_is_a_checked_spec_field(registry):
    assert history_as_heard(mtr_bench(registry)) == "one-pass"  # the default
    assert history_as_heard(mtr_bench(registry, "per-round")) == "per-round"
    with pytest.raises(ValueError, match="context.history_as_heard must be one of"):
        history_as_heard(mtr_bench(registry, "twice"))
    import jsonschema

    from duplexeval.specs.loader import schema_for

    validator = jsonschema.Draft202012Validator(schema_for("benchmark"))
    assert not list(validator.iter_errors(mtr_bench(registry, "per-round")))
    errors = list(validator.iter_errors(mtr_bench(registry, "twice")))
    assert [list(e.absolute_path) for e in errors] == [["context", "history_as_heard"]]


def test_per_round_stays_quadratic_and_one_pass_linear_in_the_cost_model(registry):
    from duplexeval.benchmarks.mtr.plugin import MtrDuplexBench

    fam = MtrDuplexBench()
    bench = {**mtr_bench(registry), "rounds": 10}
    per = {**bench, "context": {**bench["context"], "history_as_heard": "per-round"}}
    assert fam.unit_audio_s(bench, capabilities=(), clock="realtime") == 10 * 12.0
    assert fam.unit_audio_s(per, capabilities=(), clock="realtime") == 55 * 12.0
    assert fam.unit_audio_s(bench, capabilities=("teacher_forcing",), clock="realtime") == 55 * 12.0  # replay


def test_batched_sessions_play_one_pass_dialogues_as_one_session_each(tmp_path, registry):
    """The babbler's server holds 4 sessions (launch.max_sessions): a worker's batch path
    (runner/unit_batch.py) plays a one-pass dialogue as one of them, same bytes."""
    from duplexeval.executors.base import UnitWorker

    model = babbler_without_forcing(registry)
    one = plan_for(registry, model, mtr_bench(registry), tmp_path / "one", sessions=4)
    per = plan_for(registry, model, mtr_bench(registry, "per-round"), tmp_path / "per", sessions=4)
    assert one.max_sessions == 4
    for plan in (one, per):  # a worker keeps one plan per job key: one worker each
        worker = UnitWorker(plan.context["history_as_heard"])
        try:
            plan.prepare()
            reports = worker.run_batch([(plan, u) for u in plan.units()])
            assert all(r.state == "ok" for r in reports)
        finally:
            worker.close()
    for k in range(1, ROUNDS + 1):
        name = f"items/feat-si.r{k:02d}/recording.wav"
        assert (one.bench_dir / name).read_bytes() == (per.bench_dir / name).read_bytes()
        status = json.loads((one.bench_dir / name).with_name("status.json").read_text())
        assert status["clock"] == "lockstep" and "one_pass" in status


def test_the_manifest_records_each_mtr_jobs_context(registry):
    """`run` writes `jobs[].context` from the family's run_context hook (runs/execute.py)."""
    from duplexeval.runfolder.plan import plan_suite
    from duplexeval.runs.execute import run_context

    jobs = {j.key: j for j in plan_suite(registry, "paper-mtr")}
    heard = run_context(jobs["vocalnet/mtr-smooth-turn-taking"], "realtime")
    assert heard == {"mode": "history-as-heard", "teacher_forcing": False, "flag": HISTORY_FLAG,
                     "history_as_heard": "one-pass"}
    assert run_context(jobs["moshi/mtr-smooth-turn-taking"], "lockstep") == {"mode": "fork", "teacher_forcing": True,
                                                                             "flag": None}
    mpe = next(j for j in plan_suite(registry, "paper-mpe"))
    assert run_context(mpe, "lockstep") is None  # a family without such a choice records nothing


def test_a_folder_begun_per_round_is_not_finished_one_pass(tmp_path, registry):
    from duplexeval.runner.errors import RunConfigMismatch

    per = plan_for(registry, echo_spec(), mtr_bench(registry, "per-round"), tmp_path / "job")
    per.prepare()
    with pytest.raises(RunConfigMismatch, match="history_as_heard changed"):
        plan_for(registry, echo_spec(), mtr_bench(registry), tmp_path / "job").prepare()
    one = plan_for(registry, echo_spec(), mtr_bench(registry), tmp_path / "other")
    one.prepare()
    one.prepare()  # a one-pass folder resumes one-pass
