"""Runs you can repeat (issue 28 item 3): the same command resumes the same run, `--new`
starts a fresh one, the report is written at the end, and `--limit` says what it left empty."""

from __future__ import annotations

from datetime import datetime, timezone

from click.testing import CliRunner

from duplexeval.cli import cli
from duplexeval.runs.run_name import default_run_id, fresh_run_id


def test_the_default_run_id_is_the_suite_and_its_selection_in_any_order():
    assert default_run_id("embedded", None, None) == "embedded"
    a = default_run_id("embedded", ["silent", "oracle"], ["mpe-explicit"])
    assert a == default_run_id("embedded", ["oracle", "silent"], ["mpe-explicit"]) and a.startswith("embedded-")
    assert a != default_run_id("embedded", ["silent"], ["mpe-explicit"])
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    assert fresh_run_id("embedded", None, None, when) == "embedded-20260102-030405"


def test_repeating_a_run_resumes_it_writes_the_report_and_names_what_limit_left_empty(tmp_path, monkeypatch):
    monkeypatch.setenv("DUPLEXEVAL_RUN_REPORT", "1")
    args = ["run", "--suite", "embedded", "--models", "silent", "--benchmarks", "mpe-explicit,mtr-pause-handling",
            "--limit", "1", "--runs-dir", str(tmp_path)]
    first = CliRunner().invoke(cli, args)
    assert first.exit_code == 0, first.output
    (run,) = list(tmp_path.iterdir())
    assert run.name == default_run_id("embedded", ["silent"], ["mpe-explicit", "mtr-pause-handling"])
    assert f"report: {run / 'report.html'}" in first.output and (run / "report.tex").is_file()
    assert "with --limit 1, 1 benchmark(s) not filled (reasons above): mtr-pause-handling" in first.output
    assert "raise --limit or leave it out" in first.output
    recording = next(run.glob("silent/mpe-explicit/items/*/recording.wav"))
    before = recording.stat().st_mtime_ns
    again = CliRunner().invoke(cli, args)
    assert again.exit_code == 0, again.output
    assert list(tmp_path.iterdir()) == [run]                       # the same run, resumed
    assert recording.stat().st_mtime_ns == before                  # its finished item was not redone
    both = CliRunner().invoke(cli, [*args, "--new", "--run-id", "x"])
    assert both.exit_code == 2 and "--new and --run-id" in both.output
