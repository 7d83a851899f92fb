"""Full-Duplex-Bench v1.5 through `duplexeval run --suite embedded`: oracle and silent on the four
overlap tasks of the embedded mini set, each sample played with and without its overlap, then
scored (pairs matched by item id), compared with golden, re-scored without a clean twin, and
reported. Real agents, Silero VAD, faster-whisper tiny.en and the offline behaviour judge, as
`make reproduce` runs them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from duplexeval.benchmarks import plugins
from duplexeval.benchmarks.fdb.score import score_bench_dir
from duplexeval.commands.run import run_suite
from duplexeval.reports.compare import compare_run, failed
from duplexeval.reports.golden import load_golden
from duplexeval.reports.render import write_report
from duplexeval.runfolder.run_dir import load_run
from duplexeval.specs import repo_root

TASKS = ["fdb-v15-user-interruption", "fdb-v15-user-backchannel", "fdb-v15-talking-to-other",
         "fdb-v15-background-speech"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    run, outcomes = run_suite("embedded", models=["oracle", "silent"], benchmarks=TASKS, run_id="fdb15",
                              runs_dir=root, limit=None, clock=None)
    assert [o.status for o in outcomes] == ["scored"] * 8, [(o.job.key, o.reason) for o in outcomes]
    return run


def results(run_dir: Path, model: str, bench: str) -> dict:
    return json.loads((run_dir / model / bench / "results.json").read_text())


def records(run_dir: Path, model: str, bench: str) -> list[dict]:
    return [json.loads(line) for line in (run_dir / model / bench / "records.jsonl").read_text().splitlines()]


def test_each_sample_is_played_twice_and_scored_as_one_matched_pair(run_dir):
    for bench in TASKS:
        samples = [s["id"] for s in json.loads((run_dir / "oracle" / bench / "samples.json").read_text())["samples"]]
        items = sorted(p.name for p in (run_dir / "oracle" / bench / "items").iterdir())
        assert items == sorted(samples + [f"{s}.clean" for s in samples])
        recs = {r["item"]: r for r in records(run_dir, "oracle", bench)}
        for s in samples:
            assert recs[s]["role"] == "pair" and recs[s]["clean_item"] == f"{s}.clean"
            assert recs[f"{s}.clean"] == {"item": f"{s}.clean", "outcome": "ok", "role": "clean", "pair": s}
            # the clean twin heard the same turn without the overlap: its input has no words in the overlap
            start, end = recs[s]["overlap_s"]
            if bench != "fdb-v15-user-backchannel":   # tiny.en may drop a lone "uh huh"
                assert any(start - 0.3 <= w[1] <= end for w in recs[s]["words"]["input"])
            assert not any(start - 0.3 <= w[1] <= end for w in recs[s]["words"]["clean_input"])
        m = results(run_dir, "oracle", bench)
        assert m["samples_scored"] == len(samples) and m["complete"] is True
        assert m["asr_engine"] == "faster-whisper:tiny.en" and m["judges"] == {"behaviour": "fdb-behavior-offline"}
        assert set(m["not_computed"]) == {"pitch", "utmos"}
        assert not any("pitch" in k or "utmos" in k for k in m["metrics"])


def test_the_oracle_answers_an_interruption_and_talks_on_through_the_other_overlaps(run_dir):
    ui = results(run_dir, "oracle", "fdb-v15-user-interruption")["metrics"]
    assert (ui["respond_ratio"]["numerator"], ui["respond_ratio"]["denominator"]) == (2, 2)
    # it stops as the interruption starts: every stop interval is short
    for r in records(run_dir, "oracle", "fdb-v15-user-interruption"):
        if r["role"] == "pair":
            assert r["stop_latencies_s"] and max(r["stop_latencies_s"]) < 0.2
            assert r["adaptation"]["sides"]["post"]["words"] > 0
    for bench in TASKS[1:]:
        m = results(run_dir, "oracle", bench)["metrics"]
        assert m["resume_ratio"]["value"] == 1.0, bench
        # talking on over the overlap: at least one stop interval per sample
        assert m["stop_latency_s"]["denominator"] >= 2, bench


def test_silent_is_unknown_with_no_latency(run_dir):
    for bench in TASKS:
        m = results(run_dir, "silent", bench)["metrics"]
        assert m["unknown_ratio"]["value"] == 1.0
        assert m["stop_latency_s"]["denominator"] == 0 and m["stop_latency_s"]["value"] is None
        assert m["response_latency_s"]["denominator"] == 0
        assert results(run_dir, "silent", bench)["paired_tests"]["tests"] == []


def test_golden_cells_hold(run_dir):
    golden = load_golden(repo_root() / "golden" / "embedded.yaml")
    rows = [r for r in compare_run(load_run(run_dir), golden) if ".v15-" in r.cell_id]
    assert len(rows) == 12 and all(r.status == "ok" for r in rows), [(r.cell_id, r.status) for r in rows]
    assert not failed(rows)


def test_a_missing_clean_twin_is_an_error_record_never_a_score(run_dir, tmp_path):
    bench_dir = tmp_path / "oracle" / "fdb-v15-user-backchannel"
    shutil.copytree(run_dir / "oracle" / "fdb-v15-user-backchannel", bench_dir)
    shutil.rmtree(bench_dir / "items" / "1.clean")
    out = score_bench_dir(bench_dir, json.loads((bench_dir / "benchmark.json").read_text()))
    assert out["complete"] is False and "1" in out["not_ok_items"] and out["samples_scored"] == 1
    assert out["metrics"]["resume_ratio"]["denominator"] == 1
    bad = [r for r in records(tmp_path, "oracle", "fdb-v15-user-backchannel") if r["item"] == "1"][0]
    assert bad["outcome"] == "error" and "clean twin 1.clean" in bad["reason"] and "behaviour" not in bad


def test_report_has_a_v15_table_with_the_asr_beside_each_row(run_dir):
    written = write_report(run_dir, families=plugins(), formats=["html", "latex"],
                           golden_paths=[str(repo_root() / "golden" / "embedded.yaml")])
    html = Path(written["html"]).read_text()
    part = html[html.index("v1.5 (overlap handling)"):]
    for bench in TASKS:
        table = part[part.index(f'data-benchmark="{bench}"'):part.index("</table>", part.index(f'data-benchmark="{bench}"'))]
        assert "respond_ratio" in table and "stop_latency_s" in table and "faster-whisper:tiny.en" in table
    assert "v1.5 (overlap handling)" in Path(written["latex"]).read_text()


def test_the_item_view_draws_the_overlap(run_dir):
    from duplexeval.benchmarks.fdb.plugin import FullDuplexBench

    view = FullDuplexBench().report_item(run_dir / "oracle" / "fdb-v15-talking-to-other", "1")
    meta = json.loads((run_dir / "oracle/fdb-v15-talking-to-other/samples.json").read_text())["samples"][0]["annotation"]
    assert view["turns"][0]["label"] == "overlap" and view["turns"][0]["start"] == meta["timestamps"][0]
    assert FullDuplexBench().report_item(run_dir / "oracle" / "fdb-v15-talking-to-other", "1.clean") == {
        "turns": [], "window": None}


def test_the_export_pairs_each_sample_with_its_clean_twin(run_dir, tmp_path):
    from duplexeval.benchmarks.fdb.export import export

    bench_dir = run_dir / "oracle" / "fdb-v15-talking-to-other"
    written, skipped = export(bench_dir, tmp_path / "out", json.loads((bench_dir / "benchmark.json").read_text()))
    assert written == ["1", "2"] and skipped == {}
    for name in ("input.wav", "clean_input.wav", "output.wav", "clean_output.wav", "clean_output.json", "metadata.json"):
        assert (tmp_path / "out" / "1" / name).is_file(), name


def test_rescoring_gives_byte_identical_results_and_verify_finds_the_run_intact(run_dir):
    from duplexeval.runfolder.verify import verify_run

    bench_dir = run_dir / "oracle" / "fdb-v15-user-interruption"
    before = (bench_dir / "results.json").read_bytes(), (bench_dir / "records.jsonl").read_bytes()
    score_bench_dir(bench_dir, json.loads((bench_dir / "benchmark.json").read_text()))
    assert ((bench_dir / "results.json").read_bytes(), (bench_dir / "records.jsonl").read_bytes()) == before
    assert verify_run(run_dir, secrets=False) == []


def test_sensitivity_switches_the_latency_pool_reading(run_dir):
    from duplexeval.runs.sensitivity import sensitivity

    rows = [r for r in sensitivity(run_dir)["rows"] if r["reading"] == "options.v15.latency_pool"]
    stop = {r["benchmark"]: r for r in rows if r["model"] == "oracle" and r["metric"] == "stop_latency_s"}
    first = [r["stop_latencies_s"][0] for r in records(run_dir, "oracle", "fdb-v15-user-interruption")
             if r["role"] == "pair" and r["stop_latencies_s"]]
    assert stop["fdb-v15-user-interruption"]["alt_value"] == pytest.approx(sum(first) / len(first))
