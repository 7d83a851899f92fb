"""Silero VAD: speech episodes on a channel, offline or causal, always at 16 kHz.

Why this module exists rather than calling `silero_vad.get_speech_timestamps` directly:

* Full-Duplex-Bench called Silero on 24 kHz files without `sampling_rate` and got
  timestamps stretched 1.5x. Here every entry point resamples to 16 kHz first (with
  `duplexeval.audio.resample`, the one resampler) and times are computed from 16 kHz
  sample counts, so the input rate cannot leak into the timestamps.
* Duplex-MPE (§3.4) runs a *causal* Silero on Aria's channel and defines episodes as:
  "bursts under 120 ms don't count as speech; two bursts less than 800 ms apart become
  one episode". We apply the two rules in that order - drop short bursts first, then
  merge - so two 100 ms clicks 300 ms apart are no speech at all (merging first would
  turn them into a 500 ms "episode"). Silero's own `get_speech_timestamps` does the
  opposite (merges across short silences, then drops short chunks, and pads), which is
  why it is only used for `mode="offline"`.
* The MPE scheduler needs the same rules live ("wait for 2 s of Aria silence"), so the
  causal path *is* the streaming class: `detect_episodes(mode="causal")` pushes the
  audio through a `StreamingVAD`, and the scheduler and the scorer cannot disagree.

The ONNX model is loaded once per process; each stream keeps its own recurrent state
(Silero's `OnnxWrapper` keeps state on the shared model object, which would mix
streams), so many `StreamingVAD`s can share one inference session.

The scheduler's live stream and the scorer's `detect_episodes` run the same causal Silero
over the same samples when the model speaks at the benchmark's rate (the wire's s16 grid
survives the PCM-16 recording exactly): `make reproduce` would run Silero twice over every
silent, oracle and cascade conversation. So each `StreamingVAD` keeps a running sha256 of
the samples it was given and its per-window probabilities, the last `RECENT_STREAMS` of
them stay reachable, and a causal `detect_episodes` whose audio has exactly that sha256
replays those probabilities (and the recurrent state after them) instead of running the
model again: the same numbers in the same order, so the same episodes.
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
from array import array
from collections import OrderedDict
from fractions import Fraction
from pathlib import Path
from typing import Literal

import numpy as np

from duplexeval.audio import resample

log = logging.getLogger(__name__)

VAD_RATE = 16000
WINDOW = 512  # samples per Silero step at 16 kHz (32 ms)
CONTEXT = 64  # samples of the previous window Silero prepends at 16 kHz
FRAME_S = WINDOW / VAD_RATE

# Duplex-MPE §3.4 defaults.
MPE_MIN_SPEECH_MS = 120.0
MPE_MERGE_GAP_MS = 800.0
DEFAULT_THRESHOLD = 0.5
HYSTERESIS = 0.15  # Silero's own neg_threshold = threshold - 0.15; specs set it as vad.hysteresis

_session_lock = threading.Lock()
_session = None


def silero_session():
    """The process-wide onnxruntime session of Silero VAD (loaded on first use)."""
    global _session
    with _session_lock:
        if _session is None:
            # The ONNX file silero-vad ships, opened the way its OnnxWrapper opens it (CPU,
            # one thread), but without importing `silero_vad`, which imports torch and sets
            # torch's thread count for the whole process.
            import importlib.util

            import onnxruntime

            opts = onnxruntime.SessionOptions()
            opts.inter_op_num_threads = 1
            opts.intra_op_num_threads = 1
            spec = importlib.util.find_spec("silero_vad")  # locates the package without running it
            if spec is None or not spec.submodule_search_locations:
                raise RuntimeError("silero-vad is not installed (pip install 'silero-vad[onnx-cpu]==6.2.3')")
            model = Path(list(spec.submodule_search_locations)[0]) / "data" / "silero_vad.onnx"
            _session = onnxruntime.InferenceSession(str(model), providers=["CPUExecutionProvider"], sess_options=opts)
        return _session


# Windows already computed, by input history. A stream's Silero output and state after n
# windows are a function of those n windows alone (fixed weights, the zero initial state, one
# thread, the same kernels: the replay above relies on the same determinism), so a stream
# that has been given exactly the windows another stream was given continues from that
# stream's results instead of running the model. Every silent conversation is one all-zero
# history; oracle and cascade conversations share it until they first speak; the babbler
# plays the same loop from frame 0 in every conversation. Keys chain a hash over the
# windows in order (blake2b-256 of the previous key and the window's bytes); the table is
# an LRU of TRAJECTORY_WINDOWS windows (~1.2 KB each; 0 turns it off), so distinct
# streams (a real model's) only cost a hash per 32 ms window (bench/bench_vad_memo.py).
TRAJECTORY_WINDOWS = 32768
_trajectory: OrderedDict[bytes, tuple[float, np.ndarray]] = OrderedDict()
_trajectory_lock = threading.Lock()
_TRAJECTORY_ROOT = b"silero-vad: no window yet"
trajectory_stats = {"hits": 0, "misses": 0}


class _SileroStream:
    """Per-stream recurrent state over the shared session (same maths as OnnxWrapper)."""

    def __init__(self) -> None:
        self._session = silero_session()
        self._state = np.zeros((2, 1, 128), dtype=np.float32)
        self._context = np.zeros((1, CONTEXT), dtype=np.float32)
        self._sr = np.array(VAD_RATE, dtype=np.int64)
        self._key = _TRAJECTORY_ROOT

    def prob(self, window: np.ndarray) -> float:
        w = np.ascontiguousarray(window, dtype=np.float32).reshape(1, WINDOW)
        chain = hashlib.blake2b(self._key, digest_size=32)
        chain.update(w.tobytes())
        key = self._key = chain.digest()
        if TRAJECTORY_WINDOWS:
            with _trajectory_lock:
                hit = _trajectory.get(key)
                if hit is not None:
                    _trajectory.move_to_end(key)
                    trajectory_stats["hits"] += 1
            if hit is not None:
                p, self._state = hit  # never written in place: ORT returns a new state array
                self._context = w[:, -CONTEXT:]
                return p
        x = np.concatenate([self._context, w], axis=1)
        out, self._state = self._session.run(None, {"input": x, "state": self._state, "sr": self._sr})
        self._context = x[:, -CONTEXT:]
        p = float(out.reshape(-1)[0])
        if TRAJECTORY_WINDOWS:
            with _trajectory_lock:
                trajectory_stats["misses"] += 1
                _trajectory[key] = (p, self._state)
                while len(_trajectory) > TRAJECTORY_WINDOWS:
                    _trajectory.popitem(last=False)
        return p


def speech_probabilities(audio_16k: np.ndarray) -> np.ndarray:
    """One probability per 32 ms window (the last window zero-padded)."""
    audio_16k = np.asarray(audio_16k, dtype=np.float32).reshape(-1)
    pad = (-len(audio_16k)) % WINDOW
    if pad:
        audio_16k = np.concatenate([audio_16k, np.zeros(pad, dtype=np.float32)])
    stream = _SileroStream()
    return np.array([stream.prob(audio_16k[i:i + WINDOW]) for i in range(0, len(audio_16k), WINDOW)],
                    dtype=np.float32)


class EpisodeTracker:
    """The MPE episode rules over a stream of per-frame speech decisions (no model here).

    Kept separate from the model so the 120 ms / 800 ms rules can be tested with
    hand-made frame sequences. Frames are `frame_s` long; a burst is a run of speech
    frames (with hysteresis: a burst starts at p >= threshold and ends at p <
    threshold - hysteresis). Order: drop bursts shorter than `min_speech_ms`, then merge
    surviving bursts whose gap is shorter than `merge_gap_ms` (Duplex-MPE §3.4).

    Lengths are whole frames and every comparison is exact (fractions of a millisecond,
    never floats): "under 120 ms" and "less than 800 ms apart" are strict, so a burst of
    exactly min_speech counts and a gap of exactly merge_gap never merges, at any stream
    offset. With Silero's 32 ms frames a burst or gap is a multiple of 32 ms: the shortest
    speech is 4 frames (128 ms; 3 frames = 96 ms is dropped), and the longest gap that
    merges is 24 frames (768 ms; 25 frames = 800 ms exactly never merges).
    """

    def __init__(self, *, threshold: float = DEFAULT_THRESHOLD, min_speech_ms: float = MPE_MIN_SPEECH_MS,
                 merge_gap_ms: float = MPE_MERGE_GAP_MS, frame_s: float = FRAME_S,
                 hysteresis: float = HYSTERESIS) -> None:
        self.threshold = threshold
        self.neg_threshold = max(threshold - hysteresis, 0.01)
        self.frame_s = frame_s
        frame_ms = Fraction(repr(float(frame_s))) * 1000
        # Smallest frame counts that reach min_speech / merge_gap, exactly.
        self._min_speech_frames = math.ceil(Fraction(repr(float(min_speech_ms))) / frame_ms)
        self._merge_gap_frames = math.ceil(Fraction(repr(float(merge_gap_ms))) / frame_ms)
        self.frames = 0
        self._in_burst = False
        self._burst_start = 0
        self._episodes: list[list[int]] = []  # confirmed bursts, merged, in frames; last may be open
        self._open = False  # the last episode's burst is still running

    @property
    def time_s(self) -> float:
        return self.frames * self.frame_s

    def push_prob(self, p: float) -> None:
        if not self._in_burst and p >= self.threshold:
            self._in_burst, self._burst_start = True, self.frames
        elif self._in_burst and p < self.neg_threshold:
            self._end_burst(self.frames)
        self.frames += 1
        if self._in_burst and not self._open and self.frames - self._burst_start >= self._min_speech_frames:
            self._confirm(self._burst_start)

    def _confirm(self, start: int) -> None:
        # A burst becomes speech once it has lasted min_speech: causal, no look-ahead.
        if self._episodes and start - self._episodes[-1][1] < self._merge_gap_frames:
            self._episodes[-1][1] = self.frames
        else:
            self._episodes.append([start, self.frames])
        self._open = True

    def _end_burst(self, frame: int) -> None:
        if self._open:
            self._episodes[-1][1] = frame
        self._in_burst = self._open = False

    def finish(self) -> None:
        if self._in_burst:
            if not self._open and self.frames - self._burst_start >= self._min_speech_frames:
                self._confirm(self._burst_start)
            self._end_burst(self.frames)

    @property
    def speaking(self) -> bool:
        """True while a burst that already counts as speech (>= min_speech) is running."""
        return self._open

    @property
    def in_burst(self) -> bool:
        """True while a burst runs that is not yet long enough to count as speech.

        The scheduler holds the next turn on it, so a reply that starts late in a 0.5 s
        gap is not talked over before the VAD has had min_speech to confirm it.
        """
        return self._in_burst and not self._open

    @property
    def silence_s(self) -> float:
        """Seconds since confirmed speech last ended (0 while speaking; whole stream if none)."""
        if self._open:
            return 0.0
        last_end = self._episodes[-1][1] if self._episodes else 0
        return max(self.frames - last_end, 0) * self.frame_s

    def episodes(self) -> list[tuple[float, float]]:
        """Episodes so far; an open one ends at the current time."""
        return [(round(start * self.frame_s, 6), round(end * self.frame_s, 6)) for start, end in self._episodes]


# Streams whose probabilities a later causal detect_episodes over the same samples may
# reuse: a Duplex-MPE job's conversations are scored after all of them were played.
RECENT_STREAMS = 128
_recent: OrderedDict[int, "StreamingVAD"] = OrderedDict()
# (probabilities, Silero state, Silero context, samples waiting for a whole window, trajectory key)
_Snapshot = tuple[array, np.ndarray, np.ndarray, np.ndarray, bytes]
_recent_lock = threading.Lock()


class StreamingVAD:
    """Causal Silero VAD for live use (the MPE scheduler): push 16 kHz audio, read state.

    `push` accepts chunks of any length; samples are consumed in 512-sample windows and a
    remainder waits for the next push. Times are stream time in seconds from the first
    sample pushed. With `remember` (the default) the stream stays reachable for a later
    `detect_episodes` over the same samples (module docstring).
    """

    def __init__(self, *, threshold: float = DEFAULT_THRESHOLD, min_speech_ms: float = MPE_MIN_SPEECH_MS,
                 merge_gap_ms: float = MPE_MERGE_GAP_MS, hysteresis: float = HYSTERESIS,
                 remember: bool = True) -> None:
        self._stream = _SileroStream()
        self._tracker = EpisodeTracker(threshold=threshold, min_speech_ms=min_speech_ms,
                                       merge_gap_ms=merge_gap_ms, frame_s=FRAME_S, hysteresis=hysteresis)
        self._pending = np.zeros(0, dtype=np.float32)
        self._lock = threading.Lock()
        self._sha = hashlib.sha256()
        self._samples = 0
        self._probs = array("f")  # Silero's outputs are float32: stored exactly
        if remember:
            with _recent_lock:
                _recent[id(self)] = self
                while len(_recent) > RECENT_STREAMS:
                    _recent.popitem(last=False)

    def push(self, chunk_16k: np.ndarray) -> None:
        chunk = np.ascontiguousarray(chunk_16k, dtype=np.float32).reshape(-1)
        with self._lock:
            self._sha.update(chunk.tobytes())
            self._samples += len(chunk)
            buf = np.concatenate([self._pending, chunk])
            usable = len(buf) - len(buf) % WINDOW
            for i in range(0, usable, WINDOW):
                p = self._stream.prob(buf[i:i + WINDOW])
                self._probs.append(p)
                self._tracker.push_prob(p)
            self._pending = buf[usable:]

    def _snapshot(self, n_samples: int, sha256: str) -> _Snapshot | None:
        """(probabilities, Silero state, context, pending samples) if this stream was given
        exactly `n_samples` samples whose sha256 is `sha256`; else None."""
        with self._lock:
            if self._samples != n_samples or self._sha.hexdigest() != sha256:
                return None
            return (array("f", self._probs), self._stream._state.copy(), self._stream._context.copy(),
                    self._pending.copy(), self._stream._key)

    def _adopt(self, snapshot: _Snapshot) -> None:
        """Continues from another stream's snapshot as if its samples had been pushed here."""
        probs, state, context, pending, key = snapshot
        for p in probs:
            self._tracker.push_prob(p)
        self._probs = probs
        self._stream._state, self._stream._context, self._pending = state, context, pending
        self._stream._key = key

    def flush(self) -> None:
        """End of stream: the partial window is zero-padded and an open burst is closed."""
        if len(self._pending):
            self.push(np.zeros(WINDOW - len(self._pending), dtype=np.float32))
        self._tracker.finish()

    @property
    def speaking(self) -> bool:
        return self._tracker.speaking

    @property
    def in_burst(self) -> bool:
        return self._tracker.in_burst

    @property
    def silence_s(self) -> float:
        return self._tracker.silence_s

    @property
    def time_s(self) -> float:
        return self._tracker.time_s

    def episodes(self) -> list[tuple[float, float]]:
        return self._tracker.episodes()


