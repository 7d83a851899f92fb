"""Exclusive ownership of work units: one claim file per unit, created with O_EXCL.

Inside one driver a unit is handed to exactly one worker at a time (the executor's
bookkeeping); claims make that hold across drivers too: two `duplexeval run` processes on
one run folder (or a restarted driver while an old one is still alive) never play the
same unit, because only the process whose `open(O_CREAT | O_EXCL)` succeeded owns it. A
claim names its owner (host, pid, a per-driver token). A claim whose owner was a process
on this host that no longer runs (a killed driver) is stale and is reclaimed; reclaiming
happens under an flock so two live drivers cannot both take over the same stale claim.
A claim from another host is never reclaimed automatically (its driver may be alive):
the error names the file to delete once that driver is known to be gone.

Layout: `<run_dir>/.claims/<model>/<benchmark>/<unit_id>.claim`, deleted once the unit's
files are written (an interrupted run leaves only its own, stale, claims).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from duplexeval.executors.base import Unit
from duplexeval.processes import pid_alive

CLAIMS_DIR = ".claims"


class Claims:
    """The claims of one driver on one run folder."""

    def __init__(self, run_dir: Path):
        self.root = Path(run_dir) / CLAIMS_DIR
        self.owner = {"host": socket.gethostname(), "pid": os.getpid(), "token": uuid.uuid4().hex}
        self.held: set[str] = set()

    def path(self, unit: Unit) -> Path:
        return self.root / unit.job_key / f"{unit.unit_id}.claim"

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / ".lock", "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def owner_of(self, unit: Unit) -> dict[str, Any] | None:
        try:
            return json.loads(self.path(unit).read_text("utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return {}  # being written (or damaged): treat as owned by someone unknown

    def stale(self, owner: dict[str, Any] | None) -> bool:
        """A claim nobody can be holding: its owner ran on this host and is gone (or is an
        earlier process that had our pid)."""
        if not owner or owner.get("host") != self.owner["host"]:
            return False
        pid = int(owner.get("pid", -1))
        if pid == os.getpid():
            return owner.get("token") != self.owner["token"]
        return not pid_alive(pid)

    def try_claim(self, unit: Unit) -> bool:
        """True when this driver now owns `unit` (it did already, or the claim was created or reclaimed)."""
        if unit.key in self.held:
            return True
        path = self.path(unit)
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._locked():
            owner = self.owner_of(unit)
            if owner is not None:
                if not self.stale(owner):
                    return False
                path.unlink(missing_ok=True)
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except OSError as exc:
                if exc.errno == errno.EEXIST:  # another host's driver, between our read and our create
                    return False
                raise
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({**self.owner, "unit": unit.key}, f)
                f.flush()
                os.fsync(f.fileno())
        self.held.add(unit.key)
        return True

    def release(self, unit: Unit) -> None:
        if unit.key in self.held:
            self.path(unit).unlink(missing_ok=True)
            self.held.discard(unit.key)

    def foreign(self, unit: Unit) -> str:
        """Who holds `unit`'s claim, for a message."""
        owner = self.owner_of(unit) or {}
        return f"{self.path(unit)} (host {owner.get('host', '?')}, pid {owner.get('pid', '?')})"

    def cleanup(self) -> None:
        """Removes empty claim folders (and the lock) once nothing is claimed in them."""
        if not self.root.is_dir():
            return
        for d in sorted((p for p in self.root.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            try:
                d.rmdir()
            except OSError:
                pass
        if not any(p.suffix == ".claim" for p in self.root.rglob("*")):
            (self.root / ".lock").unlink(missing_ok=True)
            try:
                self.root.rmdir()
            except OSError:
                pass
