"""Containers: the Docker engine, the local base image, hermetic image builds, cleanup.

Used by the docker backend (runner/backends/docker.py) and the `image` / `cleanup`
commands. Nothing here needs a registry: the base comes from debootstrap, the Python
packages from a wheelhouse staged on the host, and every build runs with its network
disabled (docs/containers.md).
"""

from duplexeval.containers.engine import MANAGED_LABEL, EngineUnavailable, docker_client

__all__ = ["MANAGED_LABEL", "EngineUnavailable", "docker_client"]
