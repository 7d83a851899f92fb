"""The docker backend's container configuration, checked without an engine.

No Docker engine exists on the development machines, so these tests call the pure
functions that build the SDK arguments (`build_kwargs`, `run_kwargs`) and check the exact
container that would be requested. The cleanup test uses a stand-in for the engine's
container list (the only fake in the runner tests, because there is no engine).
"""

from __future__ import annotations

from docker.types import DeviceRequest

from duplexeval.runner import load_model_spec
from duplexeval.runner.backends.docker import (
    MANAGED_LABEL, build_kwargs, cleanup_leftovers, run_kwargs, stage_build_context,
)


def test_moshi_container_has_no_network_a_read_only_root_and_one_gpu():
    spec = load_model_spec("moshi")
    kw = run_kwargs(spec, "/tmp/dxe-abc", "s1", weights_dir="/data/weights")
    assert kw["image"] == spec.image == "duplexeval/moshi:0.1"
    assert kw["network_mode"] == "none"
    assert kw["read_only"] is True and "/tmp" in kw["tmpfs"]
    assert kw["volumes"]["/tmp/dxe-abc"] == {"bind": "/run/duplexeval", "mode": "rw"}
    assert kw["volumes"]["/data/weights"] == {"bind": "/weights", "mode": "ro"}
    assert kw["environment"]["DUPLEXEVAL_SOCKET"] == "/run/duplexeval/model.sock"
    assert kw["labels"][MANAGED_LABEL] == "1" and kw["labels"]["duplexeval.model"] == "moshi"
    assert kw["device_requests"] == [DeviceRequest(count=1, capabilities=[["gpu"]])]
    assert kw["detach"] is True and "no-new-privileges" in kw["security_opt"]
    assert "ports" not in kw  # nothing is published: the socket is the only way in


def test_build_context_is_the_image_folder_plus_the_protocol_package(tmp_path):
    spec = load_model_spec("moshi")
    ctx = stage_build_context(spec, str(tmp_path / "ctx"))
    assert (tmp_path / "ctx" / "Dockerfile").exists() and (tmp_path / "ctx" / "shim.py").exists()
    assert (tmp_path / "ctx" / "duplexeval_protocol" / "server.py").exists()
    kw = build_kwargs(spec, ctx)
    assert kw["path"] == ctx and kw["tag"] == "duplexeval/moshi:0.1"
    assert kw["labels"][MANAGED_LABEL] == "1"


def test_cleanup_removes_every_labelled_container():
    removed = []

    class Container:
        def __init__(self, name):
            self.name = name

        def remove(self, force):
            removed.append((self.name, force))

    class Containers:
        def list(self, all, filters):
            assert all is True and filters == {"label": f"{MANAGED_LABEL}=1"}
            return [Container("duplexeval-moshi-1"), Container("duplexeval-moshi-2")]

    class Engine:
        containers = Containers()

    assert cleanup_leftovers(Engine()) == ["duplexeval-moshi-1", "duplexeval-moshi-2"]
    assert removed == [("duplexeval-moshi-1", True), ("duplexeval-moshi-2", True)]
