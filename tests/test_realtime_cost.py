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
from _realtime_standin import running_standin  # noqa: E402

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
    # paper-mpe: 2,000 scenes per condition x 131.4 s (the spec's unit_audio: Table 6's 99.5 s
    # scene after the 31.9 s preamble) = 4,380 minutes, x 0.06 = 262.80 each.
    assert "| gpt-realtime | mpe-explicit | 2000 | 131.4 | 4380.0 | 0.06/min | 262.80 |" in res.output
    assert "total: 8760.0 audio minutes, cost 525.60" in res.output
    assert "runs only on the realtime clock" in res.output and "nothing is started" in res.output


def test_dry_run_bills_gpt_realtime_by_tokens_and_local_models_cost_nothing():
    res = CliRunner().invoke(cli, ["run", "--dry-run", "--suite", "paper-mpe", "--models", "gpt-realtime,moshi"])
    assert res.exit_code == 0, res.output
    # A 131.4 s scene: 14 replies (one per 10 s), reply k re-reads 10k s of user audio and 5(k-1) s of
    # replies: 1,505 s x 10 tokens/s = 15,050 input audio tokens x 32/M = 0.4816; 14 x 5 s x 20/s =
    # 1,400 output audio tokens x 64/M = 0.0896; 0.5712 per scene x 2,000 = 1,142.40.
    assert "| gpt-realtime | mpe-explicit | 2000 | 131.4 | 4380.0 | tokens | 1142.40 |" in res.output
    assert "| moshi | mpe-explicit | 2000 | 131.4 | 4380.0 | - | - |" in res.output


def test_dry_run_of_paper_fdb_gives_each_benchmark_a_token_estimate():
    res = CliRunner().invoke(cli, ["run", "--dry-run", "--suite", "paper-fdb", "--models", "gpt-realtime"])
    assert res.exit_code == 0, res.output
    # The suite points data at a copy placed by hand (no count): the spec's count is the same set.
    # A 30 s sample: 3 replies, 75 s re-read = 750 x 32/M + 300 x 64/M = 0.0432; x 137 = 5.92.
    assert "| gpt-realtime | fdb-pause-synthetic | 137 | 30 | 68.5 | tokens | 5.92 |" in res.output
    rows = [line for line in res.output.splitlines() if line.startswith("| gpt-realtime | fdb-")]
    assert len(rows) == 9 and all(float(r.split("|")[-2]) > 0 for r in rows), rows
    assert "?" not in "".join(rows) and "unknown size" not in res.output


def test_dry_run_counts_a_local_data_set_from_its_files():
    from duplexeval.resources import bundle_root

    scenes = len(list((bundle_root() / "data" / "embedded" / "mpe" / "scenes").glob("*.yaml")))
    res = CliRunner().invoke(cli, ["run", "--dry-run", "--suite", "embedded", "--models", "silent,babbler",
                                   "--benchmarks", "mpe-explicit,mtr-instruction"])
    assert res.exit_code == 0, res.output
    assert f"| silent | mpe-explicit | {scenes} | 131.4 | {scenes * 131.4 / 60:.1f} | - | - |" in res.output
    assert "| silent | mtr-instruction | 10 | 15 | 2.5 | - | - |" in res.output  # one dialogue of 10 queries x 15 s


def test_max_cost_without_a_price_is_refused_before_anything_starts(tmp_path):
    res = CliRunner().invoke(cli, ["run", "--suite", "embedded", "--models", "vllm-omni-personaplex", "--benchmarks",
                                   "mpe-explicit", "--clock", "realtime", "--max-cost", "1", "--runs-dir", str(tmp_path)])
    assert res.exit_code == 2 and "--max-cost needs a price for vllm-omni-personaplex" in res.output
    assert "Traceback" not in res.output and not list(tmp_path.iterdir())


@pytest.mark.parametrize("option,value", [("--max-cost", "nan"), ("--max-cost", "inf"), ("--price-per-minute", "nan"),
                                          ("--price-per-minute", "-1")])
def test_a_limit_or_price_that_is_not_a_finite_number_is_refused(option, value, tmp_path):
    res = CliRunner().invoke(cli, ["run", "--suite", "embedded", "--models", "gpt-realtime", option, value,
                                   "--runs-dir", str(tmp_path)])
    assert res.exit_code == 2 and "not a finite number" in res.output and "Traceback" not in res.output
    with pytest.raises(ValueError, match="finite"):
        cost.budget_env(tmp_path, float(value) if option == "--max-cost" else 1.0,
                        float(value) if option == "--price-per-minute" else None, [])


