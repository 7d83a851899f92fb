"""Whisper's log-Mel features, computed so that the machine's thread count cannot change them.

Why: faster-whisper projects the power spectrogram onto the 80 Mel filters with one float32
matrix product (`filters @ magnitudes`), which numpy hands to OpenBLAS. OpenBLAS splits the
columns over its threads (one per core unless `OPENBLAS_NUM_THREADS` says otherwise), and
how a column's sum is blocked, so its last bit, depends on that split and on the clip's
length. Measured on the embedded suite (`duplexeval score` of one run, 2026-12-01):
re-scoring with 1 BLAS thread instead of 2 changed 17 of 1,132 transcripts (e.g. "the
trains and the price" -> "the trains end the price"; a backchannel of 41 words read as
40), while 2, 4 and 8 threads agreed on this 2-core machine (OpenBLAS caps the threads at
the cores). So the same recording could give other words, and other verdicts, on a
laptop, on CI, and on a 64-core node, under one cache key.

How: each filter's sum runs over its non-zero bins (a Mel filter is a triangle a few bins
wide) in ascending bin order, as one elementwise multiply and one add per term over all
frames at once. Each of those operations is correctly rounded IEEE float32 arithmetic, done
element by element, so the result of every column depends on that column's spectrum
alone: not on threads, not on the clip's length, not on the BLAS. The rest (window,
real FFT, |.|^2, log10, the 8-decade floor, scaling) is Whisper's recipe as faster-whisper
applies it. The values stay within float32 rounding of faster-whisper's own (a few ulp;
tests/test_asr_features.py), yet transcripts made before this change are not reused: the
backend's `features` tag is part of the ASR cache key.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# Part of the ASR cache key (Backend.features): change it whenever these features change.
FEATURES_TAG = "fixed-order-mel/1"


def sparse_filters(filters: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(bins, weights), each (n_mels, width): every filter's non-zero bins in ascending
    order, padded at the end with weight 0 (adding 0 * a finite power changes no bit)."""
    rows = [np.flatnonzero(row) for row in filters]
    width = max(len(r) for r in rows)
    bins = np.zeros((len(rows), width), dtype=np.intp)
    weights = np.zeros((len(rows), width), dtype=np.float32)
    for m, r in enumerate(rows):
        bins[m, :len(r)] = r
        weights[m, :len(r)] = filters[m, r]
    return bins, weights


def mel_project(bins: np.ndarray, weights: np.ndarray, power: np.ndarray) -> np.ndarray:
    """(n_mels, frames): sum over j of weights[:, j] * power[bins[:, j]], j ascending."""
    acc = weights[:, :1] * power[bins[:, 0]]
    for j in range(1, bins.shape[1]):
        acc += weights[:, j:j + 1] * power[bins[:, j]]
    return acc


class FixedOrderFeatures:
    """A faster-whisper FeatureExtractor with the Mel projection in a fixed order (module
    docstring). It wraps the model's own extractor, whose settings (rate, hop, window
    length) and helpers it reads, so importing this module does not import faster-whisper."""

    def __init__(self, upstream: Any):
        self.upstream = upstream
        self.mel_bins, self.mel_weights = sparse_filters(upstream.mel_filters)

    def __getattr__(self, name: str) -> Any:  # sampling_rate, hop_length, nb_max_frames, time_per_frame, ...
        if name == "upstream":  # not set yet (copy, unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.upstream, name)

    def __call__(self, waveform: np.ndarray, padding: int = 160, chunk_length: int | None = None) -> np.ndarray:
        up = self.upstream
        if chunk_length is not None:  # the window length the decoder walks by, as upstream sets it
            up.n_samples = chunk_length * up.sampling_rate
            up.nb_max_frames = up.n_samples // up.hop_length
        audio = np.asarray(waveform, dtype=np.float32)
        if padding:
            audio = np.pad(audio, (0, padding))
        window = np.hanning(up.n_fft + 1)[:-1].astype(np.float32)
        spectrum = up.stft(audio, up.n_fft, up.hop_length, window=window, return_complex=True)
        power = np.abs(spectrum.astype(np.complex64)[..., :-1]) ** 2
        log_mel = np.log10(np.maximum(mel_project(self.mel_bins, self.mel_weights, power), np.float32(1e-10)))
        log_mel = np.maximum(log_mel, log_mel.max() - 8.0)
        return (log_mel + 4.0) / 4.0


def fix_features(whisper: Any) -> Any:
    """`whisper` (a faster_whisper.WhisperModel) reading its audio through FixedOrderFeatures."""
    if not isinstance(whisper.feature_extractor, FixedOrderFeatures):
        whisper.feature_extractor = FixedOrderFeatures(whisper.feature_extractor)
    return whisper


def load_whisper(source: str, cpu_threads: int) -> Any:
    """A CTranslate2 Whisper (a model directory or name), int8 on the CPU, with these
    features: how the offline judge and the cascade agents all load theirs."""
    from faster_whisper import WhisperModel

    return fix_features(WhisperModel(source, device="cpu", compute_type="int8", cpu_threads=cpu_threads))