def _recent_snapshot(audio_16k: np.ndarray) -> _Snapshot | None:
    """The snapshot of a remembered stream that was given exactly these samples, if any."""
    samples = np.ascontiguousarray(audio_16k, dtype=np.float32).reshape(-1)
    with _recent_lock:
        candidates = [s for s in reversed(_recent.values()) if s._samples == len(samples)]
    if not candidates:
        return None
    digest = hashlib.sha256(samples.tobytes()).hexdigest()
    for stream in candidates:
        snap = stream._snapshot(len(samples), digest)
        if snap is not None:
            return snap
    return None


def detect_episodes(audio: np.ndarray, rate: int, *, threshold: float = DEFAULT_THRESHOLD,
                    min_speech_ms: float = MPE_MIN_SPEECH_MS, merge_gap_ms: float = MPE_MERGE_GAP_MS,
                    mode: Literal["causal", "offline"] = "causal",
                    hysteresis: float = HYSTERESIS, speech_pad_ms: int = 0) -> list[tuple[float, float]]:
    """Speech episodes (start_s, end_s) of mono `audio` at `rate`.

    causal: frame-by-frame probabilities with the model's state, the MPE rules
    (drop < min_speech, then merge gaps < merge_gap) - the Duplex-MPE scorer.
    offline: Silero's reference segmentation (`get_speech_timestamps_from_probs`, told
    sampling_rate=16000) with min_speech / min_silence = merge_gap - what a plain Silero
    user (MTR-DuplexBench's segmentation) gets; no padding unless `speech_pad_ms` (offline
    only) asks for Silero's own (Full-Duplex-Bench's backchannel rule keeps its default 30 ms).
    """
    audio = np.asarray(audio, dtype=np.float32)
    if audio.ndim != 1:
        raise ValueError(f"detect_episodes expects mono audio, got shape {audio.shape}")
    audio_16k = resample(audio, rate, VAD_RATE)
    if mode == "causal":
        if speech_pad_ms:
            raise ValueError("speech_pad_ms applies to the offline mode only")
        vad = StreamingVAD(threshold=threshold, min_speech_ms=min_speech_ms, merge_gap_ms=merge_gap_ms,
                           hysteresis=hysteresis, remember=False)
        seen = _recent_snapshot(audio_16k)
        if seen is not None:
            vad._adopt(seen)
        else:
            vad.push(audio_16k)
        vad.flush()
        return vad.episodes()
    if mode == "offline":
        return _offline_episodes(speech_probabilities(audio_16k), len(audio_16k), threshold=threshold,
                                 min_speech_ms=min_speech_ms, merge_gap_ms=merge_gap_ms, hysteresis=hysteresis,
                                 speech_pad_ms=speech_pad_ms)
    raise ValueError(f"unknown VAD mode {mode!r}; use 'causal' or 'offline'")


def _offline_episodes(probs: np.ndarray, n_samples: int, *, threshold: float, min_speech_ms: float,
                      merge_gap_ms: float, hysteresis: float, speech_pad_ms: int) -> list[tuple[float, float]]:
    """Silero's reference segmentation of per-window probabilities (`detect_episodes`' offline mode)."""
    from silero_vad import get_speech_timestamps_from_probs  # imports torch (sets 1 thread)

    stamps = get_speech_timestamps_from_probs(
        list(map(float, probs)), sampling_rate=VAD_RATE, threshold=threshold,
        neg_threshold=max(threshold - hysteresis, 0.01),
        min_speech_duration_ms=int(min_speech_ms), min_silence_duration_ms=int(merge_gap_ms),
        speech_pad_ms=int(speech_pad_ms), return_seconds=False, audio_length_samples=n_samples)
    return [(round(s["start"] / VAD_RATE, 6), round(s["end"] / VAD_RATE, 6)) for s in stamps]


def vad_hysteresis(vad: dict) -> float:
    """A benchmark spec's vad.hysteresis: a burst ends below threshold - hysteresis (Silero's own 0.15)."""
    return float(vad.get("hysteresis", HYSTERESIS))