def test_the_next_item_is_estimated_as_the_longest_unit_of_the_run():
    per_min = cost.Pricing(per_minute=0.06)
    est = [cost.JobEstimate("m", "mpe", 3, 132.0, per_min), cost.JobEstimate("m", "mtr", 3, 660.0, per_min),
           cost.JobEstimate("local", "mtr", 3, 999.0, None)]
    env = cost.budget_env(Path("/tmp/run"), 5.0, 0.06, est)
    assert float(env[cost.NEXT_ITEM_ENV]) == 660.0 and env[cost.LEDGER_ENV] == "/tmp/run/cost-ledger.jsonl"


def test_a_response_done_usage_is_priced_per_token_class():
    prices = load_model_spec("gpt-realtime").data["launch"]["realtime"]["token_prices"]
    usage = {"input_tokens": 1000, "output_tokens": 300,
             "input_token_details": {"text_tokens": 200, "audio_tokens": 800, "cached_tokens": 500,
                                     "cached_tokens_details": {"text_tokens": 100, "audio_tokens": 400}},
             "output_token_details": {"text_tokens": 50, "audio_tokens": 250}}
    assert cost.usage_tokens(usage) == {"input_text": 100, "input_audio": 400, "cached_input_text": 100,
                                        "cached_input_audio": 400, "output_text": 50, "output_audio": 250}
    # 100 x 4 + 400 x 32 + 100 x 0.4 + 400 x 0.4 + 50 x 16 + 250 x 64 = 30,200 per million
    assert cost.usage_cost(usage, prices) == pytest.approx(0.0302)
    # Cached tokens without their breakdown are not discounted (never an underestimate).
    bare = {"input_tokens": 1000, "output_tokens": 0, "input_token_details": {"audio_tokens": 1000, "cached_tokens": 900}}
    assert cost.usage_cost(bare, prices) == pytest.approx(0.032)


def test_reservations_of_sessions_in_flight_never_let_the_cap_be_crossed(tmp_path):
    ledger = tmp_path / cost.LEDGER_NAME
    one = cost.Budget(ledger, 1.0, cost.Pricing(per_minute=1.0), 36.0)   # an item: 0.6
    two = cost.Budget(ledger, 1.0, cost.Pricing(per_minute=1.0), 36.0)   # a second bridge, same run
    first = one.reserve(0.6)
    with pytest.raises(cost.BudgetExceeded, match="0.6000 reserved by sessions in flight"):
        two.reserve(0.6)  # 0.6 + 0.6 > 1.0: the second parallel session does not start
    one.settle(first, "m", 0.3, 18.0, [])  # it cost less than reserved
    second = two.reserve(0.6)              # 0.3 + 0.6 <= 1.0
    with pytest.raises(cost.BudgetExceeded):
        one.reserve(0.2, second)           # growing past the limit is refused too
    assert one.state() == (pytest.approx(0.3), pytest.approx(0.6))
    # A reservation of a bridge that died holds nothing back.
    with open(ledger, "a") as f:
        f.write(json.dumps({"kind": "reserve", "id": "gone", "pid": 2 ** 22 + 12345, "cost": 5.0}) + "\n")
    assert one.state() == (pytest.approx(0.3), pytest.approx(0.6))


@pytest.fixture
def standin(monkeypatch):
    yield from running_standin(monkeypatch, KEY)


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
    spent = [e for e in map(json.loads, ledger.read_text().splitlines()) if e["kind"] == "settle"]
    # Billed as streamed when the session ended: the last frames may still be queued (2 frames here under load).
    assert len(spent) == 2 and all(1.08 <= e["audio_s"] <= 1.2 + 1e-6 for e in spent), spent
    assert sum(e["cost"] for e in spent) <= 0.05
    handshakes = standin.handshakes
    assert handshakes == 2  # the refused item never reached the API

    monkeypatch.setenv(cost.MAX_COST_ENV, "1.0")
    again = run_items(spec, items(4), tmp_path / "run", clock="realtime")
    assert [(r.status, r.skipped) for r in again] == [("ok", True), ("ok", True), ("ok", False), ("ok", False)]
    assert standin.handshakes == handshakes + 2  # only the two stopped items were played; finished ones never are
    assert len([line for line in ledger.read_text().splitlines() if '"settle"' in line]) == 4
    assert KEY not in ledger.read_text()


