"""Full-Duplex-Bench v1.0 through `duplexeval run --suite embedded`: the reference agents on
every task of the embedded mini set, then golden, re-score, report, sensitivity, verify,
export and a batched run on another executor. Real agents, Silero VAD, faster-whisper
tiny.en and the offline judge, as `make reproduce` runs them."""

from __future__ import annotations

import json
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

TASKS = ["fdb-pause-synthetic", "fdb-pause-candor", "fdb-backchannel", "fdb-smooth-turn-taking",
         "fdb-user-interruption"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    run, outcomes = run_suite("embedded", models=["oracle", "silent"], benchmarks=TASKS, run_id="fdb",
                              runs_dir=root, limit=None, clock=None)
    assert [o.status for o in outcomes] == ["scored"] * 10, [(o.job.key, o.reason) for o in outcomes]
    _, outcomes = run_suite("embedded", models=["babbler"], benchmarks=["fdb-backchannel"], run_id="fdb",
                            runs_dir=root, limit=None, clock=None)
    assert [o.status for o in outcomes] == ["scored"]
    return run


def results(run_dir: Path, model: str, bench: str) -> dict:
    return json.loads((run_dir / model / bench / "results.json").read_text())


def records(run_dir: Path, model: str, bench: str) -> list[dict]:
    return [json.loads(line) for line in (run_dir / model / bench / "records.jsonl").read_text().splitlines()]


def test_silent_never_takes_the_turn_and_has_no_latency_or_rating(run_dir):
    for bench in TASKS:
        assert results(run_dir, "silent", bench)["metrics"]["tor"]["value"] == 0.0, bench
    m = results(run_dir, "silent", "fdb-user-interruption")["metrics"]
    assert m["latency_s"]["denominator"] == 0 and m["latency_s"]["value"] is None
    assert m["relevance"]["denominator"] == 0
    assert results(run_dir, "silent", "fdb-backchannel")["metrics"]["jsd"]["value"] == 1.0   # the authors' no-backchannel JSD


def test_oracle_yields_through_pauses_backchannels_and_answers_after_turns_and_interruptions(run_dir):
    assert results(run_dir, "oracle", "fdb-pause-synthetic")["metrics"]["tor"]["value"] == 0.0
    bc = results(run_dir, "oracle", "fdb-backchannel")["metrics"]
    assert bc["tor"]["value"] == 0.0 and bc["frequency"]["value"] > 0.05 and bc["jsd"]["value"] < 0.8
    for r in records(run_dir, "oracle", "fdb-backchannel"):
        assert len(r["backchannels"]) == 2 and not any(d["takes_turn"] for d in r["segments"])
    smooth = results(run_dir, "oracle", "fdb-smooth-turn-taking")["metrics"]
    assert smooth["tor"]["value"] == 1.0 and 0.0 <= smooth["latency_s"]["value"] <= 0.5
    for r in records(run_dir, "oracle", "fdb-user-interruption"):
        # only what follows the interruption's end is transcribed: the long reply it cut is not there
        assert r["took_turn"] and all(w[1] >= r["anchor_s"] for w in r["words"])
        assert "walk you through" not in r["transcript"].lower()


def test_the_babblers_first_long_segment_takes_the_turn_and_ends_the_backchannel_count(run_dir):
    m = results(run_dir, "babbler", "fdb-backchannel")["metrics"]
    assert (m["tor"]["value"], m["frequency"]["value"], m["jsd"]["value"]) == (1.0, 0.0, 1.0)
    for r in records(run_dir, "babbler", "fdb-backchannel"):
        first = r["segments"][0]
        assert first["long"] and first["segment"][1] - first["segment"][0] > 3.0 and len(r["segments"]) == 1


def test_every_result_names_its_asr_engine_and_judge(run_dir):
    for bench in TASKS:
        r = results(run_dir, "oracle", bench)
        assert r["asr_engine"] == "faster-whisper:tiny.en" and r["asr"]["model"] == "tiny.en"
    assert results(run_dir, "oracle", "fdb-user-interruption")["judges"] == {"relevance": "fdb-interruption-relevance-offline"}


def test_runs_match_golden_embedded(run_dir):
    rows = compare_run(load_run(run_dir), load_golden(repo_root() / "golden" / "embedded.yaml"))
    assert not failed(rows, allow_missing=True), [r for r in rows if r.status not in ("ok", "missing")]  # a partial run
    assert sum(1 for r in rows if r.status == "ok" and ".fdb." in r.cell_id) == 21 + 3   # the babbler's backchannel cells


def test_rescoring_gives_byte_identical_results(run_dir):
    for bench in ("fdb-backchannel", "fdb-user-interruption"):
        bench_dir = run_dir / "oracle" / bench
        before = (bench_dir / "results.json").read_bytes(), (bench_dir / "records.jsonl").read_bytes()
        score_bench_dir(bench_dir, json.loads((bench_dir / "benchmark.json").read_text()))
        assert ((bench_dir / "results.json").read_bytes(), (bench_dir / "records.jsonl").read_bytes()) == before


def test_a_damaged_recording_is_an_error_record_outside_every_mean(run_dir, tmp_path):
    import shutil

    bench_dir = tmp_path / "oracle" / "fdb-smooth-turn-taking"
    shutil.copytree(run_dir / "oracle" / "fdb-smooth-turn-taking", bench_dir)
    wav = bench_dir / "items" / "2" / "recording.wav"
    wav.write_bytes(wav.read_bytes()[:-4000])
    out = score_bench_dir(bench_dir, json.loads((bench_dir / "benchmark.json").read_text()))
    assert out["complete"] is False and out["items"]["error"] == 1 and out["not_ok_items"] == ["2"]
    assert out["metrics"]["tor"]["denominator"] == 2 and out["metrics"]["latency_s"]["denominator"] == 2
    bad = [r for r in records(tmp_path, "oracle", "fdb-smooth-turn-taking") if r["item"] == "2"][0]
    assert bad["outcome"] == "error" and "recording.wav" in bad["reason"]


def test_report_shows_the_published_table_with_our_rows_and_the_asr_beside_them(run_dir):
    written = write_report(run_dir, families=plugins(), formats=["html", "latex"], golden_paths=[str(repo_root() / "golden" / "embedded.yaml")])
    html = Path(written["html"]).read_text()
    tables = {t: html[html.index(f'id="{t}"'):html.index("</table>", html.index(f'id="{t}"'))]
              for t in ("paper-fdb-v1", "paper-fdb-v1-turns")}
    for table in tables.values():
        for row in ("PersonaPlex", "Moshi", "Freeze-Omni", "dGSLM", "GPT-Realtime"):
            assert f"{row} <span class=\"tag\">published</span>" in table, row
        assert 'data-model="oracle"' in table and 'data-model="silent"' in table
        assert "ASR faster-whisper:tiny.en" in table
    assert "0.985" in tables["paper-fdb-v1"]            # Moshi's synthetic pause TOR
    assert "4.210" in tables["paper-fdb-v1-turns"]      # PersonaPlex's GPT-4o score
    assert "faster-whisper:tiny.en" in html[html.index('id="fdb"'):]
    assert "Full-Duplex-Bench v1.0" in Path(written["latex"]).read_text()


def test_the_item_view_draws_the_interruption_and_the_latency_window(run_dir):
    from duplexeval.benchmarks.fdb.plugin import FullDuplexBench

    view = FullDuplexBench().report_item(run_dir / "oracle" / "fdb-user-interruption", "1")
    ann = json.loads((run_dir / "oracle/fdb-user-interruption/samples.json").read_text())["samples"][0]["annotation"][0]
    assert view["turns"][0]["label"] == "interruption" and view["turns"][0]["end"] == ann["timestamp"][1]
    assert view["window"][0] == ann["timestamp"][1]
    assert FullDuplexBench().report_item(run_dir / "oracle" / "fdb-user-interruption", "nosuch") is None


def test_sensitivity_switches_the_seven_readings(run_dir):
    from duplexeval.runs.sensitivity import sensitivity

    rows = sensitivity(run_dir)["rows"]
    jsd = {r["model"]: r for r in rows if r["reading"] == "options.backchannel.jsd" and r["metric"] == "jsd"}
    per_sample = [r["jsd"] for r in records(run_dir, "oracle", "fdb-backchannel")]
    assert jsd["oracle"]["alt_value"] == pytest.approx(sum(x * x for x in per_sample) / len(per_sample))
    assert jsd["silent"]["delta"] == 0.0 and jsd["babbler"]["delta"] == 0.0   # no backchannel: 1 under either form
    assert {r["reading"] for r in rows} == {"options.backchannel.jsd", "options.backchannel.tor",
                                            "options.latency_negative", "options.backchannel.vad_rate",
                                            "options.backchannel.vad_end_clamp", "options.output_length",
                                            "judges.relevance"}
    # our recordings are 16 kHz: Silero told nothing (their assume-16k) hears them as we do
    assert all(r["delta"] == 0.0 for r in rows if r["reading"] == "options.backchannel.vad_rate")
    # The offline judge's run holds no paid verdicts: another judge is reported, never bought.
    judged = [r for r in rows if r["reading"] == "judges.relevance" and r["alternative"] != "fdb-interruption-relevance-offline"]
    assert judged and all(r.get("error", "").startswith("needs judge verdicts") for r in judged
                          if r["model"] != "silent")


def test_verify_finds_the_run_intact_and_export_lists_every_metric(run_dir):
    from duplexeval.results import rows
    from duplexeval.runfolder.verify import verify_run

    assert verify_run(run_dir, secrets=False) == []
    exported = {(r["model"], r["benchmark"], r["metric"]) for r in rows(run_dir)}
    assert ("oracle", "fdb-user-interruption", "relevance") in exported
    assert {r["note"] for r in rows(run_dir) if r["value"] is not None} == {"ASR faster-whisper:tiny.en"}
    assert len(exported) == 2 * (1 + 1 + 3 + 2 + 3) + 3


def test_a_resume_redoes_only_the_unfinished_item(run_dir):
    items = run_dir / "oracle/fdb-smooth-turn-taking/items"
    before = {i: (items / i / "recording.wav").stat().st_mtime_ns for i in ("1", "2", "3")}
    results_before = results(run_dir, "oracle", "fdb-smooth-turn-taking")["metrics"]
    (items / "2" / "status.json").unlink()
    _, outcomes = run_suite("embedded", models=["oracle"], benchmarks=["fdb-smooth-turn-taking"], run_id="fdb",
                            runs_dir=run_dir.parent, limit=None, clock=None)
    assert [o.status for o in outcomes] == ["scored"]
    after = {i: (items / i / "recording.wav").stat().st_mtime_ns for i in ("1", "2", "3")}
    assert after["1"] == before["1"] and after["3"] == before["3"] and after["2"] != before["2"]
    assert results(run_dir, "oracle", "fdb-smooth-turn-taking")["metrics"] == results_before


def test_a_batched_run_on_the_local_executor_records_the_same_bytes(run_dir, tmp_path):
    other, outcomes = run_suite("embedded", models=["oracle"], benchmarks=["fdb-smooth-turn-taking"], run_id="batched",
                                runs_dir=tmp_path, limit=None, clock=None, executor="local", jobs=2, max_sessions=2)
    assert [o.status for o in outcomes] == ["scored"]
    for item in ("1", "2", "3"):
        a = run_dir / "oracle/fdb-smooth-turn-taking/items" / item / "recording.wav"
        b = other / "oracle/fdb-smooth-turn-taking/items" / item / "recording.wav"
        assert a.read_bytes() == b.read_bytes(), item
    assert results(other, "oracle", "fdb-smooth-turn-taking")["metrics"] == \
        results(run_dir, "oracle", "fdb-smooth-turn-taking")["metrics"]


def test_export_recordings_writes_the_authors_layout_their_scripts_read(run_dir, tmp_path):
    """`export-recordings --layout fdb-authors` goes through the plug-in's exporter: per sample
    output.wav beside the published annotation, output.json words the authors' rules read."""
    from click.testing import CliRunner

    from duplexeval.cli import cli

    out = tmp_path / "export"
    res = CliRunner().invoke(cli, ["export-recordings", str(run_dir), "--layout", "fdb-authors", str(out)])
    assert res.exit_code == 0, res.output
    pause = out / "oracle" / "fdb-pause-synthetic"
    samples = sorted(p for p in pause.iterdir() if p.is_dir())
    assert samples and all((s / "output.wav").is_file() and (s / "pause.json").is_file() for s in samples)
    chunks = json.loads((samples[0] / "output.json").read_text())["chunks"]
    assert isinstance(chunks, list)
    import soundfile as sf

    # time-synchronous with the published input: cut where our scorer cuts, not at the last frame's end
    played = json.loads((run_dir / "oracle" / "fdb-pause-synthetic" / "samples.json").read_text())["samples"]
    seconds = {str(s["id"]): s["input_duration_s"] for s in played}
    for folder in samples:
        info = sf.info(str(folder / "output.wav"))
        assert abs(info.frames / info.samplerate - seconds[folder.name]) <= 1 / info.samplerate
    assert (out / "oracle" / "fdb-pause-synthetic.duplexeval-export.json").is_file()
    assert [p.name for p in pause.iterdir() if not p.is_dir()] == [], "their scripts take every entry for a sample"
    interrupted = out / "oracle" / "fdb-user-interruption"
    said = [json.loads((s / "output.json").read_text())["chunks"] for s in interrupted.iterdir() if s.is_dir()]
    assert said and all(said), "the oracle answers every interruption"


def test_data_import_fdb_checks_the_copy_and_the_plan_finds_it(tmp_path, monkeypatch):
    """`data import fdb PATH` reaches the plug-in's importer; a copy that is not the published
    layout is refused by name, exit 2, and nothing is written."""
    from click.testing import CliRunner

    from duplexeval.cli import cli

    monkeypatch.setenv("DUPLEXEVAL_DATA_CACHE", str(tmp_path / "data"))
    bad = tmp_path / "copy" / "v1_0" / "made_up_task" / "1"
    bad.mkdir(parents=True)
    res = CliRunner().invoke(cli, ["data", "import", "fdb", str(tmp_path / "copy")])
    assert res.exit_code == 2 and "made_up_task" in res.output, res.output
    assert not (tmp_path / "data" / "fdb" / "imported").exists()


def test_every_records_jsonl_follows_the_records_schema_and_the_family_words(run_dir):
    from records_check import records_problems

    assert records_problems(run_dir) == {}
