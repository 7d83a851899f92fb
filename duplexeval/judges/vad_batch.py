"""Silero over many streams at once: the scorer hands a job's finished recordings to Silero as
one batch (docs/runner.md, "The scorer batches Silero").

One ONNX call steps every stream's next 32 ms window: B rows, each with its own recurrent
state and context, the maths of `vad._SileroStream` B rows at a time. With onnxruntime on
one thread a row's output does not depend on the other rows of its batch (the same kernels
run per row), so the probabilities are the ones a stream alone gets, to the bit
(tests/test_vad_batched.py; bench/bench_scoring.py measures 351x against 180x real time per
core). The trajectory memo (duplexeval.judges.vad) is consulted and filled per row exactly as
`_SileroStream.prob` does, and rows that share a history in the same step are computed once.
Its tables are read from `vad` at each call, so a test that swaps them sees these calls too.
"""

from __future__ import annotations

import hashlib
from typing import Literal

import numpy as np

from duplexeval.audio import resample
from duplexeval.judges import vad

# Rows per ONNX call in the scorer (a speed knob: no result depends on it). bench_scoring.py
# measured batches of 8 at 345x and of 32 at 351x real time per core; 16 holds a chunk of
# paper-length recordings (~130 s at 24 kHz, plus their 16 kHz copies) in ~0.5 GB.
BATCH_STREAMS = 16


def batch_speech_probabilities(streams_16k: list[np.ndarray]) -> list[np.ndarray]:
    """`speech_probabilities` of every stream, the streams stepped together (see above)."""
    streams = [np.asarray(a, dtype=np.float32).reshape(-1) for a in streams_16k]
    counts = [-(-len(a) // vad.WINDOW) for a in streams]
    n = len(streams)
    if not n:
        return []
    session = vad.silero_session()
    steps = max(counts)
    x = np.zeros((n, steps * vad.WINDOW), np.float32)
    for b, a in enumerate(streams):
        x[b, :len(a)] = a
    state = np.zeros((2, n, 128), np.float32)
    context = np.zeros((n, vad.CONTEXT), np.float32)
    keys = [vad._TRAJECTORY_ROOT] * n
    probs = np.zeros((n, steps), np.float32)
    sr = np.array(vad.VAD_RATE, dtype=np.int64)
    for t in range(steps):
        rows = [b for b in range(n) if t < counts[b]]
        windows = x[:, t * vad.WINDOW:(t + 1) * vad.WINDOW]
        todo: dict[bytes, list[int]] = {}  # key -> rows with that history, not in the memo
        for b in rows:
            chain = hashlib.blake2b(keys[b], digest_size=32)
            chain.update(np.ascontiguousarray(windows[b:b + 1]).tobytes())
            keys[b] = key = chain.digest()
            hit = None
            if vad.TRAJECTORY_WINDOWS:
                with vad._trajectory_lock:
                    hit = vad._trajectory.get(key)
                    if hit is not None:
                        vad._trajectory.move_to_end(key)
                        vad.trajectory_stats["hits"] += 1
            if hit is not None:
                probs[b, t], state[:, b:b + 1, :] = hit[0], hit[1]
            elif key in todo:
                todo[key].append(b)
                if vad.TRAJECTORY_WINDOWS:
                    vad.trajectory_stats["hits"] += 1  # what the memo gives the second stream, one at a time
            else:
                todo[key] = [b]
        context_next = windows[:, -vad.CONTEXT:].copy()
        if todo:
            lead = [group[0] for group in todo.values()]
            inp = np.concatenate([context[lead], windows[lead]], axis=1)
            out, new_state = session.run(None, {"input": inp, "state": np.ascontiguousarray(state[:, lead, :]),
                                                "sr": sr})
            out = out.reshape(-1)
            for i, (key, group) in enumerate(todo.items()):
                row_state = new_state[:, i:i + 1, :].copy()
                for b in group:
                    probs[b, t], state[:, b:b + 1, :] = out[i], row_state
                if vad.TRAJECTORY_WINDOWS:
                    with vad._trajectory_lock:
                        vad.trajectory_stats["misses"] += 1
                        vad._trajectory[key] = (float(out[i]), row_state)
                        while len(vad._trajectory) > vad.TRAJECTORY_WINDOWS:
                            vad._trajectory.popitem(last=False)
        context = context_next
    return [probs[b, :c].copy() for b, c in enumerate(counts)]


def detect_episodes_batch(audios: list[np.ndarray], rate: int, *, threshold: float = vad.DEFAULT_THRESHOLD,
                          min_speech_ms: float = vad.MPE_MIN_SPEECH_MS, merge_gap_ms: float = vad.MPE_MERGE_GAP_MS,
                          mode: Literal["causal", "offline"] = "causal", hysteresis: float = vad.HYSTERESIS,
                          speech_pad_ms: int = 0) -> list[list[tuple[float, float]]]:
    """`detect_episodes` of each mono clip (all at `rate`), Silero run over the clips together.

    The same episodes as one call per clip: a causal clip whose samples a remembered live
    stream was given replays it (`detect_episodes` does that); the rest go through
    `batch_speech_probabilities` and the same episode rules.
    """
    if mode not in ("causal", "offline"):
        raise ValueError(f"unknown VAD mode {mode!r}; use 'causal' or 'offline'")
    if speech_pad_ms and mode == "causal":
        raise ValueError("speech_pad_ms applies to the offline mode only")
    out: list[list[tuple[float, float]] | None] = [None] * len(audios)
    pending: list[tuple[int, np.ndarray]] = []
    for i, audio in enumerate(audios):
        audio = np.asarray(audio, dtype=np.float32)
        if audio.ndim != 1:
            raise ValueError(f"detect_episodes expects mono audio, got shape {audio.shape}")
        audio_16k = resample(audio, rate, vad.VAD_RATE)
        if mode == "causal" and vad._recent_snapshot(audio_16k) is not None:
            out[i] = vad.detect_episodes(audio, rate, threshold=threshold, min_speech_ms=min_speech_ms,
                                     merge_gap_ms=merge_gap_ms, mode=mode, hysteresis=hysteresis)
        else:
            pending.append((i, audio_16k))
    for k in range(0, len(pending), BATCH_STREAMS):
        chunk = pending[k:k + BATCH_STREAMS]
        for (i, audio_16k), probs in zip(chunk, batch_speech_probabilities([a for _, a in chunk])):
            if mode == "causal":
                tracker = vad.EpisodeTracker(threshold=threshold, min_speech_ms=min_speech_ms, merge_gap_ms=merge_gap_ms,
                                         frame_s=vad.FRAME_S, hysteresis=hysteresis)
                for p in probs:
                    tracker.push_prob(float(p))
                tracker.finish()
                out[i] = tracker.episodes()
            else:
                out[i] = vad._offline_episodes(probs, len(audio_16k), threshold=threshold, min_speech_ms=min_speech_ms,
                                           merge_gap_ms=merge_gap_ms, hysteresis=hysteresis,
                                           speech_pad_ms=speech_pad_ms)
    return [eps if eps is not None else [] for eps in out]
