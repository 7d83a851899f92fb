"""The container path against a real Docker engine (marked `docker`; .ci/run starts one).

Real engine, real images (the debootstrap base and images/agents, built hermetically),
real containers shut in as the docker backend configures them. Nothing here is a
stand-in: where these tests cannot find an engine they skip, and with CI=true they fail.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from runner_helpers import faulty_spec, tone

from duplexeval.cli import cli
from duplexeval.containers.build import build_image
from duplexeval.containers.engine import MANAGED_LABEL, RUN_LABEL
from duplexeval.runner import FileStimulus, load_model_spec, run_items
from duplexeval.runner.backends.docker import run_kwargs
from duplexeval.specs.modelspec import REPO_ROOT, model_spec_from

pytestmark = pytest.mark.docker
RATE = 16000


def docker_faulty(mode: str, image: str = "duplexeval/agents:0.1", **kw) -> dict:
    spec = faulty_spec(mode, **kw)
    spec["launch"].update(backend="docker", image=image, build="images/agents", gpus=0)
    return spec


@pytest.mark.parametrize("agent", ["silent", "babbler", "oracle", "cascade"])
def test_conformance_passes_through_the_docker_backend(agents_image, agent):
    result = CliRunner().invoke(cli, ["conformance", agent, "--backend", "docker"])
    assert result.exit_code == 0, result.output
    assert "docker backend" in result.output and f"{agent}: all checks passed" in result.output


PROBE = """
import json, os, socket
try:
    open('/opt/probe', 'w'); root_writable = True
except OSError:
    root_writable = False
with open('/tmp/probe', 'w') as f:
    f.write('tmpfs is writable')
print(json.dumps({"ifaces": sorted(n for _, n in socket.if_nameindex()), "uid": os.getuid(),
                  "root_writable": root_writable, "caps": open('/proc/self/status').read().split('CapEff:')[1].split()[0]}))
