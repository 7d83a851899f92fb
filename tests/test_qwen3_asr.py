"""Qwen3-ASR (Duplex-MPE's ASR) on RANDOMLY INITIALISED tiny models.

qwen-asr's own model, processor and forced-aligner code (`Qwen3ASRModel.from_pretrained`,
`transcribe(..., return_time_stamps=True)`, `Qwen3ForcedAligner.align`) runs on CPU on a
tiny random Qwen3-ASR and a tiny random aligner written by `duplexeval.judges.tiny_models`
(no download). The text is meaningless; the tests assert the adapter's contract (word
order, times inside the clip, monotonic, empty audio -> empty transcript), the weights
identity in the cache key and the errors.

qwen-asr pins transformers==4.57.6 (huggingface-hub<1.0), which cannot live beside the
main lock (huggingface_hub 2.4), so these run in `.venv-qwen3` (`make qwen3-venv`; `make
test` runs them there, through tests/test_qwen3_venv.py) and skip in the main venv.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("qwen_asr", reason="qwen-asr lives in .venv-qwen3 (make qwen3-venv), not in the main venv")

from duplexeval.judges import asr  # noqa: E402
from duplexeval.judges.local_models import MissingWeightsError  # noqa: E402
from duplexeval.judges.tiny_models import write_tiny_qwen3_asr  # noqa: E402

RATE = 16000


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-qwen3")
    return (write_tiny_qwen3_asr(root / "asr", seed=0), write_tiny_qwen3_asr(root / "aligner", aligner=True, seed=1))


def _clip(seconds: float) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    return (0.2 * np.sin(2 * np.pi * 200 * t)).astype(np.float32)


def _spec(model, aligner=None, **options):
    return {"backend": "qwen3-asr", "model": str(model), "language": "en",
            "options": {"forced_aligner": str(aligner) if aligner else None, "max_new_tokens": 12, **options}}


def test_random_tiny_qwen3_asr_with_aligner_gives_ordered_words_inside_the_clip(tiny):
    model, aligner = tiny
    audio = _clip(2.0)
    result = asr.transcribe(audio, RATE, _spec(model, aligner), cache=False)
    assert result.backend == "qwen3-asr" and result.text
    assert result.words, "random output decodes to space-separated tokens, each aligned"
    assert [w.text for w in result.words] == [w.text for w in result.words if w.text]
    starts = [w.start for w in result.words]
    assert starts == sorted(starts)
    # The random aligner emits times far past the clip: the adapter clamps them inside.
    assert all(0.0 <= w.start <= w.end <= 2.0 for w in result.words)


def test_without_aligner_there_is_text_and_no_words(tiny):
    model, _ = tiny
    result = asr.transcribe(_clip(1.0), RATE, _spec(model), cache=False)
    assert result.text and result.words == []


def test_empty_audio_gives_an_empty_transcript(tiny):
    model, aligner = tiny
    result = asr.transcribe(np.zeros(0, np.float32), RATE, _spec(model, aligner), cache=False)
    assert result.text == "" and result.words == []


def test_cache_key_names_model_aligner_and_packages(tiny, tmp_path):
    model, aligner = tiny
    audio = _clip(1.0)
    with_aligner = asr.cache_components(audio, asr._normalise_spec(_spec(model, aligner)))
    assert with_aligner["packages"]["transformers"] == "4.57.6"
    assert with_aligner["options"]["forced_aligner_sha256"] and with_aligner["options"]["dtype"] == "float32"
    without = asr.cache_components(audio, asr._normalise_spec(_spec(model)))
    other = write_tiny_qwen3_asr(tmp_path / "other", seed=7)
    reseeded = asr.cache_components(audio, asr._normalise_spec(_spec(other, aligner)))
    assert len({asr.sha256_json(c) for c in (with_aligner, without, reseeded)}) == 3
    assert asr.asr_id(_spec(model, aligner)).startswith("qwen3-asr:")


def test_second_call_is_a_cache_hit(tiny, tmp_path, monkeypatch):
    from duplexeval.judges.asr_backends import qwen3_asr_backend as qb

    model, aligner = tiny
    first = asr.transcribe(_clip(1.0), RATE, _spec(model, aligner), cache_dir=tmp_path)
    monkeypatch.setattr(qb.Qwen3AsrBackend, "transcribe", lambda *a, **k: pytest.fail("ran on a hit"))
    second = asr.transcribe(_clip(1.0), RATE, _spec(model, aligner), cache_dir=tmp_path)
    assert second.from_cache and second == first


def test_the_paper_model_without_fetched_weights_names_the_spec_and_the_command(monkeypatch, tmp_path):
    monkeypatch.setenv("DUPLEXEVAL_WEIGHTS_CACHE", str(tmp_path))
    with pytest.raises(MissingWeightsError, match=r"asr-qwen3-asr-1\.7b[\s\S]*duplexeval weights fetch asr-qwen3-asr-1\.7b"):
        asr.transcribe(_clip(0.5), RATE, {"backend": "qwen3-asr", "model": "Qwen/Qwen3-ASR-1.7B"}, cache=False)


def test_unknown_options_are_refused(tiny):
    model, _ = tiny
    with pytest.raises(ValueError, match="unknown qwen3-asr options"):
        asr.transcribe(_clip(0.5), RATE, _spec(model, beam_size=5), cache=False)
