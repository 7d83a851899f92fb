"""MTR through `duplexeval run --suite embedded`: reference agents, per-round results, golden, report.

A slice of the suite (the S+I+P+B combination, interruption, safety in both settings and
quality for silent and oracle; the combination S for the babbler) keeps this test short;
`make reproduce` runs all thirteen.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from duplexeval.benchmarks import plugins
from duplexeval.benchmarks.mtr.score import judges_for, score_bench_dir
from duplexeval.commands.run import run_suite
from duplexeval.reports.compare import compare_run, failed
from duplexeval.reports.golden import load_golden
from duplexeval.reports.render import write_report
from duplexeval.runfolder.run_dir import load_run
from duplexeval.runs.timing_margin import APART, SHIFTS, Moved, timing_margin
from duplexeval.specs import repo_root

BENCHES = ["mtr-combo-sipb", "mtr-interruption", "mtr-safety", "mtr-safety-interruption", "mtr-quality"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    run, outcomes = run_suite("embedded", models=["silent", "oracle"], benchmarks=BENCHES, run_id="mtr",
                              runs_dir=root, limit=None, clock=None)
    assert [o.status for o in outcomes] == ["scored"] * 10, [(o.job.key, o.reason) for o in outcomes]
    run_suite("embedded", models=["babbler"], benchmarks=["mtr-combo-s"], run_id="mtr", runs_dir=root, limit=None,
              clock=None)
    return run


def results(run_dir: Path, model: str, bench: str) -> dict:
    return json.loads((run_dir / model / bench / "results.json").read_text())


def test_results_have_every_round_and_the_1_10_mean(run_dir):
    r = results(run_dir, "oracle", "mtr-combo-sipb")
    assert set(r["rounds"]) == {str(k) for k in range(1, 11)} | {"1-10"}
    assert r["rounds"]["1-10"]["success"]["denominator"] == 10
    assert r["context"] == {"mode": "fork", "teacher_forcing": True, "flag": None}


def test_oracle_succeeds_on_every_feature_of_the_combination(run_dir):
    m = results(run_dir, "oracle", "mtr-combo-sipb")["metrics"]
    for f in ("success", "success_smooth", "success_interruption", "success_pause", "success_background"):
        assert m[f]["value"] == 1.0, (f, m[f])
    assert 0.1 <= m["latency_s"]["value"] < 0.5  # the oracle starts 0.16-0.24 s after the turn (golden bounds 0-0.5)
    assert results(run_dir, "oracle", "mtr-safety")["metrics"]["refusal"]["value"] == 1.0


def test_round_1_of_the_interruption_benchmark_is_an_interruption_the_oracle_handles(run_dir):
    r = results(run_dir, "oracle", "mtr-interruption")
    assert r["rounds"]["1"]["success"]["denominator"] == 1 and r["rounds"]["1"]["success"]["value"] == 1.0
    assert r["rounds"]["1-10"]["success"]["denominator"] == 5  # feat-i only: no mixed dialogue pools in
    first = json.loads((run_dir / "oracle/mtr-interruption/records.jsonl").read_text().splitlines()[0])
    assert (first["item"], first["feature"], first["outcome"]) == ("feat-i.r01", "interruption", "success")


def test_safety_inside_interruption_contexts_reports_refusal_and_no_response(run_dir):
    m = results(run_dir, "oracle", "mtr-safety-interruption")["metrics"]
    assert (m["refusal"]["value"], m["refusal"]["denominator"], m["no_response"]["value"]) == (1.0, 4, 0.0)
    assert (m["safe"]["value"], m["safe"]["denominator"]) == (1.0, 4)   # the authors' safe rate beside it
    m = results(run_dir, "silent", "mtr-safety-interruption")["metrics"]
    assert m["refusal"]["denominator"] == 0 and m["no_response"] == {"value": 1.0, "numerator": 4, "denominator": 4}
    assert (m["safe"]["value"], m["safe"]["denominator"], m["safe"]["silent_counted_safe"]) == (1.0, 4, 4)


def test_silent_scores_zero_and_its_latency_is_no_response_not_zero(run_dir):
    r = results(run_dir, "silent", "mtr-combo-sipb")
    for key, n in (("1", 1), ("1-10", 10)):
        m = r["rounds"][key]
        assert m["success"]["value"] == 0.0 and m["no_response"]["value"] == 1.0
        # Ours: no response is its own outcome, never a latency; the authors' mean (the spec's
        # reading, latency_s) averages each silent round as 0: both are reported.
        assert m["latency_successes_s"] == {"value": None, "numerator": 0, "denominator": 0, "unit": "seconds", "negative": 0}
        assert m["latency_all_rounds_s"] == {"value": 0.0, "numerator": 0.0, "denominator": n, "unit": "seconds"}
        assert m["latency_s"] == {**m["latency_all_rounds_s"], "reading": "all-rounds-clamped"}
    records = [json.loads(line) for line in (run_dir / "silent/mtr-combo-sipb/records.jsonl").read_text().splitlines()]
    assert {r["outcome"] for r in records} == {"no_response"} and all(r["latency_s"] is None for r in records)


def test_babbler_never_takes_turns(run_dir):
    m = results(run_dir, "babbler", "mtr-combo-s")["metrics"]
    assert m["success"]["value"] <= 0.1 and m["no_response"]["value"] == 0.0


def test_quality_turns_come_from_segmentation(run_dir):
    rounds = json.loads((run_dir / "oracle/mtr-quality/rounds.json").read_text())
    assert len(rounds) == 6
    r = results(run_dir, "oracle", "mtr-quality")
    assert r["metrics"]["score"]["denominator"] == 6 and r["metrics"]["score"]["value"] >= 2.5
    assert results(run_dir, "silent", "mtr-quality")["metrics"]["score"]["value"] == 0.0


def test_runs_match_golden_embedded(run_dir):
    rows = compare_run(load_run(run_dir), load_golden(repo_root() / "golden" / "embedded.yaml"))
    assert not failed(rows, allow_missing=True), [r for r in rows if r.status not in ("ok", "missing")]  # a partial run
    assert sum(1 for r in rows if r.status == "ok" and ".mtr." in r.cell_id) >= 15


def test_no_golden_cell_hinges_on_50_ms_of_asr_or_vad_timing(run_dir):
    """Issue 35: the run re-scored from its cached transcripts and episodes with every ASR word
    and VAD edge moved 50 ms (ASR later and VAD earlier, and the reverse): no embedded golden
    cell's comparison changes (`make reproduce` checks the whole suite the same way)."""
    out = timing_margin(run_dir, [repo_root() / "golden" / "embedded.yaml"], 0.05, shifts=APART)
    assert out["compared"] >= 20 and not out["errors"], out["errors"]
    assert not out["moved"], [m.line() for m in out["moved"]]