"""


def test_a_model_container_has_only_lo_a_read_only_root_and_a_non_root_user(agents_image, docker_engine, tmp_path):
    kwargs = run_kwargs(load_model_spec("silent"), str(tmp_path), "probe")
    kwargs.update(command=["python", "-c", PROBE], detach=True)
    container = docker_engine.containers.run(**kwargs)
    try:
        assert container.wait(timeout=60)["StatusCode"] == 0
        seen = json.loads(container.logs().decode().strip().splitlines()[-1])
    finally:
        container.remove(force=True)
    assert seen["ifaces"] == ["lo"]
    assert seen["root_writable"] is False
    assert seen["uid"] == 10001
    assert int(seen["caps"], 16) == 0  # every capability dropped


def test_an_image_builds_with_the_network_disabled(agents_image, docker_engine, tmp_path):
    folder = tmp_path / "netprobe"
    folder.mkdir()
    (folder / "Dockerfile").write_text(
        "ARG BASE\nFROM ${BASE}\n"
        "RUN python3 -c \"import socket; print('BUILD-IFACES', sorted(n for _, n in socket.if_nameindex()))\"\n")
    spec = model_spec_from({"id": "netprobe", "launch": {"backend": "docker", "image": "duplexeval/netprobe:test",
                                                          "build": str(folder), "gpus": 0}})
    lines: list[str] = []
    try:
        build_image(docker_engine, spec, force=True, progress=lambda _: None, log=lines.append)
    finally:
        docker_engine.images.remove("duplexeval/netprobe:test", force=True)
    assert "BUILD-IFACES ['lo']" in lines, lines


def _run(run_id: str, runs_dir: Path, backend: str) -> Path:
    from duplexeval.commands.run import run_suite

    run_dir, outcomes = run_suite("embedded", models=["oracle"], benchmarks=["mpe-explicit", "mtr-smooth-turn-taking"],
                                  run_id=run_id, runs_dir=runs_dir, limit=2, clock=None, backend=backend)
    assert all(o.results and o.results["items"].get("error", 0) == 0 for o in outcomes), [o.reason for o in outcomes]
    return run_dir


@pytest.mark.slow
def test_oracle_through_docker_gives_the_local_backends_bytes(agents_image, tmp_path):
    local, docker = _run("local", tmp_path, "local"), _run("docker", tmp_path, "docker")
    manifest = json.loads((docker / "manifest.json").read_text())
    assert {j["backend"] for j in manifest["jobs"]} == {"docker"}
    assert manifest["images"]["oracle"]["id"].startswith("sha256:") and manifest["images"]["oracle"]["wheels"]
    compared = 0
    for bench in ("mpe-explicit", "mtr-smooth-turn-taking"):  # MTR runs forked (snapshot/restore)
        for name in ("records.jsonl", "results.json"):
            a, b = local / "oracle" / bench / name, docker / "oracle" / bench / name
            assert a.read_bytes() == b.read_bytes(), f"{bench}/{name} differs between backends"
            compared += 1
    assert compared == 4


def _status(out: Path, item: str) -> dict:
    return json.loads((out / "items" / item / "status.json").read_text())


def test_a_container_that_crashes_mid_session_is_an_error_with_its_exit_code_and_logs(agents_image, tmp_path):
    items = [(i, lambda: FileStimulus(tone(1.0), RATE)) for i in ("a", "b")]
    results = run_items(docker_faulty("crash"), items, tmp_path)
    assert [r.item_id for r in results] == ["a", "b"] and [r.status for r in results] == ["error", "error"]
    reason = _status(tmp_path, "a")["reason"]
    assert "exit code 3" in reason and "simulated crash" in reason, reason


def test_a_container_that_hangs_is_a_timeout_error_and_is_removed(agents_image, docker_engine, tmp_path):
    results = run_items(docker_faulty("hang"), [("a", lambda: FileStimulus(tone(1.0), RATE))], tmp_path)
    assert results[0].status == "error"
    assert "TIMEOUT" in _status(tmp_path, "a")["reason"]
    left = docker_engine.containers.list(all=True, filters={"label": ["duplexeval.model=faulty-hang"]})
    assert left == []  # the hung container does not outlive its item


def test_a_missing_image_gives_startup_errors_naming_the_build_command(docker_engine, tmp_path):
    spec = docker_faulty("none", image="duplexeval/no-such-image:0")
    items = [(i, lambda: FileStimulus(tone(0.3), RATE)) for i in ("a", "b", "c")]
    results = run_items(spec, items, tmp_path)
    assert [r.status for r in results] == ["error"] * 3
    st = _status(tmp_path, "a")
    assert st["error_code"] == "STARTUP" and "duplexeval image build faulty-none" in st["reason"]


KILLED_RUNNER = """
import sys, time
from dataclasses import replace
from duplexeval.runner import load_model_spec
from duplexeval.runner.backends import make_backend
backend = make_backend(replace(load_model_spec("silent").with_backend("docker"), run_id=sys.argv[1]))
endpoint = backend.start()
print(endpoint.unix_path, flush=True)
time.sleep(600)
"""


def test_cleanup_removes_the_container_and_socket_folder_of_a_sigkilled_runner(agents_image, docker_engine):
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    run_id = f"cleanup-test-{os.getpid()}"  # only this test's containers: other test files run beside it
    child = subprocess.Popen([sys.executable, "-c", KILLED_RUNNER, run_id], stdout=subprocess.PIPE, text=True, env=env)
    try:
        sock = child.stdout.readline().strip()
        assert sock.endswith("model.sock"), sock
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    folder = os.path.dirname(sock)
    mine = {"label": [f"{MANAGED_LABEL}=1", f"{RUN_LABEL}={run_id}"]}
    left = docker_engine.containers.list(all=True, filters=mine)
    assert left and os.path.isdir(folder)  # what a killed runner leaves behind
    result = CliRunner().invoke(cli, ["cleanup", "--run-id", run_id])
    assert result.exit_code == 0, result.output
    assert f"removed socket folder {folder}" in result.output and "removed container" in result.output
    assert docker_engine.containers.list(all=True, filters=mine) == []
    assert not os.path.exists(folder)


def _compose(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["docker-compose", "-p", "dxetest", *args], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=180)


def test_compose_config_passes_and_a_compose_started_agent_is_driven_by_the_harness(agents_image, tmp_path):
    env = dict(os.environ, DUPLEXEVAL_SOCKETS=str(tmp_path))
    config = _compose("config", "-q", env=env)
    assert config.returncode == 0, config.stderr
    (tmp_path / "oracle").mkdir(mode=0o777)
    os.chmod(tmp_path / "oracle", 0o777)
    up = _compose("--profile", "agents", "up", "-d", "oracle", env=env)
    try:
        assert up.returncode == 0, up.stderr
        sock = tmp_path / "oracle" / "model.sock"
        deadline = time.monotonic() + 60
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        result = CliRunner().invoke(cli, ["conformance", "oracle", "--endpoint", f"unix:{sock}"])
        assert result.exit_code == 0, result.output
        assert "endpoint backend" in result.output and "oracle: all checks passed" in result.output
    finally:
        _compose("--profile", "agents", "down", "-t", "1", env=env)


@pytest.fixture(scope="session")
def moshi_image(agents_image, docker_engine):
    spec = load_model_spec("moshi-tiny")
    build_image(docker_engine, spec, progress=lambda _: None)  # on the base agents_image made
    return spec.image


def test_moshi_tiny_passes_every_conformance_check_in_the_image_built_from_images_moshi(moshi_image):
    result = CliRunner().invoke(cli, ["conformance", "moshi-tiny", "--backend", "docker"])
    assert result.exit_code == 0, result.output
    for check in ("handshake", "lockstep", "reset", "errors", "fork", "teacher_forcing", "realtime"):
        assert f"PASS {check}:" in result.output, result.output
