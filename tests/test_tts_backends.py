"""TTS selectable per suite: flite stays the default, Qwen3-TTS pins a voice per speaker.

qwen-tts cannot load here (it imports torchaudio, which does not load beside the CPU torch
2.13.0), so the Qwen3-TTS adapter is exercised against a STAND-IN for the `qwen_tts`
module that records its calls and returns a tone per speaker: these tests check our side
(voice pinning, per-clip seeds, resampling, the content-hash cache, the errors), not
qwen-tts. Its real code path is checked in the harness image (images/harness/check.py).
"""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from duplexeval import tts
from duplexeval.benchmarks.mpe.scenes.loader import load_scenes
from duplexeval.benchmarks.mpe.scenes.render import render_turns
from duplexeval.judges.local_models import MissingExtraError, MissingWeightsError
from duplexeval.specs import repo_root
from duplexeval.tts_backends import qwen3_tts

VOICES = {"A": "Ryan", "B": "Vivian", "C": "Aiden", "D": "Serena", "preamble": "Eric"}


class StandInQwen3TTSModel:
    """Records generate_custom_voice calls; 0.25 s of a tone whose pitch names the speaker, at 24 kHz."""

    calls: list[dict] = []
    loads: list[dict] = []

    @classmethod
    def from_pretrained(cls, path, **kwargs):
        cls.loads.append({"path": path, **kwargs})
        return cls()

    def generate_custom_voice(self, text, speaker, language=None, instruct=None, **kwargs):
        import torch

        self.calls.append({"text": text, "speaker": speaker, "language": language, "instruct": instruct,
                           "noise": float(torch.rand(1)), **kwargs})
        pitch = 100 + 20 * sorted(VOICES.values()).index(speaker)
        t = np.arange(6000) / 24000
        return [(0.3 * np.sin(2 * np.pi * pitch * t)).astype(np.float32)], 24000


@pytest.fixture
def stand_in(monkeypatch, tmp_path):
    module = types.ModuleType("qwen_tts")
    module.Qwen3TTSModel = StandInQwen3TTSModel
    monkeypatch.setitem(sys.modules, "qwen_tts", module)
    monkeypatch.setattr(qwen3_tts, "_models", {})
    StandInQwen3TTSModel.calls, StandInQwen3TTSModel.loads = [], []
    model_dir = tmp_path / "tiny-tts"
    model_dir.mkdir()
    (model_dir / "config.json").write_text("{}")
    return {"backend": "qwen3-tts", "model": str(model_dir), "language": "English", "voices": VOICES,
            "options": {"seed": 0}}


def test_no_tts_block_is_flite_with_the_same_clip(tmp_path):
    plain = tts.synthesize("Nine dollars a head.", "slt", 16000, cache_dir=tmp_path)
    explicit = tts.synthesize("Nine dollars a head.", "slt", 16000, cache_dir=tmp_path, tts={"backend": "flite"},
                              speaker="A")
    assert np.array_equal(plain, explicit) and len(list(tmp_path.glob("*/*.wav"))) == 1


def test_qwen3_tts_pins_each_speakers_voice_and_caches_by_content(stand_in, tmp_path):
    a = tts.synthesize("Hello there.", "slt", 16000, cache_dir=tmp_path, tts=stand_in, speaker="A")
    b = tts.synthesize("Hello there.", "slt", 16000, cache_dir=tmp_path, tts=stand_in, speaker="B")
    assert [c["speaker"] for c in StandInQwen3TTSModel.calls] == ["Ryan", "Vivian"]
    assert StandInQwen3TTSModel.calls[0]["language"] == "English"
    assert StandInQwen3TTSModel.calls[0]["do_sample"] is True and StandInQwen3TTSModel.calls[0]["top_k"] == 50
    assert len(a) == 4000 and not np.array_equal(a, b)  # 0.25 s resampled 24 kHz -> 16 kHz; two voices
    again = tts.synthesize("Hello there.", "slt", 16000, cache_dir=tmp_path, tts=stand_in, speaker="A")
    assert np.array_equal(a, again) and len(StandInQwen3TTSModel.calls) == 2  # a cache hit: no synthesis
    assert len(StandInQwen3TTSModel.loads) == 1 and StandInQwen3TTSModel.loads[0]["device_map"] == "cpu"


