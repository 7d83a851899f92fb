"""The endpointer's rules come from the model spec (`endpointer:`), not from shim constants.

The harness carries the section to the shim as `$DUPLEXEVAL_ENDPOINTER` (in the launch
environment of every backend); the VocalNet shim builds its endpointer from it. The
spec's values equal the shim's defaults, so nothing recorded before changes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from duplexeval.shims.endpointer import ENV, Endpointer, rules_from_env, spec_env
from duplexeval.shims.vocalnet import VocalNetServer
from duplexeval.specs import SpecErrors, specs_root
from duplexeval.specs.modelspec import load_model_spec


class _NoModel:
    """Only what VocalNetServer's constructor touches (`set_audio_dir`); no turn reaches it here."""

    def set_audio_dir(self, audio_dir: str) -> None:
        self.audio_dir = audio_dir


def spec_tree(tmp_path: Path, edit: str = "") -> Path:
    """A spec tree holding a copy of vocalnet.yaml whose endpointer section ends with `edit`."""
    models = tmp_path / "specs" / "models"
    models.mkdir(parents=True)
    shutil.copy(specs_root() / "models" / "_gpu-image.yaml", models)
    text = (specs_root() / "models" / "vocalnet.yaml").read_text()
    if edit:
        text = text.replace("endpointer:\n", f"endpointer:\n{edit}\n", 1)
        text = _drop_repeated_keys(text, edit)
    (models / "vocalnet.yaml").write_text(text)
    # launch.build must exist in the tree's project folder
    shutil.copytree(specs_root().parent / "images" / "vocalnet", tmp_path / "images" / "vocalnet",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path / "specs"


def _drop_repeated_keys(text: str, edit: str) -> str:
    """The spec's own line of a key that `edit` sets (YAML would reject the duplicate)."""
    keys = {line.split(":")[0].strip() for line in edit.splitlines() if ":" in line}
    head, _, body = text.partition("endpointer:\n")
    lines = body.splitlines(keepends=True)
    n_edit = len(edit.splitlines())
    kept = lines[:n_edit] + [ln for ln in lines[n_edit:] if not (ln.startswith("  ") and ln.split(":")[0].strip() in keys)]
    return head + "endpointer:\n" + "".join(kept)


def shim_endpointer(env: dict[str, str], tmp_path: Path) -> Endpointer:
    server = VocalNetServer(_NoModel(), endpoint_rules=rules_from_env(env), workdir=str(tmp_path / "work"))
    return server.endpointer.endpointer


def push(ep: Endpointer, probs: list[float]) -> list[tuple[int, str]]:
    out = []
    for i, p in enumerate(probs):
        event = ep.push(np.zeros(4, dtype=np.float32), p)
        if event.started:
            out.append((i, "start"))
        if event.ended:
            out.append((i, f"end:{event.ended.reason}"))
    return out


def test_the_vocalnet_spec_carries_the_shim_defaults(tmp_path):
    spec = load_model_spec("vocalnet")
    assert ENV in spec.env
    from_spec, default = shim_endpointer(spec.env, tmp_path), Endpointer(0.08)
    for rule in ("threshold", "min_speech_s", "end_silence_s", "max_turn_s", "preroll_frames", "tail_frames"):
        assert getattr(from_spec, rule) == getattr(default, rule), rule


def test_silence_of_exactly_end_silence_ends_the_turn_one_frame_less_does_not(tmp_path):
    root = spec_tree(tmp_path, "  end_silence_s: 0.4")
    ep = shim_endpointer(load_model_spec("vocalnet", root).env, tmp_path)
    assert ep.end_silence_s == 0.4  # 5 frames of 80 ms, not the default's 10
    speech = [0.9] * 4  # 0.32 s >= min_speech_s 0.25: the turn starts at frame 3
    assert push(ep, speech + [0.0] * 4) == [(3, "start")]   # 4 silent frames: 0.32 s < 0.4 s
    assert push(ep, [0.0]) == [(0, "end:silence")]         # the 5th: exactly 0.4 s


def test_threshold_from_the_spec_is_inclusive(tmp_path):
    root = spec_tree(tmp_path, "  threshold: 0.7")
    ep = shim_endpointer(load_model_spec("vocalnet", root).env, tmp_path)
    assert push(ep, [0.69] * 10) == []
    assert push(ep, [0.7] * 4) == [(3, "start")]


@pytest.mark.parametrize("edit,field", [
    ("  end_silence_s: 0", "endpointer.end_silence_s"),
    ("  threshold: 1.5", "endpointer.threshold"),
    ("  min_speech_s: -0.1", "endpointer.min_speech_s"),
    ("  max_turn_s: fast", "endpointer.max_turn_s"),
    ("  min_silence_ms: 800", "endpointer"),
])
def test_a_bad_endpointer_value_is_a_schema_error_naming_the_field(tmp_path, edit, field):
    root = spec_tree(tmp_path, edit)
    with pytest.raises(SpecErrors) as exc:
        load_model_spec("vocalnet", root)
    text = str(exc.value)
    assert "vocalnet.yaml" in text and field in text, text
    if "min_silence_ms" in edit:
        assert "min_silence_ms" in text


def test_no_section_is_no_variable_and_the_defaults():
    assert spec_env({"id": "x"}) == {}
    assert rules_from_env({}) == {}


@pytest.mark.parametrize("value,words", [
    ("{not json", "not JSON"),
    ("[0.5]", "JSON object"),
    ('{"min_silence_ms": 800}', "unknown rule 'min_silence_ms'"),
    ('{"threshold": "high"}', "threshold must be a number"),
    ('{"threshold": true}', "threshold must be a number"),
])
def test_a_hand_set_variable_is_a_clear_error(value, words):
    with pytest.raises(ValueError, match=ENV) as exc:
        rules_from_env({ENV: value})
    assert words in str(exc.value)


def test_the_endpointer_refuses_values_the_schema_refuses():
    with pytest.raises(ValueError, match="threshold"):
        Endpointer(0.08, threshold=0)
    with pytest.raises(ValueError, match="end_silence_s"):
        Endpointer(0.08, end_silence_s=0)


def test_the_docker_backend_passes_the_section_to_the_container():
    from duplexeval.runner.backends.docker import run_kwargs

    spec = load_model_spec("vocalnet")
    env = run_kwargs(spec, "/tmp/sock", "s1")["environment"]
    assert rules_from_env(env) == {"threshold": 0.5, "min_speech_s": 0.25, "end_silence_s": 0.8,
                                   "preroll_s": 0.32, "tail_s": 0.2, "max_turn_s": 20.0}
