"""Which worker processes a run has right now: `<run_dir>/.workers/<name>.json` = {worker, host, pid}.

Written by each worker (local process or Ray actor) when it starts and removed when it
stops, so an operator (or a test) can see where units are being played and kill one; a
file left by a killed worker is harmless and replaced by the next worker of that name.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duplexeval.executors.base import worker_identity
from duplexeval.io import atomic_write_json

WORKERS_DIR = ".workers"


@dataclass(frozen=True)
class WorkerRegistry:
    run_dir: Path

    @property
    def root(self) -> Path:
        return Path(self.run_dir) / WORKERS_DIR

    def register(self, name: str) -> None:
        atomic_write_json(self.root / f"{name}.json", worker_identity(name))

    def unregister(self, name: str) -> None:
        (self.root / f"{name}.json").unlink(missing_ok=True)
        try:
            self.root.rmdir()
        except OSError:
            pass

    def workers(self) -> list[dict[str, Any]]:
        out = []
        for p in sorted(self.root.glob("*.json")) if self.root.is_dir() else []:
            try:
                out.append(json.loads(p.read_text("utf-8")))
            except (OSError, ValueError):
                continue  # being replaced
        return out
