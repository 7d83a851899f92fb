"""The connection to a Docker engine, with an error a user can act on when there is none."""

from __future__ import annotations

import os
from typing import Any

# Every container and image this bundle makes carries this label, so `duplexeval cleanup`
# removes exactly ours and nothing else on a shared engine.
MANAGED_LABEL = "duplexeval.managed"
MODEL_LABEL = "duplexeval.model"
RUN_LABEL = "duplexeval.run"
ENGINE_HINT = "start one with `scripts/docker-engine.sh start` and `eval $(scripts/docker-engine.sh env)`"


class EngineUnavailable(RuntimeError):
    """No Docker engine answers at DOCKER_HOST (or the default socket)."""


def docker_client(timeout_s: float = 120.0) -> Any:
    """A pinged client of the engine at $DOCKER_HOST; EngineUnavailable names where it looked."""
    try:
        import docker

        client = docker.from_env(timeout=int(timeout_s))
        client.ping()
    except Exception as exc:  # docker.errors.DockerException, requests' ConnectionError, PermissionError
        where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock (DOCKER_HOST is unset)")
        raise EngineUnavailable(f"no Docker engine reachable at {where} ({type(exc).__name__}); {ENGINE_HINT}") from None
    return client
