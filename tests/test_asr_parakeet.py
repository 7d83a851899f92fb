"""The parakeet-tdt ASR backend (Full-Duplex-Bench's published ASR) on a random tiny TDT model, through NeMo.

Runs in .venv-parakeet (`make parakeet-venv`; tests/test_asr_parakeet_venv.py drives it
from the main suite); in a venv without NeMo the tests here skip, and
test_asr_parakeet_venv.py checks instead that the backend refuses with what to install.
The model is built from a config with random weights (duplexeval.judges.tiny_parakeet):
the words mean nothing, but NeMo's real restore, decode and word-timing code runs.
"""

from __future__ import annotations

import numpy as np
import pytest

nemo = pytest.importorskip("nemo.collections.asr", reason="NeMo is not installed here (make parakeet-venv)")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from duplexeval.judges.tiny_parakeet import write_tiny_parakeet

    return write_tiny_parakeet(tmp_path_factory.mktemp("parakeet") / "tiny.nemo")


def noise(seconds: float, seed: int = 0) -> np.ndarray:
    return (0.1 * np.random.default_rng(seed).standard_normal(int(16000 * seconds))).astype(np.float32)


def test_words_come_back_with_times_inside_the_clip_and_in_order(tiny):
    from duplexeval.judges.asr import transcribe

    tr = transcribe(noise(3.0), 16000, {"backend": "parakeet-tdt", "model": str(tiny)}, cache=False)
    assert tr.backend == "parakeet-tdt" and tr.model == str(tiny)
    assert tr.words, "the biased tiny model emits tokens, so at least one word"
    assert all(0.0 <= w.start <= w.end <= 3.0 for w in tr.words)
    assert [w.start for w in tr.words] == sorted(w.start for w in tr.words)
    assert tr.text.replace(" ", "") == "".join(w.text for w in tr.words)


def test_the_same_audio_gives_the_same_words_and_the_cache_returns_them(tiny, tmp_path):
    from duplexeval.judges.asr import transcribe

    spec = {"backend": "parakeet-tdt", "model": str(tiny)}
    first = transcribe(noise(2.0, 1), 16000, spec, cache_dir=tmp_path)
    again = transcribe(noise(2.0, 1), 16000, spec, cache_dir=tmp_path)
    assert again.from_cache and again.words == first.words
    fresh = transcribe(noise(2.0, 1), 16000, spec, cache=False)
    assert fresh.words == first.words


def test_a_model_with_other_weights_has_another_cache_identity(tiny, tmp_path):
    from duplexeval.judges.asr import asr_id
    from duplexeval.judges.tiny_parakeet import write_tiny_parakeet

    other = write_tiny_parakeet(tmp_path / "other.nemo", seed=1)
    assert asr_id({"backend": "parakeet-tdt", "model": str(tiny)}) != asr_id({"backend": "parakeet-tdt",
                                                                               "model": str(other)})


def test_unknown_options_are_refused_by_name(tiny):
    from duplexeval.judges.asr import transcribe

    with pytest.raises(ValueError, match=r"unknown parakeet-tdt options \['beam'\]"):
        transcribe(noise(1.0), 16000, {"backend": "parakeet-tdt", "model": str(tiny), "options": {"beam": 4}},
                   cache=False)


def test_silence_gives_no_word_before_the_model_is_asked(tiny):
    from duplexeval.judges.asr import transcribe

    tr = transcribe(np.zeros(0, dtype=np.float32), 16000, {"backend": "parakeet-tdt", "model": str(tiny)}, cache=False)
    assert tr.words == [] and tr.text == ""
