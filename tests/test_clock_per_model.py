"""`clock: per-model`: each job plays on its model's `latency_clock` (docs/runner.md, "The clock
per model"), the run's manifest says which clock every job used, and a model without a claim
keeps its first clock."""

from __future__ import annotations

import json

import pytest

from duplexeval.runfolder.plan import PER_MODEL, model_clock, plan_suite
from duplexeval.specs import Registry


@pytest.fixture(scope="module")
def registry() -> Registry:
    return Registry.load()


def test_paper_mtr_plays_moshi_lockstep_and_the_endpointing_models_realtime(registry):
    assert registry.get("suite", "paper-mtr").data["clock"] == PER_MODEL
    clocks = {j.model.id: j.clock for j in plan_suite(registry, "paper-mtr")}
    assert clocks["moshi"] == "lockstep"
    assert clocks["freeze-omni"] == clocks["vocalnet"] == clocks["cascaded-baseline"] == "realtime"


def test_a_fixed_clock_leaves_jobs_on_the_runs_clock_and_per_model_falls_back_to_the_first(registry):
    assert all(j.clock is None for j in plan_suite(registry, "paper-mtr", clock="realtime"))
    silent = registry.get("model", "silent")
    assert "latency_clock" not in silent.data
    assert model_clock(silent, PER_MODEL) == silent.data["clocks"][0]
    assert model_clock(silent, "realtime") == "realtime"


def test_a_per_model_run_records_each_jobs_clock_and_plays_on_it(tmp_path):
    from duplexeval.commands.run import run_suite

    run, outcomes = run_suite("embedded", models=["silent"], benchmarks=["mpe-explicit"], run_id="pm",
                              runs_dir=tmp_path, limit=1, clock=PER_MODEL)
    assert [o.status for o in outcomes] == ["scored"]
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["clock"] == PER_MODEL and [j["clock"] for j in manifest["jobs"]] == ["lockstep"]
    starts = [json.loads(line) for p in (run / "silent" / "mpe-explicit" / "items").glob("*/events.jsonl")
              for line in p.read_text().splitlines() if '"session_start"' in line]
    assert starts and {e["clock"] for e in starts} == {"lockstep"}
