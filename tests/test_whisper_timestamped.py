"""whisper-timestamped (MTR-DuplexBench's ASR) on a RANDOMLY INITIALISED tiny Whisper.

The real code path - whisper's checkpoint loader, whisper-timestamped's decoding with the
MTR public code's settings (beam 5, best_of 5, temperature fallback, vad off) and its DTW
word alignment - runs on CPU in seconds. The text is meaningless; these tests assert the
adapter's contract (word order, times inside the clip, monotonic, empty audio -> empty
transcript), the weights pinning and the cache key, never what was said.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("whisper_timestamped", reason="extra paper-asr (requirements/paper-asr.txt) not installed")

from duplexeval.judges import asr  # noqa: E402
from duplexeval.judges.local_models import MissingWeightsError, file_sha256  # noqa: E402
from duplexeval.judges.tiny_models import write_tiny_whisper  # noqa: E402

RATE = 16000
# The MTR public code's whisper_timestamped.transcribe settings (specs/benchmarks/_mtr-base.yaml),
# with sample_len capped so a random decoder stops after a few tokens.
MTR_OPTIONS = {"beam_size": 5, "best_of": 5, "temperature": [0.0, 0.2, 0.4, 0.6, 0.8, 1.0], "vad": False,
               "detect_disfluencies": False, "include_punctuation_in_confidence": False,
               "condition_on_previous_text": False, "sample_len": 12}


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory):
    return write_tiny_whisper(tmp_path_factory.mktemp("tiny-whisper") / "tiny-random.pt")


def _clip(seconds: float = 2.5) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    return (0.3 * np.sin(2 * np.pi * 220 * t) * (np.sin(2 * np.pi * 2 * t) > 0)).astype(np.float32)


# Greedy, no fallback: the same code path in a fraction of the time (the ladder runs once, above).
FAST = {"beam_size": None, "best_of": None, "temperature": 0.0, "sample_len": 12}


def _spec(path, options=None, **more):
    return {"backend": "whisper-timestamped", "model": str(path), "language": "en",
            "options": {**(FAST if options is None else options), **more}}


def test_random_tiny_whisper_words_are_ordered_inside_the_clip(tiny_checkpoint):
    audio = _clip()
    result = asr.transcribe(audio, RATE, _spec(tiny_checkpoint, MTR_OPTIONS), cache=False)
    assert result.backend == "whisper-timestamped" and result.model == str(tiny_checkpoint)
    assert result.words, "a random decoder still emits tokens, and every token gets a time"
    starts = [w.start for w in result.words]
    assert starts == sorted(starts)
    assert all(0.0 <= w.start <= w.end <= len(audio) / RATE for w in result.words)
    assert all(w.text == w.text.strip() and w.text for w in result.words)


def test_random_tiny_whisper_at_48_khz_keeps_times_in_seconds(tiny_checkpoint):
    audio = asr.resample(_clip(2.0), RATE, 48000)
    result = asr.transcribe(audio, 48000, _spec(tiny_checkpoint), cache=False)
    assert all(w.end <= 2.0 for w in result.words)


def test_empty_audio_gives_an_empty_transcript(tiny_checkpoint):
    result = asr.transcribe(np.zeros(0, np.float32), RATE, _spec(tiny_checkpoint), cache=False)
    assert result.text == "" and result.words == []


def test_cache_key_holds_the_full_configuration(tiny_checkpoint, tmp_path):
    audio = _clip(1.0)
    base = asr.cache_components(audio, asr._normalise_spec(_spec(tiny_checkpoint, MTR_OPTIONS)))
    assert base["weights_sha256"] and base["packages"]["openai-whisper"] == "20250625"
    assert base["options"]["seed"] == 1234 and base["options"]["device"] == "cpu"
    assert base["options"]["temperature"] == MTR_OPTIONS["temperature"]
    beam1 = asr.cache_components(audio, asr._normalise_spec(_spec(tiny_checkpoint, MTR_OPTIONS, beam_size=1)))
    other = write_tiny_whisper(tmp_path / "other.pt", seed=1)
    reseeded = asr.cache_components(audio, asr._normalise_spec(_spec(other, MTR_OPTIONS)))
    assert len({asr.sha256_json(c) for c in (base, beam1, reseeded)}) == 3
    assert asr.asr_id(_spec(tiny_checkpoint)).startswith("whisper-timestamped:")
    assert asr.asr_id(_spec(tiny_checkpoint)) != asr.asr_id(_spec(tiny_checkpoint, beam_size=1))


def test_second_call_is_a_cache_hit(tiny_checkpoint, tmp_path, monkeypatch):
    from duplexeval.judges.asr_backends import whisper_timestamped_backend as wtb

    audio = _clip(1.5)
    first = asr.transcribe(audio, RATE, _spec(tiny_checkpoint), cache_dir=tmp_path)
    monkeypatch.setattr(wtb.WhisperTimestampedBackend, "transcribe", lambda *a, **k: pytest.fail("ran on a hit"))
    second = asr.transcribe(audio, RATE, _spec(tiny_checkpoint), cache_dir=tmp_path)
    assert second.from_cache and second == first


def _write_spec(root, sha):
    (root / "judges").mkdir(parents=True)
    (root / "judges" / "asr-whisper-timestamped-tiny-test.yaml").write_text(f"""\
kind: judge
id: asr-whisper-timestamped-tiny-test
task: asr
label: random tiny Whisper (test)
paper: none (test)
provider: whisper-timestamped
model: tiny-random
weights:
  source: openai-whisper
  files:
    - path: tiny-random.pt
      sha256: {sha}
""")


def test_named_model_comes_from_its_spec_in_the_weights_cache(tiny_checkpoint, tmp_path, monkeypatch):
    """A spec pins tiny-random.pt by sha256; the file is looked for in the weights cache, never downloaded.

    (The paper's spec does the same for medium.en.pt; a named openai-whisper model also gets
    its alignment heads, which a random tiny model's shape cannot take, hence another name.)
    """
    specs, cache = tmp_path / "specs", tmp_path / "weights"
    _write_spec(specs, file_sha256(tiny_checkpoint))
    monkeypatch.setenv("DUPLEXEVAL_SPECS", str(specs))
    monkeypatch.setenv("DUPLEXEVAL_WEIGHTS_CACHE", str(cache))
    spec = {"backend": "whisper-timestamped", "model": "tiny-random", "language": "en", "options": FAST}
    with pytest.raises(MissingWeightsError, match=r"tiny-random\.pt: missing[\s\S]*asr-whisper-timestamped-tiny-test/files"):
        asr.transcribe(_clip(1.0), RATE, spec, cache=False)
    folder = cache / "asr-whisper-timestamped-tiny-test" / "files"
    folder.mkdir(parents=True)
    (folder / "tiny-random.pt").write_bytes(tiny_checkpoint.read_bytes())
    result = asr.transcribe(_clip(1.0), RATE, spec, cache=False)
    assert all(0.0 <= w.start <= w.end <= 1.0 for w in result.words)
    assert asr.asr_config(spec)["weights"]["spec"] == "asr-whisper-timestamped-tiny-test"
    (folder / "tiny-random.pt").write_bytes(b"tampered")
    with pytest.raises(MissingWeightsError, match="differs from the pinned"):
        asr.transcribe(_clip(1.0), RATE, spec, cache=False)


def test_condition_on_previous_text_stays_off(tiny_checkpoint):
    with pytest.raises(ValueError, match="condition_on_previous_text"):
        asr.transcribe(_clip(1.0), RATE, _spec(tiny_checkpoint, condition_on_previous_text=True), cache=False)
