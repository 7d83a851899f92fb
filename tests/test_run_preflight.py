"""Issue 39, case 9: a run that needs an API key says so in one line before anything starts,
and Ctrl-C says how to resume (click alone printed only "Aborted!")."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from duplexeval.cli import cli
from duplexeval.commands.preflight import missing_keys, preflight_message
from duplexeval.commands.run import INTERRUPTED, resume_command
from duplexeval.runfolder.plan import plan_suite
from duplexeval.runs.execute import with_runner
from duplexeval.specs import Registry


def _jobs(endpoint: str | None = None):
    registry = Registry.load()
    jobs = plan_suite(registry, "paper-fdb", models=["gpt-realtime"], benchmarks=None)
    return with_runner(jobs, "r", None, endpoint, None), registry


def test_every_unset_key_of_the_plan_is_named_with_who_needs_it():
    jobs, registry = _jobs()
    missing = missing_keys(jobs, registry, environ={})
    assert set(missing) == {"OPENAI_API_KEY"}
    who = missing["OPENAI_API_KEY"]
    assert "model gpt-realtime" in who and "judge fdb-interruption-relevance-authors (relevance)" in who
    message = preflight_message(missing)
    assert message.splitlines()[0].startswith("OPENAI_API_KEY is not set; needed by ")
    assert "export OPENAI_API_KEY=..." in message and "--no-preflight" in message
    assert missing_keys(jobs, registry, environ={"OPENAI_API_KEY": "k"}) == {}
    assert missing_keys(jobs, registry, environ={"OPENAI_API_KEY": "  "}) == missing  # blank is unset


def test_a_model_served_elsewhere_needs_no_key_of_ours_but_its_judges_still_do():
    jobs, registry = _jobs(endpoint="ws://127.0.0.1:9/v1")
    who = missing_keys(jobs, registry, environ={})["OPENAI_API_KEY"]
    assert "model gpt-realtime" not in who and any(w.startswith("judge ") for w in who)


def test_the_embedded_suite_needs_no_key():
    registry = Registry.load()
    jobs = with_runner(plan_suite(registry, "embedded"), "r", None, None, None)
    assert missing_keys(jobs, registry, environ={}) == {}


def test_preflight_refuses_before_anything_is_written(tmp_path: Path):
    result = CliRunner().invoke(cli, ["run", "--suite", "paper-fdb", "--models", "gpt-realtime", "--runs-dir",
                                      str(tmp_path / "runs")], env={"OPENAI_API_KEY": ""})
    assert result.exit_code == 2 and "OPENAI_API_KEY is not set" in result.output, result.output
    assert not (tmp_path / "runs").exists()


def test_ctrl_c_prints_the_command_that_resumes_the_run(tmp_path: Path, monkeypatch):
    from duplexeval.commands import run as run_module

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(run_module, "run_suite", interrupted)
    argv = ["run", "--models", "silent", "--benchmarks", "mpe-explicit", "--new", "--runs-dir", str(tmp_path)]
    monkeypatch.setattr("sys.argv", ["duplexeval", *argv])
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == INTERRUPTED, result.output
    assert "interrupted: the finished items of run embedded-" in result.output and "Aborted!" not in result.output
    resume = result.output.split("resume with:")[1].strip()
    assert resume.startswith(f"duplexeval run --models silent --benchmarks mpe-explicit --runs-dir {tmp_path} "
                             "--run-id embedded-") and "--new" not in resume, resume


def test_the_resume_command_names_the_run():
    assert resume_command("r1", ["run", "--new", "--models", "silent"]) == "duplexeval run --models silent --run-id r1"
    assert resume_command("r1", ["run", "--run-id", "r1"]) == "duplexeval run --run-id r1"
    assert resume_command("r1", ["run", "--models", "a b"]) == "duplexeval run --models 'a b' --run-id r1"
