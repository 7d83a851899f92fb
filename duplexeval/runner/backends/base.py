"""The backend contract: start a model server, say where it listens, stop it for good."""

from __future__ import annotations

import os
import socket
import tempfile
import time
from typing import Callable

from duplexeval.runner.client import Endpoint
from duplexeval.runner.errors import ModelFault
from duplexeval.specs.modelspec import ModelSpec

SOCKET_NAME = "model.sock"


class Backend:
    """Start with `start()` (returns once the server accepts connections), end with `stop()`.

    `stop()` must be safe to call twice and after a crash: the runner calls it on every
    fault so a hung model never outlives its item.
    """

    spec: ModelSpec

    def start(self) -> Endpoint:
        raise NotImplementedError

    def alive(self) -> bool:
        raise NotImplementedError

    def diagnostics(self) -> str:
        """The last lines the server wrote to stderr, for error reasons."""
        return ""

    def exit_status(self) -> int | None:
        """The server's exit status once it has ended (negative: killed by that signal); None while it runs
        or where the backend cannot tell."""
        return None

    def stop(self, grace_s: float = 2.0) -> None:
        """Stop for good; `grace_s` is how long a graceful exit may take before a kill."""
        raise NotImplementedError

    def await_socket(self, sock: str) -> Endpoint:
        """Wait until the server listens on `sock`; a server that never does is stopped."""
        try:
            wait_for_unix_socket(sock, self.spec.startup_timeout_s, self.alive, self.diagnostics)
        except BaseException:
            self.stop()
            raise
        return Endpoint(unix_path=sock)

    def __enter__(self) -> "Backend":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


SOCKET_DIR_PREFIX = "dxe-"
OWNER_FILE = "owner.pid"


def short_socket_dir(prefix: str = SOCKET_DIR_PREFIX) -> str:
    """A fresh private folder for the socket; /tmp keeps the path under the 108-byte sun_path limit.

    The folder names the runner's PID (`owner.pid`), so `duplexeval cleanup` can tell
    the folder of a SIGKILLed runner from one still in use.
    """
    path = tempfile.mkdtemp(prefix=prefix, dir="/tmp" if os.path.isdir("/tmp") else None)
    with open(os.path.join(path, OWNER_FILE), "w", encoding="utf-8") as f:
        f.write(str(os.getpid()))
    return path


def wait_for_unix_socket(path: str, timeout_s: float, alive: Callable[[], bool], describe: Callable[[], str]) -> None:
    """Health check: the socket accepts a connection before `timeout_s`, or the start failed."""
    deadline = time.monotonic() + timeout_s
    while True:
        if not alive():
            raise ModelFault("STARTUP", f"model server exited before listening; {describe()}")
        if os.path.exists(path):
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                try:
                    s.connect(path)
                    return
                except OSError:
                    pass
        if time.monotonic() > deadline:
            raise ModelFault("STARTUP", f"model server not listening on {path} after {timeout_s:g} s; {describe()}")
        time.sleep(0.02)
