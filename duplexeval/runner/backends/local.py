"""Backend `local`: the model server is a subprocess listening on a Unix socket in a temp dir.

Used by the tests and the embedded default (no Docker engine on the development
machines). The child dies with its parent (PR_SET_PDEATHSIG), so a runner killed with
SIGKILL leaves no orphan server holding a core.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import sys
from typing import IO

from duplexeval.resources import import_root
from duplexeval.runner.backends.base import SOCKET_NAME, Backend, short_socket_dir
from duplexeval.runner.client import Endpoint
from duplexeval.secrets import redact
from duplexeval.specs.modelspec import ModelSpec

STDERR_TAIL_BYTES = 2000


def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        PR_SET_PDEATHSIG = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class LocalBackend(Backend):
    def __init__(self, spec: ModelSpec):
        self.spec = spec
        self.proc: subprocess.Popen | None = None
        self.dir: str | None = None
        self._stderr: IO[bytes] | None = None

    def start(self) -> Endpoint:
        self.dir = short_socket_dir()
        sock = os.path.join(self.dir, SOCKET_NAME)
        self._stderr = open(os.path.join(self.dir, "stderr.log"), "w+b")
        env = dict(os.environ, **self.spec.env)
        # The agents import duplexeval: this same copy (a checkout or an installed wheel), first.
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(import_root()), env.get("PYTHONPATH", "")) if p)
        self.proc = subprocess.Popen(
            self.spec.local_argv(sock), stdin=subprocess.DEVNULL, stdout=self._stderr, stderr=self._stderr,
            # A relative path in the command (images/moshi/shim.py) is the spec's project folder's.
            env=env, cwd=str(self.spec.home), preexec_fn=_die_with_parent,
        )
        return self.await_socket(sock)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def exit_status(self) -> int | None:
        return self.proc.poll() if self.proc is not None else None

    def diagnostics(self) -> str:
        parts = []
        if self.proc is not None and self.proc.poll() is not None:
            parts.append(f"exit status {self.proc.returncode}")
        if self._stderr is not None and not self._stderr.closed:
            self._stderr.flush()
            size = self._stderr.seek(0, os.SEEK_END)
            self._stderr.seek(max(0, size - STDERR_TAIL_BYTES))
            tail = self._stderr.read().decode("utf-8", "replace").strip()
            if tail:
                parts.append("stderr: " + " | ".join(tail.splitlines()[-6:]))
        # A local model inherits the harness's environment, keys included: never echo one.
        return redact("; ".join(parts) or "no diagnostics")

    def stop(self, grace_s: float = 2.0) -> None:
        """Kill and reap; SIGTERM first, SIGKILL if it does not go within `grace_s` (a hung step)."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=grace_s)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


__all__ = ["LocalBackend"]
