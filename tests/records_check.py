"""Every records.jsonl of a finished run against specs/schema/records.schema.json and its
family's outcome words (Benchmark.outcomes): the e2e modules call this on their own runs."""

from __future__ import annotations

from pathlib import Path

from duplexeval.benchmarks import plugins
from duplexeval.io import read_jsonl
from duplexeval.runfolder.records import record_problems
from duplexeval.runfolder.verify import folder_family


def records_problems(run_dir: Path) -> dict[str, list[str]]:
    """Folder -> its records' problems, over every records.jsonl of the run (at least one must exist)."""
    paths = sorted(Path(run_dir).rglob("records.jsonl"))
    assert paths, f"{run_dir}: no records.jsonl to check"
    out = {}
    for path in paths:
        family = folder_family(path.parent)
        assert family in plugins(), f"{path.parent}: no family snapshot"
        problems = record_problems(read_jsonl(path), plugins()[family].outcomes)
        if problems:
            out[str(path.relative_to(run_dir))] = problems
    return out
