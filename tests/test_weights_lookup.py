"""Which spec `duplexeval weights MODEL` means: one lookup (duplexeval.specs.registry.load_weights_spec).

Models first, then the local ASR/TTS/aligner models of specs/judges/perception/, in every
spec tree ($DUPLEXEVAL_SPECS folders, then the bundle's); an unknown id is exit 2 with a
"did you mean" over both folders.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from duplexeval.cli import cli
from duplexeval.specs import SPECS_ENV, UnknownSpecError, specs_root
from duplexeval.specs.registry import load_weights_spec


def test_a_model_and_a_perception_model_are_both_found():
    assert load_weights_spec("moshi").path == specs_root() / "models" / "moshi.yaml"
    spec = load_weights_spec("asr-qwen3-asr-1.7b")
    assert spec.path == specs_root() / "judges" / "perception" / "asr-qwen3-asr-1.7b.yaml"
    assert spec.kind == "judge"


def test_unknown_id_suggests_from_models_and_perception():
    with pytest.raises(UnknownSpecError) as models:
        load_weights_spec("mosh")
    assert "moshi" in str(models.value)
    with pytest.raises(UnknownSpecError) as perception:
        load_weights_spec("asr-qwen3-asr-1.8b")
    assert "asr-qwen3-asr-1.7b" in str(perception.value)


def test_a_spec_of_an_extra_spec_folder_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "models").mkdir()
    base = specs_root() / "models" / "_reference-agent.yaml"
    (tmp_path / "models" / base.name).write_text(base.read_text())
    text = (specs_root() / "models" / "silent.yaml").read_text()
    (tmp_path / "models" / "my-silent.yaml").write_text(text.replace("id: silent", "id: my-silent", 1))
    monkeypatch.setenv(SPECS_ENV, str(tmp_path))
    assert load_weights_spec("my-silent").path == tmp_path / "models" / "my-silent.yaml"


def test_cli_unknown_id_is_exit_2_with_did_you_mean():
    result = CliRunner().invoke(cli, ["weights", "path", "moshii"])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert "did you mean" in result.output and "moshi" in result.output


def test_cli_path_of_a_perception_model_without_cache_is_a_weights_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("DUPLEXEVAL_WEIGHTS_CACHE", str(tmp_path))
    result = CliRunner().invoke(cli, ["weights", "path", "asr-qwen3-asr-1.7b"])
    assert "Traceback" not in result.output
    assert result.exit_code == 2, result.output
    assert "did you mean" not in result.output  # found: the error is about its weights, not its id
