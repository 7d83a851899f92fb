"""The GPU checks' scripts (bench/gpu_check_*.py, bench/gpu_checks.sh) without a GPU.

What a machine without CUDA can check, fast: every script parses its arguments and
answers --help without torch; the FLM-Audio and Voila checks say SKIP (exit 0) when
their upstream code is absent; the `launch.gpu_step` block the scripts print
(bench/gpu_step_block.py) pasted into a real model spec loads through the spec loader and
reaches the packing (`StepCost.of_spec`), and a wrong block is refused. Where the upstream
trees and their transformers 4.51.3 are here (bench/gpu_carry.sh builds .gpu-carry/, or
DUPLEXEVAL_FLM_AUDIO_SRC / DUPLEXEVAL_VOILA_SRC name them; GPU_CHECK_DEPS or
DUPLEXEVAL_FLM_AUDIO_DEPS names a `pip --target` folder of the pins), the FLM-Audio and Voila --tiny
dry runs run end to end on the CPU and their printed block is checked the same way; else
those two tests skip, saying why.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
SCRIPTS = ("gpu_check_moshi.py", "gpu_check_vocalnet.py", "gpu_check_flm_audio.py", "gpu_check_voila.py")
CARRY = ROOT / ".gpu-carry"

sys.path.insert(0, str(BENCH))
import gpu_step_block  # noqa: E402

from duplexeval.executors.packing import StepCost  # noqa: E402
from duplexeval.specs.loader import SpecErrors, load_spec  # noqa: E402


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _module(name: str):
    spec = importlib.util.spec_from_file_location(name.removesuffix(".py"), BENCH / name)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_gpu_check_answers_help_with_its_tiny_option(script):
    got = subprocess.run([sys.executable, str(BENCH / script), "--help"], capture_output=True, text=True,
                         timeout=60, env=_env())
    assert got.returncode == 0, got.stderr
    assert "--tiny" in got.stdout


@pytest.mark.parametrize("script", ["gpu_check_flm_audio.py", "gpu_check_voila.py"])
def test_flm_audio_and_voila_parse_their_arguments_and_skip_without_upstream(script, tmp_path, capsys):
    module = _module(script)
    args = module.build_parser().parse_args(["--tiny", "--upstream", str(tmp_path), "--frames", "3"])
    assert args.tiny and args.frames == 3 and args.upstream == tmp_path
    assert module.main(["--tiny", "--upstream", str(tmp_path / "absent")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("SKIP") and "absent" in out


def _spec_with(gpu_step_yaml: str, tmp_path: Path, model: str = "flm-audio") -> Path:
    """specs/models/<model>.yaml with the printed block pasted under `launch:`, as the lead would."""
    for name in (f"{model}.yaml", "_gpu-image.yaml"):
        shutil.copy(ROOT / "specs" / "models" / name, tmp_path / name)
    path = tmp_path / f"{model}.yaml"
    text = path.read_text()
    assert "\nlaunch:\n" in text and "gpu_step" not in text
    path.write_text(text.replace("\nlaunch:\n", "\nlaunch:\n" + gpu_step_yaml + "\n", 1))
    return path


def test_a_printed_block_loads_in_a_model_spec_and_reaches_the_packing(tmp_path, capsys):
    ok = gpu_step_block.print_block("flm-audio", "gpu_check_flm_audio.py", steps=[(1, 41.26)], gpu="H200",
                                    memory_gb=17.93, what="a test block", date="2026-12-04")
    out = capsys.readouterr().out
    assert ok and "FAIL" not in out
    block = out.split("\n", 1)[1]
    spec = load_spec(_spec_with(block, tmp_path), "model")
    step = spec.data["launch"]["gpu_step"]
    assert step["steps"] == [[1, 41.3]] and step["memory_gb"] == 17.9 and step["gpu"] == "H200"
    assert step["source"].startswith("bench/gpu_check_flm_audio.py on one H200, 2026-12-04, a test block")
    cost = StepCost.of_spec(spec.data)
    assert cost.step_at(1) == 41.3 and cost.kind == "measured" and cost.memory_gb == 17.9 and cost.frame_ms == 80


def test_a_servers_block_renders_and_validates(tmp_path):
    step = gpu_step_block.block("gpu_check_vocalnet.py", servers=6, gpu="H200", memory_gb=16.3, what="w")
    assert gpu_step_block.errors(step) == []
    parsed = yaml.safe_load("launch:\n" + gpu_step_block.render(step))["launch"]["gpu_step"]
    assert parsed == step


@pytest.mark.parametrize("bad, where", [
    (dict(steps=[(0, 20.0)]), "steps/0/0"),   # no session
    (dict(steps=[(1, 0.0)]), "steps/0/1"),    # a step of no time
    (dict(), "gpu_step"),                     # neither steps nor servers
])
def test_a_wrong_block_is_refused_by_the_schema_and_by_the_spec_loader(bad, where, tmp_path, capsys):
    step = gpu_step_block.block("gpu_check_x.py", gpu="H200", what="w", **bad)
    problems = gpu_step_block.errors(step)
    assert problems and any(p.startswith(where) for p in problems), problems
    with pytest.raises(SpecErrors):
        load_spec(_spec_with(gpu_step_block.render(step), tmp_path), "model")
    assert not gpu_step_block.print_block("flm-audio", "gpu_check_x.py", gpu="H200", what="w", **bad)
    assert "FAIL gpu_step block" in capsys.readouterr().out


def _deps() -> Path | None:
    """A folder holding transformers 4.51.3 (GPU_CHECK_DEPS, or tests/test_family_upstream.py's
    DUPLEXEVAL_FLM_AUDIO_DEPS), None when there is none."""
    for name in ("GPU_CHECK_DEPS", "DUPLEXEVAL_FLM_AUDIO_DEPS"):
        folder = os.environ.get(name)
        if folder and list(Path(folder).glob("transformers-4.51.3.dist-info")):
            return Path(folder)
    return None


@pytest.mark.parametrize("script, model, variable", [
    ("gpu_check_flm_audio.py", "flm-audio", "DUPLEXEVAL_FLM_AUDIO_SRC"),
    ("gpu_check_voila.py", "voila", "DUPLEXEVAL_VOILA_SRC"),
])
def test_the_tiny_dry_run_runs_and_prints_a_block_a_spec_accepts(script, model, variable, tmp_path):
    upstream = Path(os.environ.get(variable) or CARRY / "upstream" / model)
    if not upstream.is_dir():
        pytest.skip(f"no upstream tree at {upstream} ({variable}, or sh bench/gpu_carry.sh builds .gpu-carry/)")
    deps = _deps()
    if deps is None:
        pytest.skip("no transformers 4.51.3: set GPU_CHECK_DEPS to a `pip install --no-deps --target` folder "
                    "of .gpu-carry/wheels' transformers, tokenizers and huggingface_hub")
    got = subprocess.run([sys.executable, str(BENCH / script), "--tiny", "--upstream", str(upstream), "--deps",
                          str(deps), "--frames", "4", "--fork-frames", "2"], capture_output=True, text=True,
                         timeout=300, env=_env())
    assert got.returncode == 0, got.stdout + got.stderr
    assert re.search(r"^PASS fork", got.stdout, re.M), got.stdout
    block = got.stdout.split("(paste under `launch:`):\n", 1)[1].split("\n    source:", 1)
    gpu_step = block[0] + "\n    source:" + block[1].split("\n", 1)[0]
    spec = load_spec(_spec_with(gpu_step, tmp_path, model), "model")
    assert spec.data["launch"]["gpu_step"]["gpu"] == "CPU (tiny dry run)"
