"""Silero speech episodes cached on disk by content, under `$DUPLEXEVAL_CACHE/vad`: the one
VAD episode cache of every scorer (Duplex-MPE's episodes, MTR's scoring and segmentation).

Each entry holds its key and the key's components, and is checked on read (a corrupt or
mismatched entry is logged and recomputed). `detect_episodes` is called through its module
so a test that counts VAD runs sees these too.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np

from duplexeval.io import sha256_bytes
from duplexeval.judges import vad, vad_batch
from duplexeval.store import ContentStore

log = logging.getLogger(__name__)

EPISODES_CACHE_VERSION = 1


def cached_episodes(audio: np.ndarray, rate: int, *, threshold: float, min_speech_ms: float, merge_gap_ms: float,
                    mode: Literal["causal", "offline"], hysteresis: float, scorer: str, cache: bool = True,
                    cache_dir: Path | None = None, speech_pad_ms: int = 0) -> list[tuple[float, float]]:
    """detect_episodes, cached on disk by content under `$DUPLEXEVAL_CACHE/vad`.

    The key is the samples and everything the episodes depend on (the rules, the mode, the
    silero-vad, onnxruntime and soxr versions) and the scorer asking (Duplex-MPE's episodes,
    MTR's segmentation), so a hit is what the VAD would return and a changed sample or rule
    misses. Re-scores and resumes read their episodes back; MTR's plan, which every worker
    process rebuilds, skips both the offline pass and its torch import.
    """
    params: dict[str, Any] = {"threshold": float(threshold), "min_speech_ms": float(min_speech_ms),
                              "merge_gap_ms": float(merge_gap_ms), "mode": mode, "hysteresis": float(hysteresis)}
    if speech_pad_ms:  # only when asked, so every existing key stays as it was
        params["speech_pad_ms"] = int(speech_pad_ms)
    components = _components(audio, rate, params, scorer)
    store = ContentStore.of("vad", cache_dir)
    if cache:
        hit = store.get(components)
        if hit is not None:
            try:
                return [(float(s), float(e)) for s, e in hit]
            except (ValueError, TypeError) as exc:
                log.warning("ignoring a VAD cache entry that holds no episodes (%s); running the VAD again", exc)
    episodes = [(float(s), float(e)) for s, e in vad.detect_episodes(
        audio, rate, threshold=params["threshold"], min_speech_ms=params["min_speech_ms"],
        merge_gap_ms=params["merge_gap_ms"], mode=mode, hysteresis=params["hysteresis"],
        speech_pad_ms=int(speech_pad_ms))]
    if cache:
        store.put(components, [list(e) for e in episodes])
    return episodes


def cached_episodes_batch(audios: list[np.ndarray], rate: int, *, threshold: float, min_speech_ms: float,
                          merge_gap_ms: float, mode: Literal["causal", "offline"], hysteresis: float, scorer: str,
                          cache: bool = True, cache_dir: Path | None = None,
                          speech_pad_ms: int = 0) -> list[list[tuple[float, float]]]:
    """`cached_episodes` of many clips: the cache misses go to Silero as one batch.

    Keys, entries and episodes are those of one `cached_episodes` call per clip (same
    components, `vad_batch.detect_episodes_batch` gives the same episodes), so a clip scored
    batched is a cache hit for a later one-at-a-time call and the other way round.
    """
    params: dict[str, Any] = {"threshold": float(threshold), "min_speech_ms": float(min_speech_ms),
                              "merge_gap_ms": float(merge_gap_ms), "mode": mode, "hysteresis": float(hysteresis)}
    if speech_pad_ms:
        params["speech_pad_ms"] = int(speech_pad_ms)
    store = ContentStore.of("vad", cache_dir)
    out: list[list[tuple[float, float]] | None] = [None] * len(audios)
    keys: list[dict[str, Any]] = []
    for i, audio in enumerate(audios):
        components = _components(audio, rate, params, scorer)
        keys.append(components)
        if cache:
            hit = store.get(components)
            if hit is not None:
                try:
                    out[i] = [(float(s), float(e)) for s, e in hit]
                except (ValueError, TypeError) as exc:
                    log.warning("ignoring a VAD cache entry that holds no episodes (%s); running the VAD again", exc)
    misses = [i for i, eps in enumerate(out) if eps is None]
    found = vad_batch.detect_episodes_batch(
        [audios[i] for i in misses], rate, threshold=params["threshold"], min_speech_ms=params["min_speech_ms"],
        merge_gap_ms=params["merge_gap_ms"], mode=mode, hysteresis=params["hysteresis"],
        speech_pad_ms=int(speech_pad_ms)) if misses else []
    for i, eps in zip(misses, found):
        episodes = [(float(s), float(e)) for s, e in eps]
        out[i] = episodes
        if cache:
            store.put(keys[i], [list(e) for e in episodes])
    return [eps or [] for eps in out]


def _components(audio: np.ndarray, rate: int, params: dict[str, Any], scorer: str) -> dict[str, Any]:
    """A cache key's components: the samples' sha256, the rules, the versions, the scorer."""
    samples = np.ascontiguousarray(audio, dtype="<f4").reshape(-1)
    return {"v": EPISODES_CACHE_VERSION, "scorer": scorer, "audio_sha256": sha256_bytes(samples.tobytes()),
            "rate": int(rate), "params": params, "versions": _vad_versions()}


@lru_cache(maxsize=1)
def _vad_versions() -> dict[str, str]:
    """The packages a probability depends on: the model file (silero-vad), its runtime, the resampler."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("silero-vad", "onnxruntime", "soxr"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not-installed"
    return out


class ShiftedEpisode(tuple):
    """A VAD episode (start, end) moved by a timing-margin re-score (duplexeval.runs.timing_margin),
    which still knows the edges the VAD found (`heard`).

    Why: a scorer that cuts the clip it sends to the ASR around each episode must cut it around
    `heard` (`asr_span`), so that the ASR gets the clip it got in the run, whose transcript is
    cached, and its word times move by the ASR shift alone. Cut around the moved edges, every
    clip is new audio: Whisper runs again on every episode under every shift (on a cold cache
    about as many decodes as the run's whole scoring; the embedded suite's two shifts took
    ~190), and a word Whisper hears differently on a clip 50 ms longer passes for a timing
    effect."""

    heard: tuple[float, float]

    def __new__(cls, start: float, end: float, heard: tuple[float, float]) -> ShiftedEpisode:
        self = super().__new__(cls, (start, end))
        self.heard = (float(heard[0]), float(heard[1]))
        return self

    def __reduce__(self) -> tuple[Any, ...]:  # pickled (a worker process) as what it is
        return ShiftedEpisode, (self[0], self[1], self.heard)


def asr_span(episode: tuple[float, float]) -> tuple[float, float]:
    """The edges to cut an episode's ASR clip around: the VAD's own (a shifted episode's
    `heard`), else the episode's."""
    heard = getattr(episode, "heard", None)
    return heard if heard is not None else (float(episode[0]), float(episode[1]))
