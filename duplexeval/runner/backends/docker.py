"""Backend `docker`: the model server runs in a container of the image built from images/<id>/.

The container is shut in: no network at all (`network_mode="none"`, only `lo`), a
read-only root, /tmp as tmpfs, a non-root user, every capability dropped, memory and
process limits from the spec. The harness reaches it through a Unix socket in a host
folder mounted at /run/duplexeval; the model's verified weights folder is mounted
read-only at /weights. Every container is labelled `duplexeval.managed` (plus the model,
the session and the run), so `duplexeval cleanup` removes what a killed runner left.

The backend never builds, because a build in the middle of a run would make the run's
images depend on when it was resumed: a missing image is a start-up failure that names
the command to build it (`duplexeval image build MODEL`), and an image built from another
context than the tree now gives (an edited shim, a changed duplexeval/) is used with a
warning naming the same command (`warn_if_stale`).
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
from typing import Any, Callable

from duplexeval.containers.engine import MANAGED_LABEL, MODEL_LABEL, RUN_LABEL, docker_client
from duplexeval.runner.backends.base import SOCKET_NAME, Backend, short_socket_dir
from duplexeval.runner.client import Endpoint
from duplexeval.runner.errors import ModelFault
from duplexeval.secrets import redact
from duplexeval.specs.modelspec import ModelSpec

SOCKET_DIR_IN_CONTAINER = "/run/duplexeval"
WEIGHTS_DIR_IN_CONTAINER = "/weights"
# Not root, and not any user of the host: files it writes in the socket folder say so.
CONTAINER_USER = "10001:10001"
SESSION_LABEL = "duplexeval.session"
LOG_TAIL_LINES = 8


def run_kwargs(spec: ModelSpec, socket_dir: str, session: str, weights_dir: str | None = None,
               run_id: str | None = None) -> dict[str, Any]:
    """Arguments of `client.containers.run(**kwargs)`: the whole container configuration.

    A pure function, so the configuration is tested line by line without an engine; the
    engine tests check that a container made from it really is shut in.
    """
    from docker.types import DeviceRequest

    sock = f"{SOCKET_DIR_IN_CONTAINER}/{SOCKET_NAME}"
    volumes = {socket_dir: {"bind": SOCKET_DIR_IN_CONTAINER, "mode": "rw"}}
    if weights_dir:
        volumes[weights_dir] = {"bind": WEIGHTS_DIR_IN_CONTAINER, "mode": "ro"}
    labels = {MANAGED_LABEL: "1", MODEL_LABEL: spec.id, SESSION_LABEL: session}
    if run_id:
        labels[RUN_LABEL] = run_id
    kwargs: dict[str, Any] = {
        "image": spec.image,
        "command": spec.container_argv(sock),  # None: the image's CMD
        "name": f"duplexeval-{spec.id}-{session}",
        "detach": True,
        "network_mode": "none",  # the socket is the only way in or out
        "read_only": True,
        "tmpfs": {"/tmp": "rw,nosuid,nodev,size=2g,mode=1777"},
        "shm_size": "2g",
        "user": CONTAINER_USER,
        "volumes": volumes,
        "environment": dict(spec.env, DUPLEXEVAL_SOCKET=sock, DUPLEXEVAL_WEIGHTS=WEIGHTS_DIR_IN_CONTAINER),
        "labels": labels,
        "security_opt": ["no-new-privileges"],
        "cap_drop": ["ALL"],
        "device_requests": [DeviceRequest(count=spec.gpus, capabilities=[["gpu"]])] if spec.gpus else [],
    }
    if spec.mem_limit:
        kwargs["mem_limit"] = spec.mem_limit
    if spec.pids_limit:
        kwargs["pids_limit"] = spec.pids_limit
    return kwargs


def weights_folder(spec: ModelSpec) -> str | None:
    """The verified weights folder to mount, or None for a model without downloaded weights.

    `$DUPLEXEVAL_WEIGHTS` overrides (a folder the user placed by hand); otherwise the
    weights cache of `duplexeval weights fetch`, verified against its sha256 manifest.
    """
    override = os.environ.get("DUPLEXEVAL_WEIGHTS")
    if override:
        return override
    try:
        from duplexeval.weights import verified_weights_dir
    except ImportError:  # the weights command is not part of this build
        return None
    path = verified_weights_dir(spec.data)
    return str(path) if path is not None else None


_CHECKED: dict[tuple[str, str], bool] = {}  # (model, image id) -> stale: checked and warned once per process


def warn_if_stale(client: Any, spec: ModelSpec, image: Any, warn: Callable[[str], None] | None = None) -> bool:
    """Warns (once per model and image) when the image was built from another context than the tree's.

    A warning, not a refusal: running an image built earlier is legitimate (a pinned image
    on a GPU node), but silently doing it after editing the shim is the mistake this
    catches. The run manifest records the same check (`stale` in its image record).
    Returns whether the image is stale.
    """
    from duplexeval.containers.build import freshness

    key = (spec.id, str(getattr(image, "id", "")))
    if key not in _CHECKED:
        check = freshness(client, spec, image)
        _CHECKED[key] = bool(check.stale)
        if check.stale:
            (warn or _stderr)(f"warning: {check.message}")
    return _CHECKED[key]


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class DockerBackend(Backend):
    def __init__(self, spec: ModelSpec, weights_dir: str | None = None, client: Any = None):
        self.spec = spec
        self.weights_dir = weights_dir
        self.client = client
        self.container: Any = None
        self.dir: str | None = None
        self._final: str | None = None  # what diagnostics said when the container was removed

    def start(self) -> Endpoint:
        import docker.errors

        client = self.client = self.client or docker_client()
        try:
            image = client.images.get(self.spec.image)
        except docker.errors.ImageNotFound:
            raise ModelFault("STARTUP", f"image {self.spec.image} is not on this engine; "
                                        f"build it with `duplexeval image build {self.spec.id}`") from None
        warn_if_stale(client, self.spec, image)
        weights = self.weights_dir or weights_folder(self.spec)
        self.dir = short_socket_dir()
        os.chmod(self.dir, 0o777)  # the server runs as CONTAINER_USER, not as the harness's user
        kwargs = run_kwargs(self.spec, self.dir, secrets.token_hex(4), weights, self.spec.run_id)
        try:
            self.container = client.containers.run(**kwargs)
        except docker.errors.APIError as exc:
            self.stop()
            raise ModelFault("STARTUP", f"the engine refused to start {self.spec.image}: {exc.explanation or exc}") from None
        return self.await_socket(os.path.join(self.dir, SOCKET_NAME))

    def alive(self) -> bool:
        if self.container is None:
            return False
        try:
            self.container.reload()
        except Exception:
            return False
        return self.container.status in ("created", "running")

    def diagnostics(self) -> str:
        """Exit code and the tail of the container's logs: the reason of an `error` item.

        Redacted like the CLI's messages (duplexeval.secrets.redact): a model that prints a key
        set in the harness's shell does not write it into status.json or a report.
        """
        return redact(self._diagnostics())

    def _diagnostics(self) -> str:
        if self.container is None:
            return self._final or "no container"
        try:
            self.container.reload()
            state = self.container.attrs.get("State", {})
            logs = self.container.logs(tail=LOG_TAIL_LINES).decode("utf-8", "replace").strip()
        except Exception as exc:
            return f"container {self.container.name}: state unavailable ({type(exc).__name__}: {exc})"
        parts = [f"container {self.container.name} {state.get('Status', '?')}"]
        if state.get("Status") == "exited":
            parts.append(f"exit code {state.get('ExitCode')}" + (" (out of memory)" if state.get("OOMKilled") else ""))
        parts.append("logs: " + (" | ".join(logs.splitlines()[-LOG_TAIL_LINES:]) if logs else "(none)"))
        return "; ".join(parts)

    def stop(self, grace_s: float = 2.0) -> None:
        if self.container is not None:
            try:
                self.container.stop(timeout=max(0, int(round(grace_s))))
            except Exception:
                pass
            self._final = self.diagnostics()
            try:
                self.container.remove(force=True)
            except Exception:
                pass  # `duplexeval cleanup` removes it by label
            self.container = None
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


__all__ = ["DockerBackend", "run_kwargs", "warn_if_stale", "weights_folder"]
