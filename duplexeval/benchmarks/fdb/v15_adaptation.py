"""Full-Duplex-Bench v1.5 adaptation: the model's speech before vs after the overlap event, and vs the clean run.

v1.5 (arXiv 2507.23159) asks whether a model changes how it speaks once something talks
over it: speaking rate, pitch, loudness and perceived quality of its speech before the
overlap ends ("pre"), after it ("post"), and in its reply to the same turn without the
overlap ("clean"). Where the paper is silent its public code decides
(evaluation/eval_general_before_after.py, run with the config its evaluate.py passes);
these are that code's rules, in our own words:

- The split time is word-aligned on the model's ASR words (sorted by start): the start of
  the first word that starts after the overlap's end, or of the word during which it ends;
  when every word ended before, the end of the last word; no words: the overlap's end.
  It is then clamped into the recording. Audio before it is "pre", from it on "post";
  a word belongs to "pre" when it ends at or before the split, else to "post".
- Speaking rate (words per minute): the word count over the span from the first word's
  start to the last word's end (in the ASR's order), zero when that span is not positive.
- Silence is removed before the acoustic measures: the speech intervals of the segment
  (Silero VAD, threshold 0.5, 60 ms minimum speech, 50 ms minimum silence in their code;
  given here by the caller) are concatenated; a segment with none is kept whole.
- Intensity: frames of 10 ms without overlap, only whole frames, each frame's RMS in dB
  (20 log10, floored at 1e-10), then mean and sample standard deviation (ddof 1). Their
  code tries Praat (parselmouth) first, then librosa; their requirements list neither,
  but NeMo (required for their ASR) installs librosa, so librosa's RMS is what ran: the
  rule here computes what librosa's does.
- Over samples, each side's values are averaged after a trim: with at least 3 values,
  those outside the 5th..95th percentile (numpy's linear interpolation) are dropped.
  Their aggregate covers "pre" and "post" only; "clean" enters the paired tests
  (v15_stats).

Pitch (librosa's pYIN) and UTMOSv2 need packages outside this project's lock and are not
computed here (docs/fdb.md, "v1.5").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from duplexeval.benchmarks.fdb.layout import Word

TRIM_PROPORTION = 0.05
TRIM_MIN_VALUES = 3
FRAME_S = 0.01


def split_time(overlap_end: float, words: Sequence[Word], duration_s: float) -> float:
    """Where "pre" ends and "post" begins, aligned to the model's words (rules in the module docstring)."""
    spans = sorted((w.start, w.end if w.end is not None else w.start) for w in words)
    t = overlap_end
    if spans:
        t = spans[-1][1]
        for start, end in spans:
            if overlap_end < start or start <= overlap_end < end:
                t = start
                break
    return max(0.0, min(duration_s, t))


def partition(words: Sequence[Word], split: float) -> tuple[list[Word], list[Word]]:
    """(pre, post): a word is "pre" when it ends at or before the split."""
    pre = [w for w in words if w.end is not None and w.end <= split]
    post = [w for w in words if not (w.end is not None and w.end <= split)]
    return pre, post


def speech_span(words: Sequence[Word]) -> float:
    """First word's start to last word's end, in the ASR's order; 0 when negative or no words."""
    if not words or words[-1].end is None:
        return 0.0
    span = words[-1].end - words[0].start
    return span if span >= 0 else 0.0


def words_per_minute(words: Sequence[Word]) -> float:
    span = speech_span(words)
    return len(words) / (span / 60.0) if span > 0 else 0.0


def slice_audio(audio: np.ndarray, rate: int, start_s: float, end_s: float) -> np.ndarray:
    """Samples [round(start*rate), round(end*rate)), clamped; empty when the end is not after the start."""
    n = len(audio)
    a = max(0, min(n, int(round(start_s * rate))))
    b = max(0, min(n, int(round(end_s * rate))))
    return audio[a:b] if b > a else audio[:0]


def speech_only(audio: np.ndarray, rate: int, speech: Sequence[tuple[float, float]]) -> np.ndarray:
    """The segment's speech intervals (seconds from its start) concatenated; the whole segment when none."""
    if not speech:
        return audio
    return np.concatenate([slice_audio(audio, rate, s, e) for s, e in speech])


def intensity_db(audio: np.ndarray, rate: int, frame_s: float = FRAME_S) -> tuple[float, float] | None:
    """(mean, sample std) of per-frame RMS dB over whole non-overlapping frames; None for no audio.

    Audio shorter than one frame: librosa refuses it and their code falls back to its own
    loop, whose one partial frame gives sqrt(mean(x^2) + 1e-10) in dB and a std of 0.
    """
    n = max(1, int(round(rate * frame_s)))
    frames = len(audio) // n
    if len(audio) == 0:
        return None
    if frames == 0:
        x = np.asarray(audio, dtype=np.float64)
        return float(20.0 * np.log10(np.sqrt(np.mean(x ** 2) + 1e-10))), 0.0
    blocks = np.asarray(audio[: frames * n], dtype=np.float64).reshape(frames, n)
    db = 20.0 * np.log10(np.maximum(np.sqrt(np.mean(blocks ** 2, axis=1)), 1e-10))
    if frames == 1:
        return float(db[0]), 0.0
    return float(np.mean(db)), float(np.std(db, ddof=1))


@dataclass(frozen=True)
class Segment:
    """What one side ("pre", "post", "clean") of one sample measured."""
    wpm: float
    speech_dur_s: float
    words: int
    mean_intensity: float | None
    std_intensity: float | None

    def to_json(self) -> dict[str, float | int | None]:
        return {"wpm": self.wpm, "speech_dur_s": self.speech_dur_s, "words": self.words,
                "mean_intensity": self.mean_intensity, "std_intensity": self.std_intensity}


def measure(audio: np.ndarray, rate: int, words: Sequence[Word],
            speech: Sequence[tuple[float, float]]) -> Segment | None:
    """One segment's measures: rate from its words, intensity from its speech (intervals relative to the segment).

    None for a segment without audio (a split at 0 leaves "pre" empty): their code then
    records no measure at all for that side, not a zero.
    """
    if len(audio) == 0:
        return None
    kept = speech_only(audio, rate, speech)
    if len(kept) == 0:
        return None
    level = intensity_db(kept, rate)
    return Segment(words_per_minute(words), speech_span(words), len(words),
                   level[0] if level else None, level[1] if level else None)


def trimmed_mean(values: Sequence[float | None]) -> tuple[float | None, int, int]:
    """(mean after the percentile trim, values kept, values given without None/NaN)."""
    vals = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    if not vals:
        return None, 0, 0
    kept = vals
    if len(vals) >= TRIM_MIN_VALUES:
        lo = float(np.percentile(vals, TRIM_PROPORTION * 100.0))
        hi = float(np.percentile(vals, 100.0 - TRIM_PROPORTION * 100.0))
        kept = [v for v in vals if lo <= v <= hi]
    return (sum(kept) / len(kept) if kept else None), len(kept), len(vals)
