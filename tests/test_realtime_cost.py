"""Cost before spending: the dry run's audio minutes and cost, --max-cost's guard, and a resume
that never plays a finished realtime item again (sessions against the local STAND-IN
Realtime server, tests/_realtime_standin.py; never a real API)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))
from _realtime_standin import StandInRealtimeServer  # noqa: E402

from duplexeval.cli import cli
from duplexeval.realtime import cost
from duplexeval.runner.items import run_items
from duplexeval.runner.stimulus import FileStimulus
from duplexeval.specs.modelspec import load_model_spec, model_spec_from

RATE = 16000
KEY = "sk-test-PLANTED-realtime-cost-0123456789abcdef"


def test_dry_run_prints_audio_minutes_and_cost_for_a_model_outside_the_suite():
    res = CliRunner().invoke(cli, ["run", "--dry-run", "--price-per-minute", "0.06", "--suite", "paper-mpe",
                                   "--models", "gpt-realtime"])
    assert res.exit_code == 0, res.output
    # paper-mpe: 2,000 scenes per condition x 132 s = 4,400 minutes, x 0.06 = 264.00 each.
    assert "| gpt-realtime | mpe-explicit | 2000 | 4400.0 | 0.06 | 264.00 |" in res.output
    assert "total: 8800.0 audio minutes, cost 528.00" in res.output
    assert "runs only on the realtime clock" in res.output and "nothing is started" in res.output


def test_dry_run_of_a_paid_model_without_a_price_says_so_and_local_models_cost_nothing():
    res = CliRunner().invoke(cli, ["run", "--dry-run", "--suite", "paper-mpe", "--models", "gpt-realtime,moshi"])
    assert res.exit_code == 0, res.output
    assert "gpt-realtime is a paid API with no price" in res.output
    assert "| moshi | mpe-explicit | 2000 | 4400.0 | - | - |" in res.output


def test_dry_run_counts_a_local_data_set_from_its_files():
    from duplexeval.resources import bundle_root

    scenes = len(list((bundle_root() / "data" / "embedded" / "mpe" / "scenes").glob("*.yaml")))
    res = CliRunner().invoke(cli, ["run", "--dry-run", "--suite", "embedded", "--models", "silent,babbler",
                                   "--benchmarks", "mpe-explicit,mtr-instruction"])
    assert res.exit_code == 0, res.output
    assert f"| silent | mpe-explicit | {scenes} | {scenes * 132 / 60:.1f} | - | - |" in res.output
    assert "| silent | mtr-instruction | 10 | 2.5 | - | - |" in res.output  # one dialogue of 10 queries x 15 s


def test_max_cost_without_a_price_is_refused_before_anything_starts(tmp_path):
    res = CliRunner().invoke(cli, ["run", "--suite", "embedded", "--models", "gpt-realtime", "--benchmarks",
                                   "mpe-explicit", "--clock", "realtime", "--max-cost", "1", "--runs-dir", str(tmp_path)])
    assert res.exit_code == 2 and "--max-cost needs a price per minute for gpt-realtime" in res.output
    assert "Traceback" not in res.output and not list(tmp_path.iterdir())


def test_the_next_item_is_estimated_as_the_longest_unit_of_the_run():
    est = [cost.JobEstimate("m", "mpe", 3, 132.0, 0.06), cost.JobEstimate("m", "mtr", 3, 660.0, 0.06),
           cost.JobEstimate("local", "mtr", 3, 999.0, None)]
    env = cost.budget_env(Path("/tmp/run"), 5.0, 0.06, est)
    assert float(env[cost.NEXT_ITEM_ENV]) == 660.0 and env[cost.LEDGER_ENV] == "/tmp/run/cost-ledger.jsonl"


@pytest.fixture
def standin(monkeypatch):
    server = StandInRealtimeServer(key=KEY).start()
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    yield server
    server.stop()


def items(n: int, seconds: float = 1.2):
    audio = np.zeros(int(seconds * RATE), dtype=np.float32)
    return [(f"item-{k}", lambda a=audio: FileStimulus(a, RATE)) for k in range(n)]


def test_max_cost_stops_before_the_next_item_would_cross_it_and_a_resume_plays_only_the_rest(standin, tmp_path,
                                                                                              monkeypatch):
    data = json.loads(json.dumps(load_model_spec("gpt-realtime").data))
    data["launch"]["realtime"]["max_send_lateness_ms"] = 3000  # a shared 2-core machine; not what is tested here
    spec = model_spec_from(data).with_backend(None, standin.url)
    ledger = tmp_path / "run" / cost.LEDGER_NAME
    # 1 per minute; each item streams 1.2 s (0.02) and the next is assumed to: 0.05 holds two items, not three.
    monkeypatch.setenv(cost.LEDGER_ENV, str(ledger))
    monkeypatch.setenv(cost.PRICE_ENV, "1.0")
    monkeypatch.setenv(cost.NEXT_ITEM_ENV, "1.2")
    monkeypatch.setenv(cost.MAX_COST_ENV, "0.05")
    first = run_items(spec, items(4), tmp_path / "run", clock="realtime")
    assert [r.status for r in first] == ["ok", "ok", "error", "error"]
    status = json.loads((tmp_path / "run" / "items" / "item-2" / "status.json").read_text())
    assert status["error_code"] == "BUDGET" and "--max-cost 0.05 reached" in status["reason"]
    # Once over the limit the bridge does not start again: the rest fail fast, redone on resume.
    status = json.loads((tmp_path / "run" / "items" / "item-3" / "status.json").read_text())
    assert status["error_code"] == "STARTUP" and "--max-cost 0.05 reached" in status["reason"]
    spent = [json.loads(line) for line in ledger.read_text().splitlines()]
    assert len(spent) == 2 and all(abs(e["audio_s"] - 1.2) < 0.05 for e in spent)
    handshakes = standin.handshakes
    assert handshakes == 2  # the refused item never reached the API

    monkeypatch.setenv(cost.MAX_COST_ENV, "1.0")
    again = run_items(spec, items(4), tmp_path / "run", clock="realtime")
    assert [(r.status, r.skipped) for r in again] == [("ok", True), ("ok", True), ("ok", False), ("ok", False)]
    assert standin.handshakes == handshakes + 2  # only the two stopped items were played; finished ones never are
    assert len(ledger.read_text().splitlines()) == 4
    assert KEY not in ledger.read_text()
