"""How a model server is started: `local` (a subprocess) or `docker` (a container)."""

from duplexeval.runner.backends.base import Backend, make_backend

__all__ = ["Backend", "make_backend"]
