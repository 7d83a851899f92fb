"""`duplexeval new-model`: a model author's folder, outside the repository, that works as written.

From an empty folder: scaffold, validate, conformance and a one-scene run, editing no file
(issue: "a model author's first hour without friction"). Real processes throughout: the
scaffolded shim is started by the harness as any local model is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from duplexeval.specs import repo_root

CLI = [sys.executable, "-m", "duplexeval.cli"]


def cli(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    if args[0] == "new-model":  # before the folder exists, as an author runs it: no DUPLEXEVAL_SPECS yet
        env = {k: v for k, v in env.items() if k != "DUPLEXEVAL_SPECS"}
    return subprocess.run(CLI + args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture()
def author(tmp_path) -> tuple[Path, dict[str, str]]:
    folder = tmp_path / "my-model"
    folder.mkdir()
    assert not folder.resolve().is_relative_to(repo_root().resolve())
    env = {**os.environ, "DUPLEXEVAL_SPECS": str(folder / "specs"),
           "DUPLEXEVAL_CACHE": os.environ.get("DUPLEXEVAL_CACHE", str(tmp_path / "cache"))}
    return folder, env


def test_scaffold_validates_passes_conformance_and_runs_one_scene_unedited(author):
    folder, env = author
    made = cli(["new-model", "mine"], folder, env)
    assert made.returncode == 0, made.stderr
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert files == ["images/mine/Dockerfile", "images/mine/README.md", "images/mine/requirements.txt",
                     "images/mine/shim.py", "specs/models/mine.yaml"]
    dockerfile = (folder / "images/mine/Dockerfile").read_text()
    assert "COPY images/mine/ /opt/duplexeval/images/mine/" in dockerfile
    assert '"images/mine/shim.py"' in dockerfile and "agents.silent" not in dockerfile
    pins = (folder / "images/mine/requirements.txt").read_text().split()
    assert {p.split("==")[0] for p in pins if "==" in p} >= {"numpy", "websockets", "jsonschema"}
    assert "include" not in (folder / "specs/models/mine.yaml").read_text().split("\n", 3)[-1]

    validated = cli(["validate"], folder, env)
    assert validated.returncode == 0, validated.stdout + validated.stderr
    conformance = cli(["conformance", "mine"], folder, env)
    assert conformance.returncode == 0 and "mine: all checks passed" in conformance.stdout, conformance.stdout
    run = cli(["run", "--suite", "embedded", "--models", "mine", "--benchmarks", "mpe-explicit", "--limit", "1",
               "--runs-dir", str(folder / "runs"), "--run-id", "first"], folder, env)
    assert run.returncode == 0, run.stdout + run.stderr
    results = json.loads((folder / "runs/first/mine/mpe-explicit/results.json").read_text())
    assert results["metrics"]["start"]["denominator"] == 1 and results["metrics"]["shush"]["value"] == 1.0


def test_echo_template_speaks_and_passes_conformance(author):
    folder, env = author
    assert cli(["new-model", "echoer", "--from", "echo"], folder, env).returncode == 0
    conformance = cli(["conformance", "echoer"], folder, env)
    assert conformance.returncode == 0, conformance.stdout + conformance.stderr


@pytest.mark.parametrize("args, message", [
    (["new-model", "Bad/Name"], "lower-case letters"),
    (["new-model", "silent"], "already taken"),
    (["new-model", "mine", "--from", "nonsense"], "--from"),
])
def test_refusals_name_the_problem(author, args, message):
    folder, env = author
    out = cli(args, folder, env)
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr


def test_never_overwrites(author):
    folder, env = author
    assert cli(["new-model", "mine"], folder, env).returncode == 0
    shim = folder / "images/mine/shim.py"
    shim.write_text("# the author's own work\n")
    again = cli(["new-model", "mine"], folder, env)
    assert again.returncode == 2 and "already exists" in again.stderr and "never overwrites" in again.stderr
    assert shim.read_text() == "# the author's own work\n"


def test_validate_names_every_real_problem_of_a_spec_at_once(author):
    """A spec missing only launch.backend and license gets exactly those two errors in one round,
    not the requirements of every backend it might have meant (endpoint, image, realtime)."""
    folder, env = author
    spec = folder / "specs" / "models" / "half.yaml"
    spec.parent.mkdir(parents=True)
    spec.write_text("kind: model\nid: half\nname: half\nstatus: runnable\nduplex: full\n"
                    "launch:\n  command: ['{python}', 'x.py', '--socket', '{socket}']\n"
                    "audio: {in_rate: 16000, out_rate: 16000, frame_ms: 80}\n"
                    "clocks: [lockstep]\ncapabilities: []\nweights: {source: none}\n")
    out = cli(["validate"], folder, env)
    errors = [line for line in out.stderr.splitlines() + out.stdout.splitlines() if "half.yaml" in line]
    assert out.returncode == 1  # validate's exit for invalid specs
    assert sorted(e.split(": ")[1] for e in errors) == ["launch.backend", "license"], errors
