"""The part of a model spec (specs/models/<id>.yaml) that the runner reads.

The runner reads nothing about a model from code: launch, audio, clocks and
capabilities all come from the spec. It accepts a `duplexeval.specs.Spec` (from the
Registry) or a plain dict of the same shape (tests, ad-hoc debugging).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from duplexeval.io import sha256_json
from duplexeval.resources import bundle_root, project_dir
from duplexeval.shims.endpointer import spec_env as endpointer_env
from duplexeval.specs.loader import identity_sha256

DEFAULT_STARTUP_TIMEOUT_S = 60.0
DEFAULT_STEP_TIMEOUT_S = 10.0
# The base every image builds FROM where the spec names none: made here by
# `duplexeval image base` (debootstrap), since no registry can be reached.
LOCAL_BASE_IMAGE = "duplexeval/base:bookworm"
REPO_ROOT = bundle_root()  # a checkout, or an installed wheel's copy (duplexeval.resources)


@dataclass(frozen=True)
class ModelSpec:
    id: str
    sha256: str
    backend: str
    command: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    image: str | None = None
    build: str | None = None
    gpus: int = 0
    base_image: str = LOCAL_BASE_IMAGE
    mem_limit: str | None = None
    pids_limit: int | None = None
    endpoint: str | None = None
    # realtime-api: the API's websocket base URL as a run's `--endpoint ws://...` gives it
    # (None: the spec's launch.realtime.base_url).
    realtime_url: str | None = None
    run_id: str | None = None  # labels a run's containers, so cleanup can sweep one run
    startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S
    step_timeout_s: float = DEFAULT_STEP_TIMEOUT_S
    audio: dict[str, Any] = field(default_factory=dict)
    clocks: tuple[str, ...] = ("lockstep",)
    capabilities: tuple[str, ...] = ()
    data: dict[str, Any] = field(default_factory=dict)
    # Where `build` and a local command's relative paths resolve: the project folder of the
    # spec tree the spec came from (a model author's repository, or the bundle).
    home: Path = REPO_ROOT
    # Batched sessions (docs/runner.md, "Batched sessions in runs"): how many sessions the
    # harness plays at once on one server of this launch; > 1 starts the server with
    # `--max-sessions N`. 1 unless a run asks (`with_max_sessions`: `duplexeval run` and
    # `reproduce` do), so a debugging session or a conformance check starts the plain server.
    max_sessions: int = 1
    # The most the spec allows (`launch.max_sessions`): the server keeps that many apart.
    sessions_limit: int = 1
    # `launch.batch_exact`: a session's bytes do not depend on the server's width (the
    # reference agents); when false the width is part of a run folder's resume identity.
    batch_exact: bool = False
    # `latency_clock`: the clock that reproduces the model's published timing (None: no
    # claim, the suite's clock decides); docs/runner.md, "The clock per model".
    latency_clock: str | None = None
    # The resume identity: the spec's content less its display fields (specs.loader).
    identity_sha256: str = ""

    def _with_width(self, argv: list[str]) -> list[str]:
        return argv + ["--max-sessions", str(self.max_sessions)] if self.max_sessions > 1 else argv

    def with_max_sessions(self, cap: int | None) -> "ModelSpec":
        """The launch of a batched run: the spec's `launch.max_sessions`, capped by the run's
        `--max-sessions N` (None: no cap); never above what the spec declares."""
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
            raise ValueError(f"--max-sessions must be an integer >= 1, got {cap!r}")
        return replace(self, max_sessions=min(self.sessions_limit, cap or self.sessions_limit))

    def local_argv(self, socket_path: str) -> list[str]:
        """The launch command with {socket} and {python} filled in.

        `python` as the program means this interpreter, so an agent runs in the harness's
        own venv whatever PATH says.
        """
        argv = [a.replace("{socket}", socket_path).replace("{python}", sys.executable) for a in self.command]
        if argv and argv[0] in ("python", "python3"):
            argv[0] = sys.executable
        return self._with_width(argv)

    def container_argv(self, socket_path: str) -> list[str] | None:
        """The same command inside the image (whose venv `python` is on PATH); None: the image's CMD."""
        if not self.command:
            return None
        return self._with_width([a.replace("{socket}", socket_path).replace("{python}", "python") for a in self.command])

    def with_backend(self, backend: str | None = None, endpoint: str | None = None) -> "ModelSpec":
        """The spec as a run's `--backend` / `--endpoint` choose, without editing the file.

        The spec hash stays that of the file: the backend says where the model runs, not
        what it is, so a docker and a local run of one spec give the same records.
        """
        if endpoint and self.backend == "realtime-api":
            if not endpoint.startswith(("ws://", "wss://")):
                raise ValueError(f"model {self.id}: a realtime-api model's endpoint {endpoint!r} must be ws://HOST:PORT[/v1] "
                                 "or wss://... (the API's websocket base URL)")
            return replace(self, realtime_url=endpoint)
        if endpoint:
            if not endpoint.startswith("unix:") or len(endpoint) <= len("unix:"):
                raise ValueError(f"model {self.id}: endpoint {endpoint!r} must be unix:/path/to/socket")
            return replace(self, backend="endpoint", endpoint=endpoint)
        if backend is None or backend == self.backend:
            return self
        where = f"model {self.id}"
        if backend == "docker" and not (self.image and self.build):
            raise ValueError(f"{where}: --backend docker needs 'launch.image' and 'launch.build' in its spec")
        if backend == "local" and not self.command:
            raise ValueError(f"{where}: --backend local needs 'launch.command' in its spec (it only runs as an image)")
        if backend == "endpoint" and not self.endpoint:
            raise ValueError(f"{where}: --backend endpoint needs --endpoint unix:PATH or 'launch.endpoint' in its spec")
        if backend not in ("local", "docker", "endpoint") or self.backend == "realtime-api":
            raise ValueError(f"{where}: backend {backend!r} is not local, docker or endpoint"
                             + ("; a realtime-api model runs only through its bridge" if self.backend == "realtime-api" else ""))
        return replace(self, backend=backend)


