"""scenes.json: the conversations a Duplex-MPE job planned, with their turns.

Written when the job is planned, read when it is scored: a planned item whose folder is
missing then still contributes its units (as `error` records, status `missing`), the way
MTR's rounds.json keeps its rounds. Kept apart from plan.py so that scoring does not
import the scheduler, the renderer or the executors.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from duplexeval.benchmarks.mpe.scenes.model import conversation
from duplexeval.io import atomic_write_json

PLAN_FILE = "scenes.json"
PLAN_SCHEMA = "duplexeval.mpe-plan/1"
def write_plan_file(bench_dir: Path, bench: dict[str, Any], scenes: list) -> None:
    """scenes.json: every planned conversation and its turns (index, turn_id, label)."""
    condition = bench["condition"]
    atomic_write_json(Path(bench_dir) / PLAN_FILE, {
        "schema": PLAN_SCHEMA, "benchmark": bench.get("id"), "condition": condition,
        "items": {scene.id: [[t.index, t.turn_id, t.label] for t in conversation(scene, condition)]
                  for scene in scenes},
    })


def read_plan_file(bench_dir: Path) -> dict[str, list[tuple[int, str, str]]] | None:
    """The planned items and their turns, or None for a folder planned before scenes.json existed."""
    path = Path(bench_dir) / PLAN_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {item: [(int(i), str(tid), str(label)) for i, tid, label in turns]
                for item, turns in data["items"].items()}
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a Duplex-MPE plan file ({exc}); re-plan the job or delete the file") from exc