def speech_items(n: int):
    t = np.arange(int(0.6 * RATE)) / RATE
    audio = np.concatenate([(0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32), np.zeros(int(1.2 * RATE), np.float32)])
    return [(f"talk-{k}", lambda a=audio: FileStimulus(a, RATE)) for k in range(n)]


def test_a_token_priced_cap_settles_each_session_at_its_billed_tokens_and_is_never_crossed(standin, tmp_path,
                                                                                           monkeypatch):
    data = json.loads(json.dumps(load_model_spec("gpt-realtime").data))
    data["launch"]["realtime"]["max_send_lateness_ms"] = 3000
    spec = model_spec_from(data).with_backend(None, standin.url)
    ledger = tmp_path / "run" / cost.LEDGER_NAME
    # Each session reserves a 1.8 s item's estimate: one reply, 10 s re-read (100 x 32/M) + 5 s said
    # (100 x 64/M) = 0.0096. The stand-in bills ~9 input audio, 20 text, 12 output audio and 5 text
    # tokens per reply: c ~ 0.0012. A cap of 0.0096 + 1.5 c: two sessions, not a third.
    monkeypatch.setenv(cost.LEDGER_ENV, str(ledger))
    monkeypatch.setenv(cost.NEXT_ITEM_ENV, "1.8")
    monkeypatch.setenv(cost.MAX_COST_ENV, "0.0114")
    res = run_items(spec, speech_items(3), tmp_path / "run", clock="realtime")
    assert [r.status for r in res] == ["ok", "ok", "error"], [r.status for r in res]
    settled = [e for e in map(json.loads, ledger.read_text().splitlines()) if e["kind"] == "settle"]
    assert len(settled) == 2 and all(e["tokens"]["output_audio"] == 12 for e in settled), settled
    prices = data["launch"]["realtime"]["token_prices"]
    for e in settled:
        assert e["cost"] == pytest.approx(cost.tokens_cost(e["tokens"], prices))
    assert sum(e["cost"] for e in settled) <= 0.0114
    status = json.loads((tmp_path / "run" / "items" / "talk-2" / "status.json").read_text())
    assert status["error_code"] in ("BUDGET", "STARTUP") and "not run" in status["reason"], status


def test_full_duplex_bench_measures_its_unit_from_the_placed_samples(tmp_path):
    import soundfile as sf

    from duplexeval.benchmarks.registry import plugins

    fdb = plugins()["full-duplex-bench"]
    for name, seconds in (("a", 10.0), ("b", 20.0)):
        (tmp_path / "subset" / name).mkdir(parents=True)
        sf.write(tmp_path / "subset" / name / "input.wav", np.zeros(int(seconds * 16000), np.float32), 16000)
    assert fdb.unit_audio_s({"data": {"path": str(tmp_path)}}) == pytest.approx(15.0)
    declared = {"seconds": 30, "per": "unit", "kind": "assumed", "source": "ours"}
    absent = {"path": str(tmp_path / "absent")}
    assert fdb.unit_audio_s({"data": absent, "unit_audio": declared}) == 30.0  # not placed: the spec's figure
    assert fdb.unit_audio_s({"data": absent}) is None  # nor declared: unknown, never guessed
    assert fdb.planned_units({"data": {"count": 137}}) == 137 and fdb.planned_units({"data": {}}) is None


def test_every_paper_benchmark_declares_its_unit_audio_with_a_source():
    """The projection's audio per unit (bench/project_paper_suites.py) comes from each spec's
    `unit_audio`, published or assumed and sourced; the families' hooks read it."""
    from duplexeval.benchmarks.registry import benchmark_for
    from duplexeval.specs.registry import default_registry

    registry = default_registry()
    for suite in ("paper-mpe", "paper-mtr"):
        for bench_id in {b for run in registry.get("suite", suite).data["runs"] for b in run["benchmarks"]}:
            bench = registry.get("benchmark", bench_id).data
            declared = bench["unit_audio"]
            assert declared["kind"] in ("published", "assumed") and declared["source"], bench_id
            per_unit = benchmark_for(bench).unit_audio_s(bench, capabilities=("fork",), clock="lockstep")
            assert per_unit is not None and per_unit >= declared["seconds"], bench_id
    mpe = registry.get("benchmark", "mpe-explicit").data
    assert benchmark_for(mpe).unit_audio_s(mpe) == pytest.approx(99.5 + 31.9)  # Table 6's scene + the preamble