def model_spec_from(obj: Any) -> ModelSpec:
    """A ModelSpec from a Registry Spec or a dict; errors name the missing field."""
    if isinstance(obj, ModelSpec):
        return obj
    data = getattr(obj, "data", obj)
    if not isinstance(data, dict):
        raise TypeError(f"model spec must be a dict or a duplexeval.specs.Spec, got {type(obj).__name__}")
    sid = getattr(obj, "id", None) or data.get("id")
    where = f"model spec {sid or '<no id>'}"
    if not sid:
        raise ValueError(f"{where}: missing field 'id'")
    launch = data.get("launch")
    if not isinstance(launch, dict) or "backend" not in launch:
        raise ValueError(f"{where}: missing field 'launch.backend'")
    backend = launch["backend"]
    if backend == "local" and not launch.get("command"):
        raise ValueError(f"{where}: launch.backend is local but 'launch.command' is missing")
    if backend == "docker" and not (launch.get("image") and launch.get("build")):
        raise ValueError(f"{where}: launch.backend is docker but 'launch.image' or 'launch.build' is missing")
    if backend == "endpoint" and not launch.get("endpoint"):
        raise ValueError(f"{where}: launch.backend is endpoint but 'launch.endpoint' is missing")
    if backend == "realtime-api":
        from duplexeval.specs.realtime_config import config_from_spec

        config_from_spec(sid, data)  # a field that cannot work is named now, not at the first session
    elif backend not in ("local", "docker", "endpoint"):
        raise ValueError(f"{where}: launch.backend {backend!r} is not local, docker, endpoint or realtime-api")
    return ModelSpec(
        id=sid,
        sha256=getattr(obj, "sha256", None) or sha256_json(data),
        identity_sha256=identity_sha256(data),
        backend=backend,
        command=tuple(launch.get("command", ())),
        # Spec sections a shim reads at start-up travel in its environment, whatever the backend.
        env={**launch.get("env", {}), **endpointer_env(data)},
        image=launch.get("image"),
        build=launch.get("build"),
        gpus=int(launch.get("gpus", 0)),
        base_image=launch.get("base_image", LOCAL_BASE_IMAGE),
        mem_limit=launch.get("mem_limit"),
        pids_limit=launch.get("pids_limit"),
        endpoint=launch.get("endpoint"),
        startup_timeout_s=float(launch.get("startup_timeout_s", DEFAULT_STARTUP_TIMEOUT_S)),
        step_timeout_s=float(launch.get("step_timeout_s", DEFAULT_STEP_TIMEOUT_S)),
        audio=dict(data.get("audio", {})),
        clocks=tuple(data.get("clocks", ("lockstep",))),
        capabilities=tuple(data.get("capabilities", ())),
        data=data,
        sessions_limit=_max_sessions(launch, where),
        batch_exact=bool(launch.get("batch_exact", False)),
        latency_clock=_latency_clock(data, where),
        home=project_dir(obj.path, "models") if getattr(obj, "path", None) else REPO_ROOT,
    )


def _max_sessions(launch: dict[str, Any], where: str) -> int:
    n = launch.get("max_sessions", 1)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"{where}: launch.max_sessions must be an integer >= 1, got {n!r}")
    return n


def _latency_clock(data: dict[str, Any], where: str) -> str | None:
    """The spec's `latency_clock`, which must be one of the clocks it runs on."""
    clock = data.get("latency_clock")
    clocks = data.get("clocks", ["lockstep"])
    if clock is not None and clock not in clocks:
        raise ValueError(f"{where}: latency_clock {clock!r} is not one of its clocks ({', '.join(clocks)})")
    return clock


def load_model_spec(model_id: str, root: Path | None = None) -> ModelSpec:
    """Loads specs/models/<id>.yaml (includes resolved, schema-validated) by `duplexeval.specs.load_spec`.

    One file, not the whole Registry: running a model must not fail because an unrelated
    benchmark spec is being edited. An unknown id gets the Registry's "did you mean".
    """
    from duplexeval.specs import UnknownSpecError, find_spec_file, known_spec_ids, load_spec

    roots = (Path(root),) if root else None  # None: $DUPLEXEVAL_SPECS folders, then the bundle's
    path = find_spec_file("models", model_id, roots)
    if path is None:
        raise UnknownSpecError("model", model_id, known_spec_ids("models", roots))
    return model_spec_from(load_spec(path, expected_kind="model"))
