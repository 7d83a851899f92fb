"""`duplexeval cleanup`, the socket half: socket folders a killed runner leaves behind.

A runner killed with SIGKILL cannot remove its socket folder (/tmp/dxe-*). Each folder
names its runner in `owner.pid`: a folder whose runner is gone is removed, one in use is
left alone. It lives beside `short_socket_dir`, which makes the folders.
"""

from __future__ import annotations

import glob
import os
import shutil
import time

from duplexeval.processes import pid_alive
from duplexeval.runner.backends.base import OWNER_FILE, SOCKET_DIR_PREFIX

# A folder with no owner.pid (made before owners were recorded) counts as stale once it
# is this old; a runner writes owner.pid within microseconds of making the folder.
UNOWNED_GRACE_S = 600.0


def stale_socket_dirs(tmp: str = "/tmp", now: float | None = None) -> list[str]:
    now = time.time() if now is None else now
    stale = []
    for path in sorted(glob.glob(os.path.join(tmp, SOCKET_DIR_PREFIX + "*"))):
        if not os.path.isdir(path) or os.path.basename(path).startswith(SOCKET_DIR_PREFIX + "build-"):
            continue
        owner = os.path.join(path, OWNER_FILE)
        try:
            with open(owner, encoding="utf-8") as f:
                alive = pid_alive(int(f.read().strip()))
        except (OSError, ValueError):
            alive = now - os.path.getmtime(path) < UNOWNED_GRACE_S
        if not alive:
            stale.append(path)
    return stale


def remove_stale_socket_dirs(tmp: str = "/tmp") -> list[str]:
    removed = []
    for path in stale_socket_dirs(tmp):
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed
