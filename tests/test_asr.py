"""ASR behind one interface: faster-whisper tiny.en (pinned weights), cache, fallbacks."""

from __future__ import annotations

import numpy as np
import pytest

from duplexeval.audio import resample
from duplexeval.judges import asr
from duplexeval.judges.asr import MissingExtraError, transcribe, words_in_window
from duplexeval.judges.asr_backends import faster_whisper_backend
from duplexeval.tts import synthesize

SENTENCE = "The taco place is nine dollars a head, and it takes cards."


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("DUPLEXEVAL_CACHE", str(tmp_path))
    return tmp_path


@pytest.fixture(scope="module")
def speech(tmp_path_factory) -> np.ndarray:
    """1 s of silence, then the flite sentence, at 16 kHz."""
    tts = synthesize(SENTENCE, "slt", 16000, cache_dir=tmp_path_factory.mktemp("tts"))
    return np.concatenate([np.zeros(16000, np.float32), tts])


def test_faster_whisper_transcribes_flite_with_word_timestamps(speech):
    result = transcribe(speech, 16000, {"backend": "faster-whisper", "model": "tiny.en", "language": "en"})
    assert result.backend == "faster-whisper" and result.model == "tiny.en" and not result.from_cache
    assert "taco" in result.text.lower() and "$9" in result.text  # the ASR writes digits (DESIGN)
    assert len(result.words) >= 8
    starts = [w.start for w in result.words]
    assert starts == sorted(starts) and all(w.end >= w.start for w in result.words)
    assert 0.7 <= result.words[0].start <= 1.6  # speech begins after 1 s of silence (Whisper times are coarse)
    assert result.words[-1].end <= len(speech) / 16000 + 0.1
    assert [w.text for w in words_in_window(result.words, 0.0, 1.0)] == []


def test_second_call_is_a_cache_hit(speech, cache_dir, monkeypatch):
    first = transcribe(speech, 16000)
    assert list((cache_dir / "asr").rglob("*.json"))
    monkeypatch.setattr(faster_whisper_backend.FasterWhisperBackend, "transcribe",
                        lambda *a, **k: pytest.fail("the backend ran on a cache hit"))
    second = transcribe(speech, 16000)
    assert second.from_cache and second == first


def test_options_and_model_change_the_cache_key(speech):
    audio = resample(speech, 16000, 16000)
    base = asr.cache_components(audio, asr._normalise_spec({}))
    beam = asr.cache_components(audio, asr._normalise_spec({"options": {"beam_size": 1}}))
    sphinx = asr.cache_components(audio, asr._normalise_spec({"backend": "pocketsphinx"}))
    assert base["weights_sha256"] == faster_whisper_backend.BUNDLED_WEIGHTS["tiny.en"]
    assert len({asr.sha256_json(c) for c in (base, beam, sphinx)}) == 3
    assert sphinx["model"] == "en-us"


def test_tampered_weights_are_refused(monkeypatch, speech):
    monkeypatch.setitem(faster_whisper_backend.BUNDLED_WEIGHTS, "tiny.en", "0" * 64)
    monkeypatch.setattr(faster_whisper_backend, "_models", {})
    with pytest.raises(faster_whisper_backend.WeightsMismatchError, match="does not match the pinned"):
        transcribe(speech, 16000, cache=False)


def test_condition_on_previous_text_stays_off(speech):
    with pytest.raises(ValueError, match="condition_on_previous_text"):
        transcribe(speech, 16000, {"options": {"condition_on_previous_text": True}})


def test_pocketsphinx_fallback_gives_words_with_times(speech):
    result = transcribe(speech, 16000, {"backend": "pocketsphinx"})
    assert result.backend == "pocketsphinx" and len(result.words) >= 5
    assert "taco" in result.text
    assert all(0.9 <= w.start <= w.end <= len(speech) / 16000 + 0.05 for w in result.words)


@pytest.mark.parametrize("backend,extra", [("whisper-timestamped", "pip install duplexeval[paper-asr]"),
                                           ("stable-ts", "pip install duplexeval[stable-ts]")])
def test_missing_optional_backends_name_their_extra(speech, backend, extra):
    try:
        __import__({"whisper-timestamped": "whisper_timestamped", "stable-ts": "stable_whisper"}[backend])
    except (ImportError, OSError):
        pass
    else:
        pytest.skip(f"{backend} is installed here")
    with pytest.raises(MissingExtraError) as err:
        transcribe(speech, 16000, {"backend": backend, "model": "medium.en"}, cache=False)
    assert extra in str(err.value)


def test_empty_audio_and_bad_settings():
    empty = transcribe(np.zeros(0, np.float32), 16000, cache=False)
    assert empty.text == "" and empty.words == []
    with pytest.raises(ValueError, match="unknown ASR backend"):
        transcribe(np.zeros(10, np.float32), 16000, {"backend": "siri"})
    with pytest.raises(ValueError, match="unknown ASR settings"):
        transcribe(np.zeros(10, np.float32), 16000, {"beam": 5})