def test_the_timing_margin_sees_a_cell_that_hinges_on_timing(run_dir):
    """The same check can fail: 1.5 s moves the oracle's replies into the next user turn."""
    out = timing_margin(run_dir, [repo_root() / "golden" / "embedded.yaml"], 1.5, shifts=SHIFTS[:1],
                        only={"oracle/mtr-combo-sipb"})
    moved = {m.cell_id for m in out["moved"]}
    assert "embedded.mtr.oracle.combo-sipb.success.r1-10" in moved, moved
    assert all(m.status == "ok" and m.shifted_status != "ok" for m in out["moved"])


def test_shifts_rescored_side_by_side_find_what_one_process_finds(run_dir):
    """`reproduce --jobs 2` re-scores its shifts in two processes: the same cells move, under the same labels."""
    args = (run_dir, [repo_root() / "golden" / "embedded.yaml"], 1.5)
    kwargs = {"shifts": SHIFTS[:2], "only": {"oracle/mtr-combo-sipb"}}
    serial, parallel = timing_margin(*args, **kwargs), timing_margin(*args, jobs=2, **kwargs)
    assert serial["moved"] and sorted(map(Moved.line, parallel["moved"])) == sorted(map(Moved.line, serial["moved"]))
    assert parallel["compared"] == serial["compared"] and parallel["errors"] == serial["errors"] == []


def test_rescoring_gives_byte_identical_results(run_dir):
    bench_dir = run_dir / "oracle" / "mtr-combo-sipb"
    before = (bench_dir / "results.json").read_bytes(), (bench_dir / "records.jsonl").read_bytes()
    spec = json.loads((bench_dir / "benchmark.json").read_text())
    score_bench_dir(bench_dir, spec, judges_for(spec))
    assert ((bench_dir / "results.json").read_bytes(), (bench_dir / "records.jsonl").read_bytes()) == before


def test_report_renders_the_per_round_results(run_dir):
    written = write_report(run_dir, families=plugins(), formats=["html", "latex"], golden_paths=[str(repo_root() / "golden" / "embedded.yaml")])
    html = Path(written["html"]).read_text()
    assert "mtr-combo-sipb" in html and "1-10" in html
    assert "mtr-combo-sipb" in Path(written["latex"]).read_text()
    # Issue 25: each dimension's headline from its spec (quality's score, safety's refusal rate), never 'error'.
    other = html[html.index('id="mtr-other"'):html.index("</section>", html.index('id="mtr-other"'))]
    assert "score: " in other and "refusal: " in other and "error:" not in other
    assert "100.0 → 100.0" in other  # the oracle refuses every harmful request


def test_every_results_json_follows_the_results_envelope(run_dir):
    """The same envelope as Duplex-MPE's (specs/schema/results.schema.json), ok and error always counted."""
    from duplexeval.benchmarks.bench_folder import envelope_problems

    files = sorted(run_dir.glob("*/*/results.json"))
    assert files
    for path in files:
        data = json.loads(path.read_text())
        assert envelope_problems(data) == [], path
        assert {"ok", "error", "total"} <= set(data["items"])


def test_every_records_jsonl_follows_the_records_schema(run_dir):
    from records_check import records_problems

    assert records_problems(run_dir) == {}
