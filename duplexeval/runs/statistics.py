"""statistics.json: the statistics across the jobs of a run that its benchmark families compute.

A family computes what its paper tests across models and conditions (a paired test,
a rank correlation) in its `statistics` hook (duplexeval.benchmarks.base.Benchmark.statistics);
this module only asks every installed family and writes their parts, side by side, to
`statistics.json` beside the manifest, after every run (duplexeval.runs.execute) and in
`reproduce`. It names no family: which keys a file holds is the families' business, and
two families claiming one key is refused rather than letting one overwrite the other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from duplexeval.io import atomic_write_json

SCHEMA = "duplexeval.statistics/1"


def run_statistics(run_dir: Path) -> dict[str, Any]:
    """Every family's statistics of `run_dir`, merged under the file's schema tag."""
    from duplexeval.benchmarks import plugins

    out: dict[str, Any] = {"schema": SCHEMA}
    owner: dict[str, str] = {}
    for name, family in sorted(plugins().items()):
        part = family.statistics(Path(run_dir))
        for key, value in (part or {}).items():
            if key in out:
                raise ValueError(f"statistics.json: families {owner.get(key, 'core')!r} and {name!r} both write {key!r}")
            out[key], owner[key] = value, name
    return out


def write_statistics(run_dir: Path) -> dict[str, Any]:
    """Compute and write `run_dir/statistics.json` (atomically); returns what was written."""
    stats = run_statistics(Path(run_dir))
    atomic_write_json(Path(run_dir) / "statistics.json", stats)
    return stats
