"""Issue 39's classes below the CLI: the folder guard every replacing command uses, render-embedded's
notion of its own earlier output, and the one validation path of suite overrides."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from duplexeval.benchmarks.fdb.commands import earlier_render
from duplexeval.cli_params import Finite, FolderInUse, child_folder, replace_guard, safe_name
from duplexeval.runfolder.plan import plan_suite
from duplexeval.specs import Registry, SpecErrors

SOURCE = {"subsets": {"icc_backchannel": [{"id": 1}, {"id": 2}], "candor_turn_taking": [{"id": "a"}]}}


def test_the_guard_lets_new_empty_or_own_folders_through_and_refuses_the_rest(tmp_path: Path):
    assert replace_guard(tmp_path / "new", force=False) is False
    (tmp_path / "empty").mkdir()
    assert replace_guard(tmp_path / "empty", force=False) is False
    full = tmp_path / "full"
    full.mkdir()
    for name in ("a", "b", "c", "d"):
        (full / name).write_text(name)
    with pytest.raises(FolderInUse, match=r"holds a, b, c, \.\.\..*--force"):
        replace_guard(full, force=False)
    assert replace_guard(full, force=False, ours=lambda f: True) is True
    assert replace_guard(full, force=True) is True
    with pytest.raises(FolderInUse, match="is a file"):
        replace_guard(full / "a", force=True)
    assert sorted(p.name for p in full.iterdir()) == ["a", "b", "c", "d"]  # the guard itself deletes nothing


def test_an_earlier_render_is_recognised_and_anything_else_is_not(tmp_path: Path):
    ours = earlier_render(SOURCE)
    render = tmp_path / "render"
    (render / "icc_backchannel" / "1").mkdir(parents=True)
    (render / "icc_backchannel" / "1" / "input.wav").write_bytes(b"x")
    (render / "icc_backchannel" / "reference_distribution.json").write_text("{}")
    (render / "candor_turn_taking" / "a").mkdir(parents=True)
    assert ours(render)
    for extra in ("icc_backchannel/1/sub/x.txt", "icc_backchannel/3/input.wav", "other/1/input.wav",
                  "icc_backchannel/notes.txt", "README"):
        copy = tmp_path / extra.replace("/", "_")
        shutil.copytree(render, copy)
        (copy / extra).parent.mkdir(parents=True, exist_ok=True)
        (copy / extra).write_text("mine")
        assert not ours(copy), extra


def test_names_and_numbers_at_their_edges():
    assert safe_name("a" * 128) and safe_name("a.b_c-1")
    for bad in ("", ".", "..", "x..y", "a/b", "/a", "a" * 129, "-a", ".a", "a\n", "é"):
        with pytest.raises(ValueError, match="not a name"):
            safe_name(bad)
    assert child_folder(Path("/runs"), "r1") == Path("/runs/r1")
    t = Finite(0.0, 10.0, low_open=True)
    assert [t.within(v) for v in (0.0, 1e-300, 10.0, 10.000001, float("nan"), float("inf"))] == \
        [False, True, True, False, False, False]


SUITE = """kind: suite
id: {id}
description: only MTR in its runs, an MPE data override with a misspelt key
runs:
  - models: [silent]
    benchmarks: [mtr-pause-handling]
clock: lockstep
cache_mode: readwrite
overrides:
  data:
    mpe:
      source: embedded
      pth: data/embedded/mpe/scenes
"""


def test_a_pair_outside_the_suites_runs_gets_the_same_override_check(tmp_path: Path):
    path = tmp_path / "mtronly.yaml"
    path.write_text(SUITE.format(id="mtronly"))
    registry = Registry.load(extra_files=[path])  # no MPE benchmark in its runs: nothing to check at load
    assert plan_suite(registry, "mtronly")
    with pytest.raises(SpecErrors, match=r"mtronly\.yaml:13: overrides\.data\.mpe\.pth: unknown key "
                                         r"\(did you mean 'path'\?\)"):
        plan_suite(registry, "mtronly", models=["silent"], benchmarks=["mpe-explicit"])
