"""How a model server is reached: `local` (a subprocess), `docker` (a container), or an
`endpoint` someone else started (a compose service, a server on a GPU node).

The factory lives here, above the backends, so each backend module imports only the
contract in `base.py` and nothing imports in a circle.
"""

from __future__ import annotations

from duplexeval.runner.backends.base import Backend
from duplexeval.specs.modelspec import ModelSpec

BACKENDS = ("local", "docker", "endpoint", "realtime-api")


def make_backend(spec: ModelSpec) -> Backend:
    """The backend `spec.backend` names (a run's `--backend` / `--endpoint` already applied)."""
    if spec.backend == "local":
        from duplexeval.runner.backends.local import LocalBackend

        return LocalBackend(spec)
    if spec.backend == "docker":
        from duplexeval.runner.backends.docker import DockerBackend

        return DockerBackend(spec)
    if spec.backend == "endpoint":
        from duplexeval.runner.backends.endpoint import EndpointBackend

        return EndpointBackend(spec)
    if spec.backend == "realtime-api":
        from duplexeval.runner.backends.realtime_api import RealtimeApiBackend

        return RealtimeApiBackend(spec)
    raise ValueError(f"model {spec.id}: unknown backend {spec.backend!r}; choose one of {', '.join(BACKENDS)}")


__all__ = ["BACKENDS", "Backend", "make_backend"]
