"""The spec loader: each schema rule broken on purpose, with file, line and field named."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from duplexeval.cli import cli
from duplexeval.specs import Registry, SpecErrors, UnknownSpecError, load_spec, repo_root

GOOD_MODEL = """\
kind: model
id: {id}
name: Test model
status: runnable
duplex: full
launch:
  backend: local
  command: ["{{python}}", "-m", "x"]
audio:
  in_rate: 16000
  out_rate: 16000
  frame_ms: 80
clocks: [lockstep]
capabilities: []
weights:
  source: none
license:
  code: MIT
  weights: none
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def errors_of(path: Path) -> list[str]:
    with pytest.raises(SpecErrors) as info:
        load_spec(path)
    return [str(e) for e in info.value.errors]


def line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def test_every_spec_in_the_repository_is_valid():
    registry = Registry.load()
    assert {"silent", "babbler", "oracle", "cascade", "moshi", "freeze-omni", "minicpm-o-4.5",
            "voila", "flm-audio", "vocalnet", "cascaded-baseline"} <= set(registry.specs["model"])
    assert {"mpe-explicit", "mpe-implicit", "mtr-quality", "mtr-instruction", "mtr-safety",
            "mtr-combo-sipb"} <= set(registry.specs["benchmark"])
    assert {"embedded", "paper-mpe", "paper-mtr"} <= set(registry.specs["suite"])


def test_valid_model_loads(tmp_path):
    spec = load_spec(write(tmp_path / "ok.yaml", GOOD_MODEL.format(id="ok")))
    assert spec.kind == "model" and spec.id == "ok" and len(spec.sha256) == 64


def test_missing_field_names_file_line_and_field(tmp_path):
    text = GOOD_MODEL.format(id="m").replace("audio:\n  in_rate: 16000\n  out_rate: 16000\n  frame_ms: 80\n", "")
    path = write(tmp_path / "m.yaml", text)
    [error] = errors_of(path)
    assert error.endswith("m.yaml:1: audio: required field is missing")


def test_missing_nested_field_points_at_its_parent_line(tmp_path):
    path = write(tmp_path / "m.yaml", GOOD_MODEL.format(id="m").replace("  frame_ms: 80\n", ""))
    [error] = errors_of(path)
    assert f":{line_of(path, 'audio:')}: audio.frame_ms: required field is missing" in error


def test_wrong_type_names_line_and_field(tmp_path):
    path = write(tmp_path / "m.yaml", GOOD_MODEL.format(id="m").replace("frame_ms: 80", "frame_ms: fast"))
    [error] = errors_of(path)
    assert f"m.yaml:{line_of(path, 'frame_ms')}: audio.frame_ms: 'fast' is not of type 'number'" in error


def test_unknown_key_is_an_error_with_a_suggestion(tmp_path):
    path = write(tmp_path / "m.yaml", GOOD_MODEL.format(id="m").replace("  backend: local\n", "  backend: local\n  gpu: 1\n"))
    [error] = errors_of(path)
    assert f"m.yaml:{line_of(path, 'gpu: 1')}: launch.gpu: unknown key (did you mean 'gpus'?)" in error


def test_bad_yaml_names_the_line(tmp_path):
    path = write(tmp_path / "m.yaml", GOOD_MODEL.format(id="m").replace("clocks: [lockstep]", "clocks: [lockstep"))
    [error] = errors_of(path)
    assert "m.yaml:" in error and "invalid YAML" in error
    line = int(error.split("m.yaml:")[1].split(":")[0])
    assert line_of(path, "clocks:") <= line <= line_of(path, "clocks:") + 2


def test_duplicate_key_is_an_error_not_silently_last_wins(tmp_path):
    path = write(tmp_path / "m.yaml", GOOD_MODEL.format(id="m") + "status: planned\n")
    [error] = errors_of(path)
    assert f"m.yaml:{line_of(path, 'status: planned')}: status: duplicate key (first defined on line 4)" in error


def test_include_cycle_is_an_error(tmp_path):
    write(tmp_path / "_a.yaml", "include: _b.yaml\nkind: model\n")
    write(tmp_path / "_b.yaml", "include: _a.yaml\n")
    path = write(tmp_path / "m.yaml", "include: _a.yaml\nid: m\n")
    [error] = errors_of(path)
    assert "include cycle: m.yaml -> _a.yaml -> _b.yaml -> _a.yaml" in error
    assert error.split(": include:")[0].endswith("_b.yaml:1")


def test_self_include_is_a_cycle(tmp_path):
    path = write(tmp_path / "m.yaml", "include: m.yaml\nid: m\n")
    assert "include cycle" in errors_of(path)[0]


def test_missing_include_names_the_including_line(tmp_path):
    path = write(tmp_path / "m.yaml", "id: m\ninclude: _nope.yaml\n")
    [error] = errors_of(path)
    assert "m.yaml:2: include: '_nope.yaml' not found" in error


def test_including_file_wins_and_lists_are_replaced(tmp_path):
    base = GOOD_MODEL.format(id="base").replace("id: base\n", "")
    write(tmp_path / "_base.yaml", base.replace("clocks: [lockstep]", "clocks: [lockstep, realtime]"))
    path = write(tmp_path / "m.yaml", "include: _base.yaml\nid: m\nclocks: [realtime]\naudio:\n  frame_ms: 40\n")
    spec = load_spec(path)
    assert spec.data["clocks"] == ["realtime"]
    assert spec.data["audio"] == {"in_rate": 16000, "out_rate": 16000, "frame_ms": 40}
    assert spec.where("audio", "frame_ms")[0].name == "m.yaml"
    assert spec.where("audio", "in_rate")[0].name == "_base.yaml"


