"""A CPU-only model (`launch.gpus: 0`) in the paper-suite projection: the spec's
`launch.cpu_step` (schema), bench/bench_cpu_model.py's arguments and audio count, and
bench/project_paper_suites.py putting such a model on the cluster's cores, not its GPUs.

The measurement itself is a bench (it plays minutes of audio through the real agent), not a test."""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest
import yaml

from duplexeval.specs.loader import SpecErrors, load_spec

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "specs" / "models" / "cascaded-baseline.yaml"


def _module(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.fixture(scope="module")
def bench():
    return _module("bench_cpu_model")


@pytest.fixture(scope="module")
def projection():
    return _module("project_paper_suites")


def _spec_with(tmp_path: Path, launch_changes: dict) -> Path:
    data = yaml.safe_load(SPEC.read_text())
    for key, value in launch_changes.items():
        if value is None:
            data["launch"].pop(key, None)
        else:
            data["launch"][key] = value
    path = tmp_path / "cascaded-baseline.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_the_schema_accepts_the_specs_cpu_step(tmp_path):
    spec = load_spec(SPEC, "model")
    step = spec.data["launch"]["cpu_step"]
    assert step["kind"] == "measured" and step["x_real_time_per_core"] > 0
    good = {"x_real_time_per_core": 0.5, "kind": "assumed", "source": "a guess"}  # excludes is optional
    assert load_spec(_spec_with(tmp_path, {"cpu_step": good}), "model").data["launch"]["cpu_step"] == good


@pytest.mark.parametrize("change, where", [
    ({"cpu_step": {"x_real_time_per_core": 0, "kind": "measured", "source": "s"}}, "x_real_time_per_core"),
    ({"cpu_step": {"x_real_time_per_core": 2.0, "kind": "measured"}}, "cpu_step"),          # no source
    ({"cpu_step": {"x_real_time_per_core": 2.0, "kind": "guessed", "source": "s"}}, "kind"),
    ({"cpu_step": {"x_real_time_per_core": 2.0, "kind": "measured", "source": "s", "cores": 4}}, "cpu_step"),
    ({"gpus": 1}, "gpus"),                      # a CPU figure on a GPU model
    ({"gpus": None}, "launch"),                 # ... or on one that does not say
])
def test_the_schema_refuses_a_wrong_cpu_step(change, where, tmp_path):
    with pytest.raises(SpecErrors) as caught:
        load_spec(_spec_with(tmp_path, change), "model")
    text = str(caught.value)
    assert "cascaded-baseline.yaml" in text and where in text, text


def test_the_bench_answers_help(bench, capsys):
    with pytest.raises(SystemExit) as caught:
        bench.main(["--help"])
    assert caught.value.code == 0
    out = capsys.readouterr().out
    assert "--model" in out and "--clock" in out


@pytest.mark.parametrize("argv, message", [
    (["--model", "moshi"], "--model 'moshi': not a CPU model (launch.gpus: 0, backend: local); those are: "
                           "cascaded-baseline"),
    (["--model", "cascaded-baseline", "--limit", "0"], "--limit must be >= 1, got 0"),
    (["--model", "cascaded-baseline", "--clock", "fast"], "invalid choice: 'fast'"),
    ([], "the following arguments are required: --model"),
    (["--model", "cascaded-baseline", "--suite", "nope"], "--suite 'nope': no such suite"),
])
def test_the_bench_refuses_bad_arguments_before_playing_anything(bench, capsys, argv, message):
    with pytest.raises(SystemExit) as caught:
        bench.main(argv)
    assert caught.value.code == 2
    assert message in capsys.readouterr().err


def test_the_bench_counts_a_one_pass_dialogue_once(bench, tmp_path):
    """Items cut from one history-as-heard session count its session once; others their duration."""
    def item(bench_id: str, name: str, **extra) -> None:
        folder = tmp_path / "cascaded-baseline" / bench_id / "items" / name
        folder.mkdir(parents=True)
        status = {"status": "ok", "frame_samples": 1280, "rate": 16000, "duration_s": 9.0, **extra}
        (folder / "status.json").write_text(json.dumps(status))

    for r in (1, 2, 3):  # rounds of one dialogue, one session of 100 frames (8 s)
        item("mtr-safety", f"d1.r0{r}", one_pass={"session_frames": 100})
    item("mtr-safety", "d2.r01", one_pass={"session_frames": 50})
    item("mpe-explicit", "scene-a")
    item("mpe-explicit", "scene-b", status="error")  # not played through: not counted
    assert bench.audio_played_s(tmp_path) == {"mtr-safety": pytest.approx(8.0 + 4.0), "mpe-explicit": 9.0}


def test_the_bench_finds_the_server_by_its_module(bench):
    assert bench.server_marker(["{python}", "-m", "duplexeval.agents.cascaded_baseline", "--socket", "{socket}"]) \
        == "duplexeval.agents.cascaded_baseline"
    assert bench.server_marker(["{python}", "server.py", "--socket", "{socket}"]) == "server.py"


def test_the_projection_puts_a_cpu_model_on_the_cores(projection):
    from duplexeval.specs.registry import default_registry

    x = default_registry().get("model", "cascaded-baseline").data["launch"]["cpu_step"]["x_real_time_per_core"]
    rows = projection.project(141.0, {}, cores=64, harness_ms=0.4)
    cascade = [r for r in rows if r.model == "cascaded-baseline"]
    assert cascade and all(r.cpu is not None and r.cpu_cost is not None for r in cascade)
    row = cascade[0]
    need = 1 / x + 0.4 / 80  # its share plus the harness's, per session
    assert row.cpu.sessions == math.floor(64 / need) and row.cpu.speed == row.cpu.sessions  # realtime: each at 1x
    # its wall does not depend on the GPUs
    assert row.wall_s(1) == row.wall_s(8) == pytest.approx(row.audio_s / row.cpu.sessions)
    assert all(r.cpu is None for r in rows if r.model != "cascaded-baseline")
    half = projection.project(141.0, {}, cores=32, harness_ms=0.4)
    assert {r.cpu.sessions for r in half if r.model == "cascaded-baseline"} == {math.floor(32 / need)}


def test_the_table_row_of_a_cpu_model_says_cores_not_gpus(projection):
    args = argparse.Namespace(gpus=8, cores=64, harness_ms=0.4, target_h=3.0, vad_x_per_core=351.0,
                              asr_x_per_gpu=300.0)
    rows = [r for r in projection.project(141.0, {}, cores=64, harness_ms=0.4) if r.model == "cascaded-baseline"]
    cells = [c.strip() for c in projection.table_row("cascaded-baseline", "paper-mtr", rows, args).split("|")[1:-1]]
    assert cells[3] == "CPU: 64 cores" and cells[4].startswith("measured: CPU, ")
    assert cells[6] == f"{rows[0].cpu.sessions} sessions on 64 cores" and cells[8] == "- (no GPU)"
    # the harness's cores: 0.4 ms per 80 ms frame for every session side by side
    assert int(cells[12]) == math.ceil(rows[0].cpu.sessions * 0.4 / 80)


def test_the_projection_prints_the_llm_endpoint_as_an_assumption(projection, capsys):
    projection.main([])
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("  cascaded-baseline: not in its figure"))
    assert "OpenAI-compatible endpoint" in line and "not projected" in line
    assert "| cascaded-baseline | paper-mtr | realtime | CPU: 64 cores |" in out
    assert "| freeze-omni | paper-mtr | realtime | GPU | declared: 3 servers per GPU in real time" in out


def test_the_projection_refuses_no_cores(projection, capsys):
    with pytest.raises(SystemExit):
        projection.main(["--cores", "0"])
    assert "--cores must be >= 1, got 0" in capsys.readouterr().err
