"""`duplexeval cleanup`, the container half: what a killed runner leaves behind.

A runner killed with SIGKILL cannot remove its model container (containers run outside
the runner's process tree). Containers are found by the `duplexeval.managed` label,
optionally one run's. Its socket folders are runner/backends/socket_dirs.py's.
"""

from __future__ import annotations

from typing import Any

from duplexeval.containers.engine import MANAGED_LABEL, RUN_LABEL


def remove_managed_containers(client: Any, run_id: str | None = None) -> list[str]:
    """Removes every container labelled duplexeval.managed (of `run_id` only, if given); returns names."""
    filters = [f"{MANAGED_LABEL}=1"] + ([f"{RUN_LABEL}={run_id}"] if run_id else [])
    removed = []
    for c in client.containers.list(all=True, filters={"label": filters}):
        c.remove(force=True)
        removed.append(c.name)
    return removed
