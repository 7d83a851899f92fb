"""The per-process memo of parsed spec files behind `Registry.load()`.

A suite run loads the registry once per job and per judge; the memo must make a reload
cheap without ever returning a stale spec: a file (or a file it includes) whose bytes
changed is parsed again, a broken file is reported every time, and a caller that edits
the data it got cannot change what the next load returns.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from duplexeval.specs import Registry, SpecErrors, index as registry_module, repo_root


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    """A copy of the bundle's spec tree; the folders its specs point into are linked."""
    root = tmp_path / "specs"
    shutil.copytree(repo_root() / "specs", root)
    for name in ("images", "data", "golden"):
        (tmp_path / name).symlink_to(repo_root() / name, target_is_directory=True)
    return root


def _snapshot(reg: Registry) -> str:
    return json.dumps({kind: {i: [s.data, str(s.path), [str(p) for p in s.sources]] for i, s in specs.items()}
                       for kind, specs in reg.specs.items()}, sort_keys=True, default=str)


def test_a_reload_equals_a_first_load_and_is_cheaper(tree: Path) -> None:
    registry_module._FILE_MEMO.clear()
    # CPU time of this process: other processes on a loaded machine do not count.
    t0 = time.process_time()
    first = Registry.load(tree)
    t1 = time.process_time()
    again = Registry.load(tree)
    t2 = time.process_time()
    assert _snapshot(again) == _snapshot(first)
    assert again.warnings == first.warnings
    # Measured ~17x here (0.85 s -> 0.05 s); 3x leaves room for a loaded machine.
    assert (t2 - t1) * 3 < (t1 - t0)


def test_an_edited_spec_file_is_parsed_again(tree: Path) -> None:
    Registry.load(tree)
    path = tree / "judges" / "mpe-answer-offline.yaml"
    text = path.read_text(encoding="utf-8")
    stat = path.stat()
    # Same size and the old mtime: a memo keyed on (mtime, size) would miss this edit.
    path.write_text(text.replace("description: Offline", "description: OFFLINE", 1), encoding="utf-8")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size
    edited = Registry.load(tree).get("judge", "mpe-answer-offline")
    assert edited.data["description"].startswith("OFFLINE")


def test_an_edited_include_is_seen_by_the_file_that_includes_it(tree: Path) -> None:
    before = Registry.load(tree).get("benchmark", "mpe-explicit")
    base = tree / "benchmarks" / "_mpe-base.yaml"
    assert base in [Path(p) for p in before.sources] or base.resolve() in before.sources
    text = base.read_text(encoding="utf-8")
    assert "turn_gap_s: 0.5" in text
    base.write_text(text.replace("turn_gap_s: 0.5", "turn_gap_s: 0.7", 1), encoding="utf-8")
    after = Registry.load(tree).get("benchmark", "mpe-explicit")
    assert before.data["scheduler"]["turn_gap_s"] == 0.5
    assert after.data["scheduler"]["turn_gap_s"] == 0.7


def test_a_broken_file_is_reported_on_every_load(tree: Path) -> None:
    Registry.load(tree)
    path = tree / "judges" / "mpe-answer-offline.yaml"
    path.write_text(path.read_text(encoding="utf-8") + "\nnot_a_field: 1\n", encoding="utf-8")
    for _ in range(2):
        with pytest.raises(SpecErrors, match="not_a_field"):
            Registry.load(tree)


def test_editing_returned_data_does_not_leak_into_the_next_load(tree: Path) -> None:
    spec = Registry.load(tree).get("benchmark", "mpe-explicit")
    spec.data["scheduler"]["turn_gap_s"] = 99.0
    spec.data["id"] = "changed"
    again = Registry.load(tree).get("benchmark", "mpe-explicit")
    assert again.data["scheduler"]["turn_gap_s"] == 0.5
    assert again.data["id"] == "mpe-explicit"


def test_a_deleted_reference_target_still_fails_a_reload(tree: Path) -> None:
    """The reference checks (templates, data paths) run on every load, memo or not."""
    judge = Registry.load(tree).get("judge", "mpe-answer-claude")
    template = judge.data["template"]["path"]
    (judge.path.parent / template).unlink()
    with pytest.raises(SpecErrors, match="does not exist"):
        Registry.load(tree)
