"""Backend `endpoint`: a server someone else started (a docker-compose service, a GPU node).

The harness starts and stops nothing; it only checks, with the spec's start-up timeout,
that the socket accepts connections. A server that dies mid-run is not restarted: its
items become `error` with the reason, and the next item finds the socket dead.
"""

from __future__ import annotations

import os

from duplexeval.runner.backends.base import Backend
from duplexeval.runner.client import Endpoint
from duplexeval.specs.modelspec import ModelSpec


class EndpointBackend(Backend):
    def __init__(self, spec: ModelSpec):
        if not spec.endpoint or not spec.endpoint.startswith("unix:"):
            raise ValueError(f"model {spec.id}: endpoint {spec.endpoint!r} must be unix:/path/to/socket")
        self.spec = spec
        self.path = spec.endpoint[len("unix:"):]
        self.started = False

    def start(self) -> Endpoint:
        self.started = True
        return self.await_socket(self.path)

    def alive(self) -> bool:
        # No process of ours to watch: presumed alive until the socket check times out.
        return self.started

    def diagnostics(self) -> str:
        state = "exists" if os.path.exists(self.path) else "is gone"
        return f"externally started server at {self.path} (socket {state}); see that server's own logs"

    def stop(self, grace_s: float = 2.0) -> None:
        self.started = False  # never ours to stop


__all__ = ["EndpointBackend"]
