"""Property tests over option values, path-like ids and suite override fields (issue 39).

For any value hypothesis draws, each command either exits 0 with the right output or
refuses with exit 2 (1 for `validate`) naming the option or the field; never a traceback,
never an internal error, and no file outside the command's own output appears, changes or
disappears. The oracles are written from the rules, not from the code under test: a number
option accepts exactly the finite values within its documented range; a run id or model
name is accepted exactly when it is a plain name; a scheduler override passes `validate`
exactly when its key is a scheduler field and its value a finite number >= 0.
"""

from __future__ import annotations

import hashlib
import math
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from fuzz_settings import fuzz
from hypothesis import given, strategies as st
from report_fixture import make_run

from duplexeval.cli import cli
from duplexeval.reports.compare import compare_run
from duplexeval.reports.golden import golden_dir, load_golden
from duplexeval.runfolder.run_dir import load_run

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
SCHEDULER_FIELDS = ("turn_gap_s", "yield_silence_s", "max_wait_s", "n4_gap_s")

# What a user can type for a number: floats of every kind, written every way, and non-numbers.
NUMBER_TEXT = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["nan", "NaN", "-nan", "inf", "-inf", "Infinity", "1e400", "-1e400", "0", "-0", "1e-320",
                     "", " ", "abc", "1,5", "0x10", "1_000"]),
    st.integers(min_value=-10**6, max_value=10**6).map(str),
)
ID_TEXT = st.one_of(
    st.text(alphabet="abc./_-~ \\\x00é", min_size=0, max_size=12),
    st.sampled_from(["..", ".", "../x", "a/../../b", "/etc", "~root", "a" * 129, "a" * 128, "-x", "x..y", "ok.1"]),
)
OVERRIDE_VALUE = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(min_value=-10**9, max_value=10**9),
    st.booleans(), st.none(), st.text(max_size=5))


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _as_float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    """A sealed run and an empty cache, shared by every example (each checks it left them as they were)."""
    root = tmp_path_factory.mktemp("property")
    make_run(root, "run")
    (root / "cache" / "judges").mkdir(parents=True)
    return root


def _invoke(world: Path, argv: list[str], env: dict[str, str] | None = None):
    before = _tree(world)
    result = CliRunner().invoke(cli, argv, env={"DUPLEXEVAL_TRACEBACK_DIR": str(world / "tracebacks"),
                                                "DUPLEXEVAL_CACHE": str(world / "cache"), **(env or {})})
    out = result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in out and "internal error" not in out, out
    return result, before


@fuzz(0.1)
@given(text=NUMBER_TEXT)
def test_compare_tolerance_is_accepted_exactly_when_finite_and_not_negative(world, text):
    result, before = _invoke(world, ["compare", str(world / "run"), "--allow-missing", "--golden",
                                     str(golden_dir() / "embedded.yaml"), f"--tolerance={text}"])
    value = _as_float(text)
    valid = value is not None and math.isfinite(value) and value >= 0
    if not valid:
        assert result.exit_code == 2 and "--tolerance" in result.output, result.output
    else:
        rows = compare_run(load_run(world / "run"), load_golden(golden_dir() / "embedded.yaml"), tolerance=value)
        bad = [r for r in rows if r.status not in ("ok", "missing")]
        assert result.exit_code == (1 if bad else 0), result.output  # exit 0 only when every found cell is ok
    assert _tree(world) == before


@fuzz(0.1)
@given(text=NUMBER_TEXT)
def test_prune_age_is_accepted_exactly_when_finite_and_positive(world, text):
    result, before = _invoke(world, ["cache", "prune", f"--older-than-days={text}", "--dry-run"])
    value = _as_float(text)
    valid = value is not None and math.isfinite(value) and 0 < value <= 365000
    assert result.exit_code == (0 if valid else 2), result.output
    if valid:
        assert "nothing deleted" in result.output
    else:
        assert "--older-than-days" in result.output
    assert _tree(world) == before


@fuzz(0.1)
@given(run_id=ID_TEXT)
def test_a_run_id_is_accepted_exactly_when_it_is_a_name_and_stays_inside_runs_dir(world, run_id):
    runs = world / "runs"
    result, before = _invoke(world, ["run", "--dry-run", "--models", "silent", "--benchmarks", "mpe-explicit",
                                     "--runs-dir", str(runs), "--run-id", run_id])
    is_name = bool(NAME.fullmatch(run_id)) and ".." not in run_id
    assert result.exit_code == (0 if is_name else 2), result.output
    if not is_name:
        assert "--run-id" in result.output
    else:
        assert "silent" in result.output and "mpe-explicit" in result.output  # the dry run's table
        assert (runs / run_id).resolve().parent == runs.resolve()
    assert _tree(world) == before and not runs.exists()  # a dry run writes nothing


@fuzz(0.1)
@given(model=ID_TEXT)
def test_an_imported_model_name_is_a_name_or_refused_before_anything_is_read(world, model, tmp_path_factory):
    src = tmp_path_factory.mktemp("empty-submission")
    runs = world / "import-runs"
    result, before = _invoke(world, ["import-recordings", "mtr-safety", str(src), "--model", model,
                                     "--runs-dir", str(runs), "--run-id", "imp"])
    is_name = bool(NAME.fullmatch(model)) and ".." not in model
    if not is_name:
        assert result.exit_code == 2 and "--model" in result.output, result.output
    else:
        assert result.exit_code == 2 and "--model" not in result.output  # refused for the empty folder instead
    assert _tree(world) == before and not any(world.parent.glob("*evil*"))
    for path in runs.rglob("*") if runs.exists() else []:
        assert runs.resolve() in path.resolve().parents


SUITE = """kind: suite
id: {id}
description: a suite of the property test
runs:
  - models: [silent]
    benchmarks: [mpe-explicit]
clock: lockstep
cache_mode: readwrite
overrides:
  scheduler:
    {key}: {value}
"""


def _yaml_scalar(value) -> str:
    import yaml

    return yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()


@fuzz(0.1)
@given(key=st.one_of(st.sampled_from(SCHEDULER_FIELDS), st.sampled_from(["max_wait", "maxwait_s", "Max_wait_s",
                                                                         "after_t", "wait_s", "x"])),
       value=OVERRIDE_VALUE)
def test_a_scheduler_override_passes_validate_exactly_when_the_schema_allows_it(world, tmp_path_factory, key, value):
    folder = tmp_path_factory.mktemp("suite")
    path = folder / "prop.yaml"
    path.write_text(SUITE.format(id="prop", key=key, value=_yaml_scalar(value)), encoding="utf-8")
    result, before = _invoke(world, ["validate", str(path)])
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if key == "after_t":
        valid = value in ("turn-gap", "hold-start-window")
    else:
        valid = key in SCHEDULER_FIELDS and number and math.isfinite(value) and value >= 0
    assert result.exit_code == (0 if valid else 1), (key, value, result.output)
    if not valid:
        assert "prop.yaml:11" in result.output and f"overrides.scheduler.{key}" in result.output, result.output
    assert _tree(world) == before