def test_error_in_a_base_file_points_at_the_base_file(tmp_path):
    base = GOOD_MODEL.format(id="base").replace("id: base\n", "").replace("frame_ms: 80", "frame_ms: -1")
    write(tmp_path / "_base.yaml", base)
    [error] = errors_of(write(tmp_path / "m.yaml", "include: _base.yaml\nid: m\n"))
    assert f"_base.yaml:{line_of(tmp_path / '_base.yaml', 'frame_ms')}: audio.frame_ms:" in error


def test_id_must_match_file_name(tmp_path):
    [error] = errors_of(write(tmp_path / "m.yaml", GOOD_MODEL.format(id="other")))
    assert "m.yaml:2: id: 'other' must equal the file name 'm'" in error


def test_unknown_kind_is_reported(tmp_path):
    [error] = errors_of(write(tmp_path / "m.yaml", "kind: modle\nid: m\n"))
    assert "m.yaml:1: kind: 'modle'; must be one of model, benchmark, judge, suite" in error


def make_tree(tmp_path: Path) -> Path:
    # Specs refer to images/ and golden/ beside them: copy the three folders together.
    for name in ("specs", "images", "golden"):
        shutil.copytree(repo_root() / name, tmp_path / name)
    return tmp_path / "specs"


def test_unknown_reference_suggests_a_close_name(tmp_path):
    root = make_tree(tmp_path)
    suite = root / "suites" / "embedded.yaml"
    text = suite.read_text()
    assert "models: [silent, oracle]" in text
    suite.write_text(text.replace("models: [silent, oracle]", "models: [silnet, oracle]", 1))
    with pytest.raises(SpecErrors) as info:
        Registry.load(root)
    [error] = [str(e) for e in info.value.errors]
    assert f"embedded.yaml:{line_of(suite, 'silnet')}: runs[3].models[0]: no model spec named 'silnet'; did you mean 'silent'" in error


def test_spec_in_the_wrong_folder_is_an_error(tmp_path):
    root = make_tree(tmp_path)
    write(root / "judges" / "stray.yaml", GOOD_MODEL.format(id="stray"))
    with pytest.raises(SpecErrors) as info:
        Registry.load(root)
    assert any("kind: 'model' spec in the judges/ folder" in str(e) for e in info.value.errors)


def test_yml_file_is_not_silently_skipped(tmp_path):
    root = make_tree(tmp_path)
    write(root / "models" / "extra.yml", GOOD_MODEL.format(id="extra"))
    with pytest.raises(SpecErrors) as info:
        Registry.load(root)
    assert any("extra.yml:1" in str(e) and ".yaml, not .yml" in str(e) for e in info.value.errors)


def test_registry_get_suggests_close_names():
    with pytest.raises(UnknownSpecError, match="did you mean 'mpe-explicit'"):
        Registry.load().get("benchmark", "mpe-explicti")


def test_mpe_parameters_come_from_the_paper():
    spec = Registry.load().get("benchmark", "mpe-implicit").data
    assert spec["scheduler"] == {"turn_gap_s": 0.5, "yield_silence_s": 2.0, "max_wait_s": 60.0, "n4_gap_s": 3.0,
                                 "after_t": "hold-start-window"}  # the reading the published counts allow
    assert (spec["vad"]["min_speech_ms"], spec["vad"]["merge_gap_ms"]) == (120, 800)
    assert spec["metrics"]["start"]["window_s"] == 5.0
    assert spec["metrics"]["stop"] == {"deadline_s": 2.0, "tail_s": 0.5, "min_eligible": 30, "restart": "fails"}
    assert spec["condition"] == "implicit"


def test_cli_validate_exits_1_and_prints_file_line_field(tmp_path):
    bad = write(tmp_path / "m.yaml", GOOD_MODEL.format(id="m").replace("frame_ms: 80", "frame_ms: fast"))
    result = CliRunner().invoke(cli, ["validate", str(bad)])
    assert result.exit_code == 1
    assert f"m.yaml:{line_of(bad, 'frame_ms')}: audio.frame_ms:" in result.output
    assert "Traceback" not in result.output


def test_cli_validate_accepts_the_repository():
    result = subprocess.run([sys.executable, "-m", "duplexeval.cli", "validate"], capture_output=True, text=True, cwd=repo_root())
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok: ")


def test_cli_ls_models_shows_status():
    result = CliRunner().invoke(cli, ["ls", "models"])
    assert result.exit_code == 0
    row = next(line for line in result.output.splitlines() if line.strip().startswith("moshi"))
    assert "needs-gpu-image" in row and "24000/24000" in row


@pytest.mark.parametrize("command", [[], ["validate"], ["ls"]])
def test_help_on_every_command(command):
    result = CliRunner().invoke(cli, [*command, "--help"])
    assert result.exit_code == 0 and "Usage:" in result.output


def test_libyaml_and_the_python_loader_give_the_same_specs_and_lines(monkeypatch):
    from duplexeval.specs import yaml_source

    assert yaml_source._FastLoader is not None  # PyYAML built with libyaml: the fast path is taken
    files = sorted((repo_root() / "specs").rglob("*.yaml"))
    fast = [yaml_source.load_yaml(f) for f in files]
    monkeypatch.setattr(yaml_source, "_FastLoader", None)
    assert [yaml_source.load_yaml(f) for f in files] == fast
