"""Whether a recorded owner process still runs: the test behind every stale-owner cleanup
(a killed driver's unit claims, a killed runner's socket folders)."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """True while a process with this pid exists on this host (one we may not signal counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True
