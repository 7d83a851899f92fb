"""Full-Duplex-Bench v1.0's metric rules, as pure functions over word lists and time intervals.

Each rule is the one the authors' public evaluation code applies (DanielLin94144/Full-Duplex-Bench,
folder v1_v1.5/evaluation/, cited by file and line in docs/fdb.md), written here in our own
words so it can be pinned at its boundaries with hand-made timelines (tests/test_fdb_metrics.py).
Every threshold is a parameter: the callers read it from the benchmark spec.

Words are `(text, start_s, end_s)`-like objects with `.text`, `.start` and `.end` (the ASR's
`Word`), on the recording's time axis. Intervals are `(start_s, end_s)` tuples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np


@dataclass(frozen=True)
class TurnRule:
    """When the model's words count as taking the turn (pause, smooth turn-taking, interruption).

    No words: no turn. Words spanning less than `min_span_s` (first start to last end) take
    the turn only when there are more than `max_short_words` of them; words spanning
    `min_span_s` or more always do. The authors' thresholds: 1 s and 3 words."""

    min_span_s: float = 1.0
    max_short_words: int = 3


def words_span(words: Sequence[Any]) -> float:
    """First word's start to last word's end (0 with no words). A last word without an end
    falls back to its start, as the authors' pause-handling rule does."""
    if not words:
        return 0.0
    last_end = words[-1].end if words[-1].end is not None else words[-1].start
    return float(last_end) - float(words[0].start)


def takes_turn(words: Sequence[Any], rule: TurnRule) -> bool:
    """The turn-over decision of one sample (TOR's numerator counts the True ones)."""
    if not words:
        return False
    if words_span(words) < rule.min_span_s:
        return len(words) > rule.max_short_words
    return True


def latency(words: Sequence[Any], anchor_s: float, negative: str = "clamp-zero") -> float:
    """Seconds from `anchor_s` to the first word's start. A reply that began before the anchor
    is 0 under `clamp-zero` (the authors') and keeps its sign under `signed` (a reading)."""
    if not words:
        raise ValueError("latency needs at least one word: only a sample that took the turn has one")
    value = float(words[0].start) - float(anchor_s)
    if negative == "clamp-zero":
        return max(value, 0.0)
    if negative == "signed":
        return value
    raise ValueError(f"unknown latency reading {negative!r}; use 'clamp-zero' or 'signed'")


def words_overlapping(words: Sequence[Any], start_s: float, end_s: float) -> list[Any]:
    """The words the authors' backchannel rule assigns to the VAD segment [start_s, end_s].

    A word counts when it lies inside the segment, or begins at or before the segment's end
    and ends after it, or begins at or before the segment's start and ends after it. So a word
    touching the segment's end from the right counts and one touching its start from the left
    does not (the authors' comparisons, kept as they are). A word without a start is skipped;
    one without an end is skipped when it starts before the segment's end, else read as a
    point at its start."""
    out = []
    for w in words:
        s, e = w.start, w.end
        if s is None or (e is None and s < end_s):
            continue
        if e is None:
            e = s
        inside = s >= start_s and e <= end_s
        over_end = s <= end_s and e > end_s
        over_start = s <= start_s and e > start_s
        if inside or over_end or over_start:
            out.append(w)
    return out


@dataclass(frozen=True)
class BackchannelRule:
    """The authors' backchannel thresholds: a VAD segment longer than `long_segment_s` is the
    model formally speaking; a short one with more than `max_words` words, or one of at least
    `short_segment_s` seconds, or one under it with more than `max_short_words` words, takes
    the turn."""

    long_segment_s: float = 3.0
    max_words: int = 3
    short_segment_s: float = 1.0
    max_short_words: int = 2


@dataclass(frozen=True)
class BackchannelOutcome:
    took_turn: bool
    backchannels: list[tuple[float, float]]   # the short segments the authors count as backchannels
    decisions: list[dict[str, Any]]            # one per VAD segment examined, for the record


def segment_takes_turn(duration_s: float, n_words: int, rule: BackchannelRule) -> bool:
    """The turn decision of one short (not long) VAD segment."""
    if n_words > rule.max_words:
        return True
    if duration_s < rule.short_segment_s:
        return n_words > rule.max_short_words
    return True


