"""Whisper's log-Mel features do not depend on the BLAS threads or the clip's length
(duplexeval/judges/asr_backends/whisper_features.py says why: with faster-whisper's own
float32 matrix product, 1 thread instead of 2 changed 17 of the embedded suite's 1,132
transcripts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
from faster_whisper.feature_extractor import FeatureExtractor

from duplexeval.judges import asr
from duplexeval.judges.asr_backends import faster_whisper_backend
from duplexeval.judges.asr_backends.whisper_features import FEATURES_TAG, FixedOrderFeatures


def clip(seconds: float = 40.0, seed: int = 7) -> np.ndarray:
    """Noise under a gliding tone with a syllable-rate envelope: energy in every Mel band."""
    t = np.arange(int(seconds * 16000)) / 16000
    rng = np.random.default_rng(seed)
    tone = np.sin(2 * np.pi * (200 + 60 * t) * t) * (0.6 + 0.4 * np.sin(2 * np.pi * 4 * t))
    return (0.3 * tone + 0.05 * rng.standard_normal(t.size)).astype(np.float32)


_DIGEST = """
import hashlib, sys
import numpy as np
from faster_whisper.feature_extractor import FeatureExtractor
from duplexeval.judges.asr_backends.whisper_features import FixedOrderFeatures
x = np.load(sys.argv[1])
for extractor in (FixedOrderFeatures(FeatureExtractor()), FeatureExtractor()):
    print(hashlib.sha256(np.ascontiguousarray(extractor(x)).tobytes()).hexdigest())
"""


def test_features_are_identical_at_one_and_two_blas_threads(tmp_path):
    """Two processes, OPENBLAS_NUM_THREADS 1 and 2, one clip: the same bytes. (faster-whisper's
    own features are shown too; on a machine with 2+ cores they usually differ.)"""
    audio = tmp_path / "clip.npy"
    np.save(audio, clip())
    digests = {}
    for threads in ("1", "2"):
        env = {**os.environ, "OPENBLAS_NUM_THREADS": threads, "OMP_NUM_THREADS": threads}
        out = subprocess.run([sys.executable, "-c", _DIGEST, str(audio)], env=env, capture_output=True, text=True, check=True)
        digests[threads] = out.stdout.split()
    fixed = {threads: d[0] for threads, d in digests.items()}
    upstream = {threads: d[1] for threads, d in digests.items()}
    assert fixed["1"] == fixed["2"], f"features depend on the BLAS threads: {fixed} (faster-whisper's own: {upstream})"


def test_a_column_depends_on_its_own_audio_only():
    """A clip's prefix gives its columns bit for bit, whatever follows (the floor 8 decades
    under the maximum does not bite on this clip); a matrix product blocked by the clip's
    length does not promise that."""
    x = clip()
    full = FixedOrderFeatures(FeatureExtractor())(x)
    head = FixedOrderFeatures(FeatureExtractor())(x[: 16000 * 13 + 37])
    assert full.max() - full.min() < 2.0  # the floor (8 decades = 2.0 after scaling) is not in play
    shared = head.shape[1] - 3  # the last columns of the prefix see its end (centre padding)
    np.testing.assert_array_equal(head[:, :shared], full[:, :shared])


def test_features_stay_within_rounding_of_faster_whispers_own():
    x = clip()
    ours, theirs = FixedOrderFeatures(FeatureExtractor())(x), FeatureExtractor()(x)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype == np.float32
    assert float(np.abs(ours - theirs).max()) <= 4 * np.finfo(np.float32).eps


def test_chunk_length_is_honoured_as_upstream():
    x = clip(5.0)
    ours, theirs = FixedOrderFeatures(FeatureExtractor()), FeatureExtractor()
    assert ours(x, chunk_length=10).shape == theirs(x, chunk_length=10).shape
    assert (ours.n_samples, ours.nb_max_frames) == (theirs.n_samples, theirs.nb_max_frames) == (160000, 1000)


def test_the_feature_recipe_is_part_of_the_transcript_key():
    """Transcripts made with faster-whisper's own features are not read back as these."""
    spec = asr._normalise_spec({})
    components = asr.cache_components(np.zeros(16000, np.float32), spec)
    assert components["features"] == FEATURES_TAG == faster_whisper_backend.FasterWhisperBackend.features
    without = {k: v for k, v in components.items() if k != "features"}
    assert asr.sha256_json(without) != asr.sha256_json(components)
    assert "features" in json.dumps(asr.asr_config({}))


def test_the_backend_and_the_cascade_read_audio_through_it(monkeypatch):
    monkeypatch.setattr(faster_whisper_backend, "_models", {})
    whisper = faster_whisper_backend.FasterWhisperBackend()._load("tiny.en")
    assert isinstance(whisper.feature_extractor, FixedOrderFeatures)
    from duplexeval.agents.cascade import load_asr

    assert isinstance(load_asr().feature_extractor, FixedOrderFeatures)
