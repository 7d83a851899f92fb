"""The papers' ASR/TTS models as specs: weights from the weights cache, validate, ls, ids, circles.

No model runs here (tests/test_whisper_timestamped.py and tests/test_qwen3_asr.py run the
real code paths on random tiny models); this is the plumbing around them.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from duplexeval import weights as w
from duplexeval.cli import cli
from duplexeval.judges import asr, local_models
from duplexeval.specs import Registry, repo_root
from duplexeval.specs.errors import SpecErrors


def test_faster_whisper_cache_key_is_unchanged_by_the_new_backends():
    """The embedded suite's transcripts keep their keys: the new backends' fields stay out
    of faster-whisper's key. It changed once, on purpose, when the features were made
    independent of the BLAS threads (tests/test_asr_features.py); without that tag it is
    the key computed with the code before issue 17."""
    components = asr.cache_components(np.zeros(16000, np.float32), asr._normalise_spec({}))
    assert "packages" not in components
    assert asr.sha256_json(components) == "0342b05cb6e0973ec8be0c4f67ab75c5e14e6540c8d832c8cb75048abc9e1e6b"
    del components["features"]
    assert asr.sha256_json(components) == "7d660d76beff86ebc22e16a301d27723bdc83f654f39c336e742e170945f720c"


def test_paper_suites_resolve_to_real_backends():
    reg = Registry.load()
    mpe = reg.get("benchmark", "mpe-explicit").data["asr"]
    mtr = reg.get("benchmark", "mtr-quality").data["asr"]
    assert (mpe["backend"], mpe["model"], mpe["options"]["forced_aligner"]) == (
        "qwen3-asr", "Qwen/Qwen3-ASR-1.7B", "Qwen/Qwen3-ForcedAligner-0.6B")
    assert (mtr["backend"], mtr["model"]) == ("whisper-timestamped", "medium.en")
    # The MTR public code's whisper_timestamped.transcribe settings (Eval/asr_incremental_save.py).
    assert {k: mtr["options"][k] for k in ("beam_size", "best_of", "temperature", "vad", "detect_disfluencies")} == {
        "beam_size": 5, "best_of": 5, "temperature": [0.0, 0.2, 0.4, 0.6, 0.8, 1.0], "vad": False,
        "detect_disfluencies": False}
    for task, provider, model in (("asr", "qwen3-asr", mpe["model"]), ("forced-alignment", "qwen3-asr", mpe["options"]["forced_aligner"]),
                                  ("asr", "whisper-timestamped", mtr["model"])):
        assert local_models.find_spec(task, provider, model) is not None
    tts = reg.get("suite", "paper-mpe").data["tts"]
    assert tts["backend"] == "qwen3-tts" and set(tts["voices"]) == {"A", "B", "C", "D", "preamble"}
    assert local_models.find_spec("tts", "qwen3-tts", tts["model"]) is not None
    assert "tts" not in reg.get("suite", "embedded").data  # the embedded suite keeps flite ...
    assert reg.get("suite", "embedded").data["overrides"]["asr"]["backend"] == "faster-whisper"  # ... and tiny.en


def test_validate_and_ls_show_weights_status(tmp_path, monkeypatch):
    monkeypatch.setenv("DUPLEXEVAL_WEIGHTS_CACHE", str(tmp_path))
    out = CliRunner().invoke(cli, ["validate"])
    assert out.exit_code == 0 and out.output.startswith("ok: ")
    assert "weights not fetched asr-qwen3-asr-1.7b" in out.output
    assert "duplexeval weights fetch tts-qwen3-tts-1.7b-customvoice" in out.output
    assert "weights not placed  asr-whisper-timestamped-medium-en" in out.output
    listing = CliRunner().invoke(cli, ["ls", "judges"])
    row = next(line for line in listing.output.splitlines() if line.strip().startswith("asr-qwen3-asr-1.7b"))
    assert "not fetched" in row and "qwen3-asr" in row
    llm = next(line for line in listing.output.splitlines() if line.strip().startswith("mpe-answer-claude"))
    assert " - " in llm


def _hub_spec(tmp_path, files: dict[str, bytes]):
    """A qwen3-asr spec whose pinned files are placed by hand (no hub needed when all are present)."""
    spec = Registry.load().get("judge", "asr-qwen3-asr-1.7b")
    data = json.loads(json.dumps(spec.data))
    data["weights"]["files"] = [{"path": name} for name in files]
    folder = tmp_path / data["id"] / data["weights"]["revision"]
    folder.mkdir(parents=True)
    for name, content in files.items():
        (folder / name).write_bytes(content)
    return data, folder


def test_hub_weights_verify_through_the_weights_cache_manifest(tmp_path, monkeypatch):
    monkeypatch.setenv("DUPLEXEVAL_WEIGHTS_CACHE", str(tmp_path))
    data, folder = _hub_spec(tmp_path, {"config.json": b"{}", "model.safetensors": b"weights"})
    assert local_models.weights_status(data) == "not fetched"  # files but no manifest: never verified
    with pytest.raises(local_models.MissingWeightsError, match="no manifest"):
        local_models.spec_weights(data)
    w.fetch(data, tmp_path)  # every file present: hashes them, writes the manifest, no download
    got = local_models.spec_weights(data)
    assert got.folder == folder and got.spec_id == "asr-qwen3-asr-1.7b" and local_models.weights_status(data) == "verified"
    (folder / "model.safetensors").write_bytes(b"changed")
    assert local_models.weights_status(data) == "changed"
    with pytest.raises(local_models.MissingWeightsError, match="model.safetensors: changed"):
        local_models.spec_weights(data)


def test_asr_config_and_id_name_backend_model_and_options():
    config = asr.asr_config({"options": {"beam_size": 1}})
    assert config["backend"] == "faster-whisper" and config["options"]["beam_size"] == 1
    assert config["weights_sha256"] and config["weights"] is None  # bundled, sha256-pinned
    assert asr.asr_id({}).startswith("faster-whisper:tiny.en:")
    assert asr.asr_id({}) != asr.asr_id({"options": {"beam_size": 1}})


def test_missing_paper_weights_fail_before_any_audio(tmp_path, monkeypatch):
    monkeypatch.setenv("DUPLEXEVAL_WEIGHTS_CACHE", str(tmp_path))
    mtr = Registry.load().get("benchmark", "mtr-quality").data["asr"]
    with pytest.raises(local_models.MissingWeightsError, match=r"medium\.en\.pt: missing[\s\S]*d7440d1d"):
        asr.asr_config(mtr)


def _tree(tmp_path):
    """A copy of the spec tree to break on purpose."""
    import shutil

    root = tmp_path / "specs"
    shutil.copytree(repo_root() / "specs", root)
    return root


def test_validate_refuses_asr_and_tts_selections_without_a_spec(tmp_path):
    root = _tree(tmp_path)
    mtr = root / "benchmarks" / "_mtr-base.yaml"
    mtr.write_text(mtr.read_text().replace("model: medium.en ", "model: large-v9 "))
    suite = root / "suites" / "paper-mpe.yaml"
    suite.write_text(suite.read_text().replace("A: Ryan", "A: Siri"))
    with pytest.raises(SpecErrors) as err:
        Registry.load(root)
    text = str(err.value)
    assert "_mtr-base.yaml" in text and "asr.model" in text and "large-v9" in text
    assert "paper-mpe.yaml" in text and "tts.voices.A" in text and "'Siri'" in text


def test_a_judge_role_cannot_name_a_perception_model(tmp_path):
    root = _tree(tmp_path)
    bench = root / "benchmarks" / "_mpe-base.yaml"
    bench.write_text(bench.read_text().replace("answer: mpe-answer-claude", "answer: asr-qwen3-asr-1.7b"))
    with pytest.raises(SpecErrors, match="not a verdict judge"):
        Registry.load(root)


@pytest.mark.parametrize("module,forbidden", [
    ("duplexeval.judges.asr_backends", "duplexeval.judges.asr"),
    ("duplexeval.judges.asr_backends.whisper_timestamped_backend", "duplexeval.judges.asr"),
    ("duplexeval.judges.offline", "duplexeval.judges.llm"),
])
def test_the_judges_package_has_no_import_circles(module, forbidden):
    """Issue 13, item 15: backends do not import asr.py, offline.py does not import llm.py."""
    code = f"import sys, {module}; print({forbidden!r} in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=repo_root(), check=True)
    assert out.stdout.strip() == "False"
