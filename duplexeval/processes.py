"""Facts about this process among others: whether a recorded owner process still runs (the
test behind every stale-owner cleanup: a killed driver's unit claims, a killed runner's
socket folders), and how many cores it has to itself beside its sibling workers."""

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


# Set by whoever starts N parallel workers on one machine (`--executor local --jobs N`, the
# test suite's pytest-xdist workers) in each of them.
PARALLEL_WORKERS_ENV = "DUPLEXEVAL_PARALLEL_WORKERS"
# Set where a scheduler reserves cores for a process (a Ray task's or actor's `num_cpus`):
# the process may use that many, whatever the node has (Ray packs one task per reserved core).
RESERVED_CORES_ENV = "DUPLEXEVAL_RESERVED_CORES"


def cores_per_worker() -> int:
    """The cores this process may take for a library with its own thread pool (the ASR)
    without oversubscribing the machine (at least 1): what a scheduler reserved for it, else
    this machine's cores shared out among the parallel workers."""
    if os.environ.get(RESERVED_CORES_ENV):
        return max(1, int(float(os.environ[RESERVED_CORES_ENV])))
    workers = max(1, int(os.environ.get(PARALLEL_WORKERS_ENV) or 1))
    return max(1, (os.cpu_count() or 1) // workers)
