"""No user error ends in a traceback: every command, given bad input, prints a short
message naming what is wrong and exits 1 or 2 (docs/reliability.md, "Bad input")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import numpy as np
import pytest
import soundfile as sf
from click.testing import CliRunner

from duplexeval.cli import cli


@pytest.fixture
def bad(tmp_path, monkeypatch) -> Path:
    """A folder of bad inputs: garbage and stereo audio, broken YAML/JSON, a run with a corrupt line."""
    monkeypatch.setenv("DUPLEXEVAL_TRACEBACK_DIR", str(tmp_path / "tracebacks"))
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")  # no engine, whatever the machine
    (tmp_path / "garbage.wav").write_bytes(b"RIFF\x00\x00not really a wav")
    sf.write(tmp_path / "stereo.wav", np.zeros((1600, 2), dtype=np.float32), 16000)
    (tmp_path / "garbage.yaml").write_text("id: [unclosed\n  - : :\n")
    (tmp_path / "garbage.json").write_text("{not json")
    (tmp_path / "garbage.csv").write_text("\x00\x01,,\n")
    (tmp_path / "empty").mkdir()
    item = tmp_path / "run" / "silent" / "mpe-explicit" / "items" / "bakery-pie"
    item.mkdir(parents=True)
    sf.write(item / "recording.wav", np.zeros((16000, 2), dtype=np.float32), 16000)
    (item / "events.jsonl").write_text('{"frame": 0, "type": "input_start"}\n{corrupt\n')
    (item / "status.json").write_text(json.dumps({"status": "ok", "rate": 16000}))  # an old-style status
    (tmp_path / "run" / "silent" / "mpe-explicit" / "results.json").write_text("{not json")
    (tmp_path / "run" / "manifest.json").write_text("[1, 2")
    cache = tmp_path / "cache" / "ab"
    cache.mkdir(parents=True)
    (cache / ("ab" + "0" * 62 + ".json")).write_text("{corrupt")
    return tmp_path


# (command path, arguments with {t} for the bad-input folder); every leaf command is here.
CASES = [
    ("cache explain", "--root {t}/cache not-a-key"),
    ("cache export", "--root {t}/cache {t}/garbage.json --judge nosuch-judge"),
    ("cache ls", "--root {t}/cache"),
    ("cache prune", "--root {t}/cache --older-than-days nan"),
    ("cache verify", "--root {t}/cache"),
    ("cleanup", "--run-id nosuch"),
    ("compare", "{t}/run --golden {t}/garbage.csv"),
    ("conformance", "nosuch-model"),
    ("data fetch", "nosuch-set"),
    ("data import", "mtr-duplexbench {t}/empty"),
    ("data path", "duplex-mpe"),
    ("data verify", "mtr-duplexbench --revision main"),
    ("export", "{t}/run --out {t}/empty"),
    ("fdb render-embedded", "{t}/out --source {t}/garbage.yaml"),
    ("export-recordings", "{t}/run --layout mtr-authors {t}/out"),
    ("golden-validate", ""),
    ("image base", "--mirror nowhere"),
    ("import-recordings", "mtr-combo-s {t}/empty --model x --runs-dir {t}/runs"),
    ("image build", "nosuch-model"),
    ("image ls", ""),
    ("ls", "bogus"),
    ("mtr fetch", "nosuch-dataset"),
    ("mtr render", "{t}/garbage.yaml {t}/out"),
    ("mtr score", "{t}/run/silent/mpe-explicit"),
    ("paper-check", "--golden {t}/garbage.csv"),
    ("report", "{t}/run"),
    ("reproduce", "--suite nosuch-suite --runs-dir {t}/runs"),
    ("run", "--suite embedded --models nosuch-model --runs-dir {t}/runs"),
    ("scenes generate", "--attributes {t}/garbage.yaml --out {t}/out"),
    ("scenes render", "{t}/garbage.yaml --out {t}/out"),
    ("scenes validate", "{t}/garbage.yaml"),
    ("score", "{t}/run"),
    ("segment", "{t}/garbage.json"),
    ("sensitivity", "{t}/run"),
    ("sensitivity", "{t}/run --switch nonsense"),
    ("timing-margin", "{t}/run"),
    ("timing-margin", "{t}/empty --allow-damaged"),
    ("timing-margin", "{t}/empty --shift-ms 0"),
    ("new-model", "Bad/Name --dir {t}/out"),
    ("session", "silent {t}/stereo.wav --out {t}/out"),
    ("session", "silent {t}/garbage.wav --out {t}/out"),
    ("validate", "{t}/garbage.yaml"),
    ("verify", "{t}/empty"),
    ("weights fetch", "nosuch-model"),
    ("weights path", "nosuch-model"),
    ("weights verify", "nosuch-model"),
]


def leaf_commands(group: click.Group, prefix: str = "") -> set[str]:
    out = set()
    for name, cmd in group.commands.items():
        path = f"{prefix}{name}"
        out |= leaf_commands(cmd, path + " ") if isinstance(cmd, click.Group) else {path}
    return out


def test_every_command_has_a_bad_input_case():
    assert leaf_commands(cli) - {c for c, _ in CASES} == set()


@pytest.mark.parametrize("command,args", CASES, ids=[f"{c} {a.split()[-1] if a else ''}".strip() for c, a in CASES])
def test_bad_input_prints_a_short_error_and_no_traceback(bad, command, args):
    argv = command.split() + [a.format(t=bad) for a in args.split()]
    result = CliRunner().invoke(cli, argv)
    out = result.output
    assert "Traceback" not in out, out
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "internal error" not in out, out  # bad input is never reported as a bug
    assert not list((bad / "tracebacks").glob("*")) if (bad / "tracebacks").exists() else True
    if result.exit_code == 2 and command not in ("validate", "scenes validate"):
        errors = [line for line in out.splitlines() if line.strip() and not line.startswith(("Usage:", "Try "))]
        assert len(errors) <= 3, out


@pytest.mark.parametrize("name", ["stereo.wav", "garbage.wav"])
def test_the_installed_command_names_the_bad_audio_file(bad, name):
    env = {**os.environ, "DUPLEXEVAL_TRACEBACK_DIR": str(bad / "tracebacks")}
    proc = subprocess.run([sys.executable, "-m", "duplexeval.cli", "session", "silent", str(bad / name),
                           "--out", str(bad / "out")], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert name in proc.stderr and len(proc.stderr.strip().splitlines()) <= 2, proc.stderr


def test_a_corrupt_events_line_names_file_and_line(bad):
    result = CliRunner().invoke(cli, ["score", str(bad / "run")])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "events.jsonl:2" in result.output


@pytest.fixture
def buggy_command():
    @click.command("explode")
    def explode() -> None:
        {}["missing"]  # noqa: B018 - a bug, on purpose

    cli.add_command(explode)
    yield
    cli.commands.pop("explode")


def test_an_unexpected_exception_says_it_is_a_bug_and_where_the_traceback_is(bad, buggy_command):
    result = CliRunner().invoke(cli, ["explode"])
    assert result.exit_code == 3 and "Traceback" not in result.output
    assert "bug in duplexeval" in result.output
    written = list((bad / "tracebacks").glob("*.txt"))
    assert len(written) == 1 and str(written[0]) in result.output
    assert "KeyError" in written[0].read_text() and "Traceback" in written[0].read_text()


def test_debug_shows_the_traceback(bad, buggy_command):
    result = CliRunner().invoke(cli, ["--debug", "explode"])
    assert isinstance(result.exception, KeyError)
    result = CliRunner().invoke(cli, ["--debug", "session", "silent", str(bad / "stereo.wav"), "--out", str(bad / "o")])
    assert isinstance(result.exception, ValueError)


def test_a_key_in_an_error_message_is_redacted(bad, monkeypatch):
    from duplexeval.cli_errors import user_message

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-PLANTED-cli-0123456789abcdef")
    msg = user_message(ValueError("endpoint refused sk-test-PLANTED-cli-0123456789abcdef"))
    assert "PLANTED" not in msg and "<OPENAI_API_KEY>" in msg


def test_a_family_marks_its_own_errors_expected_and_the_boundary_names_no_family():
    """MTR's DatasetUnavailable is the user's to fix because it subclasses cli_errors.ExpectedError,
    not because the boundary lists it (the core names no benchmark package)."""
    from duplexeval import cli_errors
    from duplexeval.benchmarks import plugins
    from duplexeval.benchmarks.mtr.datasets import DatasetUnavailable

    assert cli_errors.is_expected(DatasetUnavailable("data set 'x' is not on this machine"))
    families = {type(p).__module__.rsplit(".", 1)[0] for p in plugins().values()}
    assert families and not any(name.startswith(f + ".") for name in cli_errors.EXPECTED for f in families)

    class Local(RuntimeError):
        pass

    assert not cli_errors.is_expected(Local("a bug"))
    assert cli_errors.is_expected(type("Marked", (RuntimeError, cli_errors.ExpectedError), {})("bad input"))
