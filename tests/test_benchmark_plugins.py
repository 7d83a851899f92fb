"""A third benchmark needs one package and its specs: tests/plugin_fixtures/toybench, found
through its entry point like any installed plug-in, run by `duplexeval run` and re-scored by
`duplexeval score`; a spec whose family has no plug-in is an error naming the spec file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from duplexeval.benchmarks import Benchmark, CannotRun, benchmark_for, plugins
from duplexeval.specs.errors import SpecErrors

FIXTURES = Path(__file__).parent / "plugin_fixtures"
REPO = Path(__file__).resolve().parents[1]


def installed_toybench(site: Path) -> Path:
    """What `pip install toybench` would leave: a dist-info whose entry_points.txt names the plug-in."""
    info = site / "toybench-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toybench\nVersion: 0\n")
    (info / "entry_points.txt").write_text("[duplexeval.benchmarks]\ntoybench = toybench:ToyBench\n")
    return site


def duplexeval(args: list[str], *, plugin_site: Path | None) -> subprocess.CompletedProcess:
    env = {**os.environ, "DUPLEXEVAL_SPECS": str(FIXTURES / "specs")}
    if plugin_site is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(plugin_site), str(FIXTURES), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "duplexeval", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_built_in_families_are_plug_ins_found_by_entry_point():
    found = plugins()
    assert {"duplex-mpe", "mtr-duplexbench"} <= set(found)
    assert all(isinstance(p, Benchmark) and p.family == name for name, p in found.items())


def test_a_family_without_a_plug_in_names_the_spec_file_and_suggests_a_close_name(tmp_path):
    spec = tmp_path / "mpe-typo.yaml"
    spec.write_text("kind: benchmark\nid: mpe-typo\nbenchmark: duplex-mpee\ndimension: mpe\n")
    with pytest.raises(SpecErrors) as err:
        benchmark_for({"id": "mpe-typo", "benchmark": "duplex-mpee"}, spec)
    message = str(err.value)
    assert f"{spec.name}:3: benchmark:" in message and "'duplex-mpee'" in message
    assert "did you mean 'duplex-mpe'?" in message


def test_cannot_run_carries_its_reason():
    assert CannotRun("no data here").reason == "no data here"


def test_a_third_benchmark_runs_end_to_end_as_one_package_and_its_specs(tmp_path):
    site = installed_toybench(tmp_path / "site")
    ran = duplexeval(["run", "--suite", "toy", "--runs-dir", str(tmp_path / "runs"), "--run-id", "toy"],
                     plugin_site=site)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    run = tmp_path / "runs" / "toy"
    silent = json.loads((run / "silent" / "toy-tones" / "results.json").read_text())
    babbler = json.loads((run / "babbler" / "toy-tones" / "results.json").read_text())
    assert silent["items"] == {"total": 3, "ok": 3, "error": 0}
    assert silent["metrics"]["speech_frames"]["numerator"] == 0           # the silent agent never speaks
    assert babbler["metrics"]["speech_frames"]["numerator"] > 0           # the babbler does
    assert json.loads((run / "toybench-after-run.json").read_text()) == ["babbler/toy-tones", "silent/toy-tones"]
    summary = json.loads((run / "summary.json").read_text())
    assert [j["status"] for j in summary["jobs"]] == ["scored", "scored"]

    before = (run / "silent" / "toy-tones" / "results.json").read_bytes()
    rescored = duplexeval(["score", str(run)], plugin_site=site)
    assert rescored.returncode == 0, rescored.stdout + rescored.stderr
    assert "silent/toy-tones: speech_frames=0.0 (0/30)" in rescored.stdout
    assert (run / "silent" / "toy-tones" / "results.json").read_bytes() == before

    # The report gives the family its own section, though toybench has no report code (issue 27 item 3).
    reported = duplexeval(["report", str(run)], plugin_site=site)
    assert reported.returncode == 0, reported.stdout + reported.stderr
    html = (run / "report.html").read_text(encoding="utf-8")
    section = html.split('<section class="family" id="family-toybench">', 1)[1].split("</section>", 1)[0]
    assert "toy-tones: speech_frames" in section
    assert '<span class="v">0.0000</span> <span class="nd">0/30</span>' in section   # silent
    assert r"\section*{toybench}" in (run / "report.tex").read_text(encoding="utf-8")


def test_running_a_family_whose_plug_in_is_not_installed_is_an_error_naming_the_spec(tmp_path):
    ran = duplexeval(["run", "--suite", "toy", "--runs-dir", str(tmp_path / "runs")], plugin_site=None)
    assert ran.returncode == 2
    assert "toy-tones.yaml:3: benchmark: no benchmark plug-in for family 'toybench'" in ran.stderr
    assert "Traceback" not in ran.stderr
    assert not list((tmp_path / "runs").glob("*/*/toy-tones/items/*"))


@pytest.mark.parametrize("change, complaint", [
    ({"dimension": "mtr-quality"}, "dimension"),         # a built-in family keeps its own dimensions
    ({"benchmark": "toybench"}, "benchmark"),            # a built-in dimension belongs to a built-in family
    ({"options": {"tones": []}}, "options"),             # plug-in fields are not for the built-ins
])
def test_the_built_in_families_stay_as_strict_as_before(tmp_path, change, complaint):
    import yaml

    from duplexeval.specs import Registry, load_spec

    data = {**Registry.load().get("benchmark", "mpe-explicit").data, **change}
    path = tmp_path / "benchmarks" / "mpe-explicit.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(SpecErrors) as err:
        load_spec(path, "benchmark")
    assert complaint in str(err.value)


def test_every_hook_belongs_to_exactly_one_group_and_every_family_meets_them():
    """The plug-in hooks in a few protocols (duplexeval/benchmarks/hooks.py), documented in one place:
    a hook added to Benchmark without a group (or in two) fails here."""
    from duplexeval.benchmarks import Benchmark, plugins
    from duplexeval.benchmarks.hooks import GROUPS, group_members

    hooks = {n for n in [*dir(Benchmark), *Benchmark.__annotations__] if not n.startswith("_")}
    members = {name: group_members(group) for name, group in GROUPS.items()}
    placed = [h for m in members.values() for h in m]
    assert sorted(hooks - set(placed)) == []                       # every hook has a group
    assert sorted({h for h in placed if placed.count(h) > 1}) == []  # and only one
    assert sorted(set(placed) - hooks) == []                       # a group names only hooks
    for plugin in plugins().values():
        for name in members:
            assert all(hasattr(plugin, h) for h in members[name]), (plugin.family, name)
