"""The docker backend's container configuration, checked line by line without an engine.

`run_kwargs` is a pure function, so what a container is asked to be is tested here on
any machine; tests/test_containers.py checks on a real engine that a container made
from it really is shut in.
"""

from __future__ import annotations

import os
import time

from docker.types import DeviceRequest

from duplexeval.containers.base_image import apt_mirror
from duplexeval.runner import load_model_spec
from duplexeval.runner.backends.base import OWNER_FILE
from duplexeval.runner.backends.docker import CONTAINER_USER, run_kwargs
from duplexeval.runner.backends.socket_dirs import stale_socket_dirs
from duplexeval.specs.modelspec import model_spec_from


def test_moshi_container_has_no_network_a_read_only_root_and_one_gpu():
    spec = load_model_spec("moshi")
    kw = run_kwargs(spec, "/tmp/dxe-abc", "s1", weights_dir="/data/weights", run_id="r1")
    assert kw["image"] == spec.image
    assert kw["network_mode"] == "none"
    assert kw["read_only"] is True and "/tmp" in kw["tmpfs"]
    assert kw["user"] == CONTAINER_USER and not CONTAINER_USER.startswith("0")
    assert kw["volumes"]["/tmp/dxe-abc"] == {"bind": "/run/duplexeval", "mode": "rw"}
    assert kw["volumes"]["/data/weights"] == {"bind": "/weights", "mode": "ro"}
    assert kw["environment"]["DUPLEXEVAL_SOCKET"] == "/run/duplexeval/model.sock"
    assert kw["labels"]["duplexeval.managed"] == "1" and kw["labels"]["duplexeval.model"] == "moshi"
    assert kw["labels"]["duplexeval.run"] == "r1"
    assert kw["device_requests"] == [DeviceRequest(count=1, capabilities=[["gpu"]])]
    assert kw["cap_drop"] == ["ALL"] and "no-new-privileges" in kw["security_opt"]
    assert "ports" not in kw  # nothing is published: the socket is the only way in


def test_a_reference_agent_in_docker_runs_its_local_command_with_the_images_python_and_limits():
    spec = load_model_spec("oracle").with_backend("docker")
    kw = run_kwargs(spec, "/tmp/dxe-x", "s2")
    assert kw["command"] == ["python", "-m", "duplexeval.agents.oracle", "--socket", "/run/duplexeval/model.sock"]
    assert kw["mem_limit"] == "4g" and kw["pids_limit"] == 256
    assert kw["device_requests"] == [] and "duplexeval.run" not in kw["labels"]


def test_backend_choice_keeps_the_spec_hash_so_records_match_across_backends():
    spec = load_model_spec("oracle")
    assert spec.with_backend("docker").sha256 == spec.sha256
    assert spec.with_backend(endpoint="unix:/tmp/x.sock").backend == "endpoint"


def test_a_spec_without_an_image_cannot_take_the_docker_backend():
    spec = model_spec_from({"id": "x", "launch": {"backend": "local", "command": ["true"]}})
    try:
        spec.with_backend("docker")
    except ValueError as exc:
        assert "launch.image" in str(exc)
    else:
        raise AssertionError("expected a ValueError")


def test_the_debian_mirror_is_read_from_deb822_and_one_line_sources(tmp_path):
    (tmp_path / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\n\n"
        "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm\n")
    assert apt_mirror((tmp_path,)) == "http://mirror.example/debian"
    one = tmp_path / "sources.list"
    one.write_text("deb [arch=amd64] http://other.example/debian bookworm main\n")
    assert apt_mirror((one,)) == "http://other.example/debian"


def test_cleanup_takes_socket_folders_of_dead_runners_only(tmp_path):
    dead, alive, unowned = (tmp_path / f"dxe-{n}" for n in ("dead", "alive", "old"))
    for d in (dead, alive, unowned):
        d.mkdir()
    (dead / OWNER_FILE).write_text("999999999")  # no such process
    (alive / OWNER_FILE).write_text(str(os.getpid()))
    os.utime(unowned, (time.time() - 3600, time.time() - 3600))
    assert stale_socket_dirs(str(tmp_path)) == [str(dead), str(unowned)]