def test_each_clip_has_its_own_seed_whatever_the_order(stand_in, tmp_path):
    for text in ("one", "two"):
        tts.synthesize(text, "slt", 16000, cache_dir=tmp_path / "x", tts=stand_in, speaker="A")
    for text in ("two", "one"):
        tts.synthesize(text, "slt", 16000, cache_dir=tmp_path / "y", tts=stand_in, speaker="A")
    noise = {(c["text"], i // 2): c["noise"] for i, c in enumerate(StandInQwen3TTSModel.calls)}
    assert noise[("one", 0)] == noise[("one", 1)] and noise[("two", 0)] == noise[("two", 1)]


def test_the_cache_key_holds_model_voice_options_and_rate(stand_in):
    cfg = qwen3_tts.settings(stand_in)
    base = qwen3_tts.cache_components("Hi.", "Ryan", 16000, cfg, 1)
    assert base["weights_sha256"] and set(base["packages"]) == {"qwen-tts", "transformers", "torch"}
    other = qwen3_tts.cache_components("Hi.", "Ryan", 16000, qwen3_tts.settings({**stand_in, "options": {"seed": 1}}), 1)
    rate = qwen3_tts.cache_components("Hi.", "Ryan", 24000, cfg, 1)
    voice = qwen3_tts.cache_components("Hi.", "Aiden", 16000, cfg, 1)
    assert len({tts.clip_store().key(c) for c in (base, other, rate, voice)}) == 4


def test_render_turns_uses_the_suites_voices(stand_in, tmp_path):
    scene = load_scenes(repo_root() / "data/embedded/mpe/scenes")[0]
    rendered = render_turns(scene, "explicit", 16000, cache=tmp_path, tts=stand_in)
    speakers = [c["speaker"] for c in StandInQwen3TTSModel.calls]
    assert speakers[0] == "Eric"  # the preamble
    assert speakers[1:] == [VOICES[t.turn.speaker] for t in rendered.turns]


def test_unpinned_speaker_and_unknown_options_are_refused(stand_in, tmp_path):
    with pytest.raises(ValueError, match="pins no voice for speaker 'E'"):
        tts.synthesize("Hi.", "slt", 16000, cache_dir=tmp_path, tts=stand_in, speaker="E")
    with pytest.raises(ValueError, match="unknown qwen3-tts options"):
        tts.synthesize("Hi.", "slt", 16000, cache_dir=tmp_path, tts={**stand_in, "options": {"beam": 2}}, speaker="A")
    with pytest.raises(ValueError, match="unknown TTS backend"):
        tts.synthesize("Hi.", "slt", 16000, cache_dir=tmp_path, tts={"backend": "espeak"}, speaker="A")


def test_missing_weights_and_missing_package_name_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("DUPLEXEVAL_WEIGHTS_CACHE", str(tmp_path))
    paper = {"backend": "qwen3-tts", "model": "Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice", "voices": VOICES}
    with pytest.raises(MissingWeightsError, match="duplexeval weights fetch tts-qwen3-tts-1.7b-customvoice"):
        tts.synthesize("Hi.", "slt", 16000, cache_dir=tmp_path, tts=paper, speaker="A")
    try:
        import qwen_tts  # noqa: F401
    except (ImportError, OSError):
        pass
    else:
        pytest.skip("qwen-tts loads here")
    local = tmp_path / "model"
    local.mkdir()
    (local / "config.json").write_text("{}")
    with pytest.raises(MissingExtraError, match="images/harness"):
        tts.synthesize("Hi.", "slt", 16000, cache_dir=tmp_path, tts={**paper, "model": str(local)}, speaker="A")
