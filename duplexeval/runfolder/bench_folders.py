"""The <model>/<benchmark> folders of a run and the spec each was run with: what `score` walks.

Shared by every benchmark family, so re-scoring a run needs no family's code to find its folders.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def bench_dirs(run_dir: Path) -> list[Path]:
    """Folders holding items/ under a run (<run>/<model>/<benchmark>), or run_dir itself."""
    if (run_dir / "items").is_dir():
        return [run_dir]
    return sorted(p.parent for p in run_dir.glob("*/*/items") if p.is_dir())


SPEC_SNAPSHOTS = ("benchmark.json", "spec.json")


def bench_spec_for(bench_dir: Path) -> dict[str, Any]:
    """The spec a folder was run with: a snapshot next to items/ wins over the registry,
    so a re-score uses what the run used even after the spec file changed."""
    for name in SPEC_SNAPSHOTS:
        path = bench_dir / name
        if path.exists():
            return json.loads(path.read_text(encoding="utf-8"))
    from duplexeval.specs import Registry

    return Registry.load().get("benchmark", bench_dir.name).data
