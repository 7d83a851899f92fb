"""`duplexeval run` of a realtime-API model: one Duplex-MPE scene and one MTR dialogue through
the bridge, against the local STAND-IN Realtime server (tests/_realtime_standin.py), scored
like any run; no planted key reaches any file of the run.

The stand-in is no model: it answers each user turn with a short flite sentence, so the
scores below only show that the recordings went through VAD, ASR and the judges. The
model spec is gpt-realtime's with a stand-in id in a spec tree of the test's own, its
lateness bound raised from 250 ms to 3 s (a shared 2-core machine; the bound itself is
tested in test_realtime_bridge.py). Wall clock: the scene and the dialogue are ~20 s of
audio played in real time, plus scoring.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))
from _realtime_standin import StandInRealtimeServer  # noqa: E402

from duplexeval.cli import cli
from duplexeval.resources import bundle_root
from duplexeval.runfolder.verify import scan_secrets

KEY = "sk-test-PLANTED-realtime-run-0123456789abcdef"

SCENE = {
    "id": "rt-counter", "source": "embedded",
    "attributes": {"setting": "a shop counter", "activity": "buying", "relationship": "friends", "devices": "none",
                   "register": "casual"},
    "speakers": {"A": "slt", "B": "rms", "C": "awb", "D": "kal16"},
    "preamble": {"text": "You are Aria. Answer only when asked.", "voice": "slt"},
    "turns": [
        {"speaker": "A", "label": "N2", "text": "The pie is eight dollars."},
        {"speaker": "B", "label": "T", "variants": {"explicit": "Aria, how much is the pie?",
                                                     "implicit": "So how much is the pie?"},
         "gold_answer": "eight dollars"},
        {"speaker": "C", "label": "N3", "text": "I am hungry."},
    ],
}
DIALOGUES = {
    "kind": "mtr-dialogues", "voices": {"user": "awb", "assistant": "slt"},
    "timing": {"lead_in_s": 0.5, "response_gap_s": 0.5, "next_turn_gap_s": 0.8, "tail_s": 2.5},
    "dialogues": [{"id": "rt-instr", "rounds": [{"user": "What is the capital of France?",
                                                  "assistant": "The capital of France is Paris.", "gold_answer": "Paris"}]}],
}


@pytest.fixture(scope="module")
def standin():
    server = StandInRealtimeServer(key=KEY, reply_text="The pie is eight dollars.").start()
    yield server
    server.stop()
    assert server.invalid == []  # every event it sent is one the openai SDK's types accept


@pytest.fixture(scope="module")
def spec_tree(tmp_path_factory, standin) -> Path:
    root = tmp_path_factory.mktemp("rt-project")
    (root / "specs" / "models").mkdir(parents=True)
    (root / "specs" / "suites").mkdir()
    (root / "data" / "scenes").mkdir(parents=True)
    (root / "data" / "scenes" / "rt-counter.yaml").write_text(yaml.safe_dump(SCENE))
    (root / "data" / "instruction.yaml").write_text(yaml.safe_dump(DIALOGUES))
    model = yaml.safe_load((bundle_root() / "specs" / "models" / "gpt-realtime.yaml").read_text())
    model.update(id="rt-standin", name="Realtime stand-in (tests only)")
    model["launch"]["realtime"].update(base_url=standin.url, max_send_lateness_ms=3000)
    (root / "specs" / "models" / "rt-standin.yaml").write_text(yaml.safe_dump(model))
    suite = yaml.safe_load((bundle_root() / "specs" / "suites" / "embedded.yaml").read_text())
    suite.pop("golden", None)  # the embedded suite's expected numbers are not this one's
    suite.update(id="rt-standin-suite", clock="realtime",
                 runs=[{"models": ["rt-standin"], "benchmarks": ["mpe-explicit", "mtr-instruction"]}])
    suite["overrides"]["data"] = {"mpe": {"source": "embedded", "path": str(root / "data" / "scenes")},
                                  "mtr-instruction": {"source": "embedded", "path": str(root / "data" / "instruction.yaml")}}
    (root / "specs" / "suites" / "rt-standin-suite.yaml").write_text(yaml.safe_dump(suite))
    return root


@pytest.fixture(scope="module")
def run_dir(spec_tree, standin, tmp_path_factory):
    runs = tmp_path_factory.mktemp("rt-runs")
    mp = pytest.MonkeyPatch()
    mp.setenv("DUPLEXEVAL_SPECS", str(spec_tree / "specs"))
    mp.setenv("OPENAI_API_KEY", KEY)
    try:
        res = CliRunner().invoke(cli, ["run", "--suite", "rt-standin-suite", "--runs-dir", str(runs), "--run-id", "rt"])
    finally:
        mp.undo()
    assert res.exit_code == 0, res.output
    assert KEY not in res.output
    return runs / "rt"


@pytest.mark.slow
def test_an_mpe_scene_and_an_mtr_dialogue_through_the_bridge_score_like_any_run(run_dir, standin):
    for bench, unit in (("mpe-explicit", "rt-counter"), ("mtr-instruction", "rt-instr.r01")):
        job = run_dir / "rt-standin" / bench
        status = json.loads((job / "items" / unit / "status.json").read_text())
        assert status["status"] == "ok" and status["clock"] == "realtime", status
        # An MTR round of a model without teacher forcing is cut from one session per dialogue
        # (runner/one_pass.py): the session's account (the bridge's timing) sits under `one_pass`.
        account = status["one_pass"] if bench.startswith("mtr-") else status
        assert account["remote_timing"]["appends"] > 0 and account["remote_timing"]["receive"]["deltas"] > 0
        events = [json.loads(x) for x in (job / "items" / unit / "events.jsonl").read_text().splitlines()]
        assert any(e.get("event") == "response.done" for e in events)
        results = json.loads((job / "results.json").read_text())
        assert results["items"]["ok"] == 1 and results["items"].get("error", 0) == 0
        assert (job / "records.jsonl").read_text().strip()
    mpe = json.loads((run_dir / "rt-standin" / "mpe-explicit" / "results.json").read_text())["metrics"]
    assert mpe["presence"]["denominator"] == 1 and mpe["presence"]["numerator"] == 1  # its reply was heard as speech
    assert standin.appends > 0


@pytest.mark.slow
def test_no_planted_key_reaches_the_run_folder(run_dir, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    assert scan_secrets(run_dir) == []
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert b"PLANTED" not in path.read_bytes(), path


@pytest.mark.slow
def test_max_cost_stops_a_run_at_the_limit_before_any_session(spec_tree, standin, tmp_path, monkeypatch):
    from duplexeval.realtime import cost

    monkeypatch.setenv("DUPLEXEVAL_SPECS", str(spec_tree / "specs"))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    appends = standin.appends
    try:
        # The next item is assumed as long as the run's longest unit (131.4 s of MPE, its spec's unit_audio): 0.13 at 0.06/min > 0.01.
        res = CliRunner().invoke(cli, ["run", "--suite", "rt-standin-suite", "--runs-dir", str(tmp_path), "--run-id", "b",
                                       "--benchmarks", "mtr-instruction", "--price-per-minute", "0.06",
                                       "--max-cost", "0.01"])
    finally:
        for name in (cost.LEDGER_ENV, cost.MAX_COST_ENV, cost.PRICE_ENV, cost.NEXT_ITEM_ENV):
            os.environ.pop(name, None)  # the CLI set them for its bridges (not monkeypatch: it would put them back)
    # An item the budget did not let play is not a result: the run says so with exit 4 (docs/reliability.md).
    assert res.exit_code == 4 and "STARTUP 1" in res.output, res.output
    status = json.loads((tmp_path / "b" / "rt-standin" / "mtr-instruction" / "items" / "rt-instr.r01" / "status.json")
                        .read_text())
    # Over the limit before the first session: the bridge does not even start (STARTUP, redone on resume).
    assert status["error_code"] == "STARTUP" and "--max-cost 0.01 reached" in status["reason"], status
    assert standin.appends == appends  # nothing was streamed