def backchannel_outcome(segments: Sequence[tuple[float, float]], words: Sequence[Any], rule: BackchannelRule,
                        tor_reading: str = "last-segment") -> BackchannelOutcome:
    """TOR and the backchannel segments of one sample.

    Segments are examined in time order. A long segment sets the turn-over flag and ends the
    examination (segments after it are neither examined nor counted). Every short segment
    examined is counted as a backchannel, whatever its own decision. The flag: under
    `last-segment` (the authors' code) each short segment overwrites it with its own decision,
    so the last one examined decides; under `any-segment` (a reading) any segment that takes
    the turn sets it for good."""
    if tor_reading not in ("last-segment", "any-segment"):
        raise ValueError(f"unknown backchannel TOR reading {tor_reading!r}; use 'last-segment' or 'any-segment'")
    took = False
    backchannels: list[tuple[float, float]] = []
    decisions: list[dict[str, Any]] = []
    for start, end in segments:
        duration = end - start
        if duration > rule.long_segment_s:
            took = True
            decisions.append({"segment": [round(start, 3), round(end, 3)], "long": True, "takes_turn": True})
            break
        said = words_overlapping(words, start, end)
        own = segment_takes_turn(duration, len(said), rule)
        took = own if tor_reading == "last-segment" else (took or own)
        decisions.append({"segment": [round(start, 3), round(end, 3)], "long": False, "words": len(said),
                          "takes_turn": own})
        backchannels.append((start, end))
    return BackchannelOutcome(took, backchannels, decisions)


def backchannel_frequency(backchannels: Sequence[tuple[float, float]], duration_s: float) -> float:
    """Backchannels per second of the output (the authors divide by the whole output's length)."""
    if duration_s <= 0:
        raise ValueError(f"backchannel frequency needs a positive output duration, got {duration_s}")
    return len(backchannels) / duration_s


def backchannel_histogram(backchannels: Sequence[tuple[float, float]], duration_s: float, bin_s: float,
                          epsilon: float) -> np.ndarray:
    """The sample's backchannel distribution over time: int(duration / bin_s) + 1 bins, each
    backchannel adding one to every bin from int(start / bin_s) to int(end / bin_s) inclusive
    (bins past the last dropped), then `epsilon` added to every bin and the whole normalised."""
    bins = np.zeros(int(duration_s / bin_s) + 1, dtype=np.float64)
    for start, end in backchannels:
        for i in range(int(start / bin_s), int(end / bin_s) + 1):
            if i < len(bins):
                bins[i] += 1
    bins = bins + epsilon
    return bins / bins.sum()


def resize_reference(reference: Sequence[float], n: int) -> np.ndarray:
    """The reference distribution stretched onto `n` bins: both spread over [0, 1] and the
    reference linearly interpolated at the sample's bin positions (not renormalised: the
    divergence normalises both sides)."""
    ref = np.asarray(reference, dtype=np.float64)
    if len(ref) == 0:
        raise ValueError("empty reference distribution")
    if len(ref) == 1:
        return np.full(n, ref[0])
    return np.interp(np.linspace(0.0, 1.0, n), np.linspace(0.0, 1.0, len(ref)), ref)


def jensen_shannon(p: Sequence[float] | np.ndarray, q: Sequence[float] | np.ndarray, form: str = "distance") -> float:
    """Jensen-Shannon between two histograms, each normalised to sum 1, natural logarithm.

    `distance` is the square root of the divergence: what scipy's `jensenshannon`, which the
    authors call, returns and what their table reports as "JSD". `divergence` (a reading) is
    the divergence itself."""
    a = np.asarray(p, dtype=np.float64)
    b = np.asarray(q, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"histograms of different lengths: {a.shape} and {b.shape}")
    a, b = a / a.sum(), b / b.sum()
    m = (a + b) / 2

    def kl(x: np.ndarray) -> float:
        keep = x > 0
        return float(np.sum(x[keep] * np.log(x[keep] / m[keep])))

    divergence = max((kl(a) + kl(b)) / 2, 0.0)
    if form == "distance":
        return math.sqrt(divergence)
    if form == "divergence":
        return divergence
    raise ValueError(f"unknown Jensen-Shannon form {form!r}; use 'distance' or 'divergence'")


def backchannel_jsd(backchannels: Sequence[tuple[float, float]], duration_s: float, reference: Sequence[float],
                    *, bin_s: float, epsilon: float, none_value: float, form: str) -> float:
    """The sample's JSD against its reference distribution; `none_value` (the authors': 1)
    when the model made no backchannel at all."""
    if not backchannels:
        return float(none_value)
    hist = backchannel_histogram(backchannels, duration_s, bin_s, epsilon)
    return jensen_shannon(hist, resize_reference(reference, len(hist)), form)
