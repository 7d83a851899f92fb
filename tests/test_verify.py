"""Every artifact of a finished run damaged in turn (truncate, flip a byte, delete):
`score` marks the affected units `error`, `verify` names the file, nothing damaged passes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from duplexeval.benchmarks import benchmark_for
from duplexeval.cli import cli
from duplexeval.commands.run import run_suite
from duplexeval.runfolder.bench_folders import bench_spec_for
from duplexeval.runfolder.verify import verify_run

BENCH = Path("silent") / "mpe-explicit"
ITEM = BENCH / "items" / "bakery-pie"


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DUPLEXEVAL_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
        run_dir, _ = run_suite("embedded", models=["silent"], benchmarks=["mpe-explicit"], run_id="r",
                               runs_dir=tmp_path_factory.mktemp("runs"), limit=2, clock=None)
    return run_dir


@pytest.fixture
def run(finished, tmp_path) -> Path:
    return Path(shutil.copytree(finished, tmp_path / "copy"))  # an auditor's copy


def truncate(p: Path) -> None:
    data = p.read_bytes()
    p.write_bytes(data[: min(5000, len(data) // 2)])


def flip(p: Path) -> None:
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0x01
    p.write_bytes(bytes(data))


def delete(p: Path) -> None:
    p.unlink()


HARMS = pytest.mark.parametrize("harm", [truncate, flip, delete], ids=["truncate", "flip", "delete"])


def damaged(run: Path) -> list[str]:
    return [f.line(run) for f in verify_run(run) if f.damaged]


def test_a_finished_run_and_its_copy_verify_intact(finished, run):
    assert damaged(finished) == [] and damaged(run) == []
    manifest = json.loads((run / "manifest.json").read_text())
    assert str(BENCH / "results.json") in manifest["results_sha256"]
    assert "bakery-pie" in json.loads((run / BENCH / "results.json").read_text())["inputs_sha256"]


@HARMS
@pytest.mark.parametrize("name", ["recording.wav", "events.jsonl", "status.json"])
def test_a_damaged_item_file_is_scored_as_error_units_and_named_by_verify(run, name, harm):
    harm(run / ITEM / name)
    lines = damaged(run)
    assert lines and any("bakery-pie" in line for line in lines), lines
    if name != "status.json" or harm is not delete:  # a deleted status.json is an unfinished item
        assert any(name in line for line in lines), lines
    spec = bench_spec_for(run / BENCH)
    benchmark_for(spec).score_dir(run / BENCH, spec, "off")  # what `duplexeval score` does per folder
    records = [json.loads(line) for line in (run / BENCH / "records.jsonl").read_text().splitlines()]
    mine = [r for r in records if r["item"] == "bakery-pie"]
    assert mine and all(r["outcome"] == "error" and not r["passed"] for r in mine)
    assert any(r["passed"] for r in records if r["item"] != "bakery-pie")  # the intact item still scores
    results = json.loads((run / BENCH / "results.json").read_text())
    assert results["complete"] is False
    assert results["metrics"]["shush"]["numerator"] < results["metrics"]["shush"]["denominator"]


@HARMS
@pytest.mark.parametrize("name", [BENCH / "records.jsonl", BENCH / "results.json", Path("summary.json"),
                                  Path("manifest.json"), BENCH / "benchmark.json"])
def test_a_damaged_results_file_is_named_by_verify(run, name, harm):
    harm(run / name)
    lines = damaged(run)
    assert any(str(name) in line for line in lines), lines


def test_results_computed_from_other_items_are_stale(run):
    status = run / ITEM / "status.json"
    st = json.loads(status.read_text())
    st["seed"] = st["seed"] + 1  # a re-run item, results not rescored
    status.write_text(json.dumps(st))
    assert any("status.json" in line and "results.json was computed from" in line for line in damaged(run))


def test_a_corrupt_cited_judge_cache_entry_is_damage(run, tmp_path):
    from duplexeval.judges.cache import JudgeCache, cache_key

    components = {"cache_schema": 1, "provider": "openai", "model": "m"}
    key = cache_key(components)
    cache = JudgeCache(tmp_path / "cache", "readwrite")
    cache.put(key, components, {"text": '{"verdict": "correct"}', "model": "m"})
    records_path = run / BENCH / "records.jsonl"
    rows = [json.loads(line) for line in records_path.read_text().splitlines()]
    rows[0]["cache_key"] = key
    from duplexeval.io import atomic_write_jsonl, sha256_json

    atomic_write_jsonl(records_path, rows)
    results = json.loads((run / BENCH / "results.json").read_text())
    results["records_sha256"] = sha256_json(rows)
    (run / BENCH / "results.json").write_text(json.dumps(results))
    from duplexeval.runfolder.verify import seal_manifest

    seal_manifest(run)
    assert [f for f in verify_run(run, cache_root=tmp_path / "cache") if f.damaged] == []
    flip(cache.path(key))
    assert any(key in str(f.path) for f in verify_run(run, cache_root=tmp_path / "cache") if f.damaged)


def test_verify_command_exits_1_naming_the_file_and_0_when_intact(run):
    runner = CliRunner()
    ok = runner.invoke(cli, ["verify", str(run)])
    assert ok.exit_code == 0 and "intact" in ok.output
    truncate(run / ITEM / "recording.wav")
    bad = runner.invoke(cli, ["verify", str(run)])
    assert bad.exit_code == 1 and "recording.wav" in bad.output and "Traceback" not in bad.output


def test_a_killed_writes_temp_file_is_a_warning_that_names_it(run):
    """atomic_write_* leaves `.<name>.<random>.tmp` when killed before its rename: never read, so
    not damage, but an auditor sees it (and a resume removes it: test_runner_resume.py)."""
    tmp = run / BENCH / ".records.jsonl.k1ll3d.tmp"
    tmp.write_text('{"item": "bakery')
    findings = verify_run(run)
    assert damaged(run) == []
    assert [f.line(run) for f in findings if f.path == tmp] == [
        f"warning {BENCH / tmp.name}: a temp file of a write that a kill interrupted (never read; a resume of "
        "the run removes those at a job folder's top level)"]
    result = CliRunner().invoke(cli, ["verify", str(run)])
    assert result.exit_code == 0 and tmp.name in result.output


def test_verify_reports_a_planted_key_without_printing_it(run, monkeypatch):
    key = "sk-test-PLANTED-verify-0123456789abcdef"
    (run / BENCH / "notes.log").write_text(f"calling judge with {key}\n")
    runner = CliRunner()
    out = runner.invoke(cli, ["verify", str(run)])
    assert out.exit_code == 1 and "notes.log" in out.output and "secret" in out.output
    assert key not in out.output and key[-12:] not in out.output


def test_a_deleted_manifest_and_an_edited_results_json_fail_verify(run):
    """Issue 25: without the sealed manifest, an edited number would read as intact."""
    results = run / BENCH / "results.json"
    data = json.loads(results.read_text())
    data["metrics"]["shush"]["value"] = 1.0
    results.write_text(json.dumps(data))
    (run / "manifest.json").unlink()
    lines = damaged(run)
    assert any("manifest.json" in line and "missing" in line for line in lines), lines
    out = CliRunner().invoke(cli, ["verify", str(run)])
    assert out.exit_code == 1 and "DAMAGED" in out.output


def test_an_unsealed_manifest_beside_results_is_damage(run):
    manifest = json.loads((run / "manifest.json").read_text())
    for key in ("manifest_sha256", "results_sha256"):
        manifest.pop(key)
    (run / "manifest.json").write_text(json.dumps(manifest))
    assert any("not sealed" in line for line in damaged(run))


def test_report_and_compare_refuse_a_damaged_run_and_allow_damaged_marks_it(run, tmp_path):
    from duplexeval.reports.golden import golden_dir

    (run / "manifest.json").unlink()
    runner = CliRunner()
    for argv in (["report", str(run), "--no-paper-arithmetic"],
                 ["compare", str(run), "--golden", str(golden_dir() / "embedded.yaml")]):
        refused = runner.invoke(cli, argv)
        assert refused.exit_code == 2 and "damaged" in refused.output and "manifest.json" in refused.output, argv
    assert not (run / "report.html").exists()
    allowed = runner.invoke(cli, ["report", str(run), "--no-paper-arithmetic", "--allow-damaged"])
    assert allowed.exit_code == 0, allowed.output
    assert "DAMAGED RUN" in (run / "report.html").read_text() and "DAMAGED RUN" in (run / "report.tex").read_text()


def test_score_names_every_damaged_item_and_exits_4(run):
    """Issue 25: a damaged recording used to drop Start silently with exit 0."""
    truncate(run / ITEM / "recording.wav")
    out = CliRunner().invoke(cli, ["score", str(run), "--cache-mode", "off"])
    assert out.exit_code == 4, out.output
    assert "DAMAGED" in out.output and "recording.wav" in out.output and "bakery-pie" in out.output
    assert "errors: silent/mpe-explicit: 1 item(s) errored: DAMAGED 1" in out.output
