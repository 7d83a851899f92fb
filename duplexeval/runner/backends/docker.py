"""Backend `docker`: the model server runs in a container built from images/<id>/.

The container gets no network at all (`network_mode="none"`); the harness reaches it
through a Unix socket in a host folder mounted at /run/duplexeval. The root file system
is read-only, and every container carries the `duplexeval.managed` label so
`duplexeval cleanup` can remove leftovers of a killed run.

No Docker engine exists on the development machines, so the tests check the exact
arguments this backend hands the SDK (`build_kwargs`, `run_kwargs`, pure functions);
the calls into a live engine run only where one exists (docs/runner.md).
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from typing import Any

from duplexeval.runner.backends.base import SOCKET_NAME, Backend, short_socket_dir
from duplexeval.runner.client import Endpoint
from duplexeval.runner.modelspec import REPO_ROOT, ModelSpec

MANAGED_LABEL = "duplexeval.managed"
SOCKET_DIR_IN_CONTAINER = "/run/duplexeval"
WEIGHTS_DIR_IN_CONTAINER = "/weights"


def stage_build_context(spec: ModelSpec, dest: str) -> str:
    """Copies images/<id>/ plus the protocol package (as duplexeval_protocol/) into `dest`.

    The shim imports `duplexeval.protocol`; staging a small context keeps the repository
    (and its .venv) out of the Docker build.
    """
    src = (REPO_ROOT / spec.build).resolve() if spec.build else None
    if src is None or not (src / "Dockerfile").exists():
        raise FileNotFoundError(f"model {spec.id}: launch.build {spec.build!r} has no Dockerfile ({src})")
    shutil.copytree(src, dest, dirs_exist_ok=True)
    shutil.copytree(REPO_ROOT / "duplexeval" / "protocol", os.path.join(dest, "duplexeval_protocol"),
                    dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def build_kwargs(spec: ModelSpec, context_dir: str) -> dict[str, Any]:
    """Arguments of `client.images.build(**kwargs)` for the model's image."""
    return {"path": context_dir, "tag": spec.image, "rm": True, "labels": {MANAGED_LABEL: "1", "duplexeval.model": spec.id}}


def run_kwargs(spec: ModelSpec, socket_dir: str, session: str, weights_dir: str | None = None) -> dict[str, Any]:
    """Arguments of `client.containers.run(**kwargs)`: the whole container configuration.

    A pure function so the configuration is tested without an engine.
    """
    from docker.types import DeviceRequest

    sock = f"{SOCKET_DIR_IN_CONTAINER}/{SOCKET_NAME}"
    volumes = {socket_dir: {"bind": SOCKET_DIR_IN_CONTAINER, "mode": "rw"}}
    if weights_dir:
        volumes[weights_dir] = {"bind": WEIGHTS_DIR_IN_CONTAINER, "mode": "ro"}
    command = [a.replace("{socket}", sock) for a in spec.command] or None  # None: the image's CMD
    kwargs: dict[str, Any] = {
        "image": spec.image,
        "command": command,
        "name": f"duplexeval-{spec.id}-{session}",
        "detach": True,
        "network_mode": "none",  # the socket is the only way in or out
        "read_only": True,
        "tmpfs": {"/tmp": "rw,size=2g"},
        "shm_size": "2g",
        "volumes": volumes,
        "environment": dict(spec.env, DUPLEXEVAL_SOCKET=sock, DUPLEXEVAL_WEIGHTS=WEIGHTS_DIR_IN_CONTAINER),
        "labels": {MANAGED_LABEL: "1", "duplexeval.model": spec.id, "duplexeval.session": session},
        "security_opt": ["no-new-privileges"],
        "cap_drop": ["ALL"],
        "device_requests": [DeviceRequest(count=spec.gpus, capabilities=[["gpu"]])] if spec.gpus else [],
    }
    return kwargs


class DockerBackend(Backend):
    def __init__(self, spec: ModelSpec, weights_dir: str | None = None, build: bool = True):
        self.spec = spec
        self.weights_dir = weights_dir or os.environ.get("DUPLEXEVAL_WEIGHTS")
        self.build = build
        self.container = None
        self.dir: str | None = None

    def _client(self):
        import docker

        return docker.from_env()

    def start(self) -> Endpoint:
        client = self._client()
        if self.build:
            with tempfile.TemporaryDirectory(prefix="dxe-build-") as ctx:
                client.images.build(**build_kwargs(self.spec, stage_build_context(self.spec, ctx)))
        self.dir = short_socket_dir()
        os.chmod(self.dir, 0o777)  # the server in the container may run as another user
        kwargs = run_kwargs(self.spec, self.dir, secrets.token_hex(4), self.weights_dir)
        self.container = client.containers.run(**kwargs)
        sock = os.path.join(self.dir, SOCKET_NAME)
        return self.await_socket(sock)

    def alive(self) -> bool:
        if self.container is None:
            return False
        try:
            self.container.reload()
        except Exception:
            return False
        return self.container.status in ("created", "running")

    def diagnostics(self) -> str:
        if self.container is None:
            return "no container"
        try:
            logs = self.container.logs(tail=6).decode("utf-8", "replace").strip()
            return f"container status {self.container.status}; logs: {' | '.join(logs.splitlines())}"
        except Exception as exc:
            return f"container logs unavailable: {exc}"

    def stop(self, grace_s: float = 2.0) -> None:
        if self.container is not None:
            try:
                self.container.remove(force=True)
            except Exception:
                pass  # `duplexeval cleanup` removes it by label
            self.container = None
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


def cleanup_leftovers(client: Any = None) -> list[str]:
    """Removes every container labelled duplexeval.managed; returns their names."""
    if client is None:
        import docker

        client = docker.from_env()
    removed = []
    for c in client.containers.list(all=True, filters={"label": f"{MANAGED_LABEL}=1"}):
        c.remove(force=True)
        removed.append(c.name)
    return removed
