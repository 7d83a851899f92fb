"""The MTR-DuplexBench authors' dialogue-feature rules, on ASR segments (the `authors` readings).

The authors' public scoring code (ZhangHe0918/MTR-DuplexBench, `Eval/`) reads the model's
speech as Whisper segments, each with its words; every rule below is re-expressed from
it in this project's words (docs/mtr.md, "Readings"), every number from the spec's
`metrics` block (`p`):

- *speaks in a window* (`speaking.counting: per-segment-inside`): judged segment by
  segment, counting only the words that lie wholly inside the window; the model speaks
  when one segment's inside words last `speaking.min_speech_s` or more, or number more
  than `speaking.min_words_exclusive`. Words of different segments never add up.
- *background speech* (`background_rule: authors-ipu`): the span from the event's start
  + `background_onset_delay_s` to its end (less `background_end_tolerance_s`) must lie
  inside one segment and be covered by its words without a gap over
  `background_max_word_gap_s`; a span outside every segment fails too.
- *latency* (`latency_mean: all-rounds-clamped`): the first segment still running at the
  anchor or after it, its start minus the anchor, clamped at 0; no such segment is 0.
- *backchannel frequency*: segments shorter than `backchannel_frequency.max_duration_s`
  with at most `backchannel_frequency.max_words` words, per second of segment time.

Segments here are the VAD episodes of the model's part, each transcribed on its own
(`duplexeval.benchmarks.mtr.score.model_words`): a segment is an episode's words, and it
runs from its first word's start to its last word's end, as whisper-timestamped aligns a
segment to its words. An episode without words is no segment (Whisper gives none).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence


@dataclass(frozen=True)
class Segment:
    """One ASR segment of the model's speech: its words, and the span they cover."""

    start: float
    end: float
    words: tuple[Any, ...]  # objects with text/start/end (features.W)


def segments_from(words_by_episode: Sequence[Sequence[Any]]) -> list[Segment]:
    """One segment per episode that has words, spanning its first to its last word."""
    out = []
    for ws in words_by_episode:
        ws = sorted(ws, key=lambda w: w.start)
        if ws:
            out.append(Segment(ws[0].start, max(w.end for w in ws), tuple(ws)))
    return sorted(out, key=lambda s: s.start)


def inside(seg: Segment, start: float, end: float) -> tuple[float, int]:
    """Seconds and count of the segment's words lying wholly inside [start, end].

    Compared and summed exactly as the authors' code does, in word order and without a
    tolerance: words of 0.45 + 0.1 + 0.45 s sum to just under 1.0 in floating point and
    stay under the threshold there too (the differential in docs/mtr.md relies on it)."""
    total, count = 0.0, 0
    for w in seg.words:
        if w.start >= start and w.end <= end:
            total += w.end - w.start
            count += 1
    return total, count


def speaks_per_segment(segments: Sequence[Segment], start: float, end: float, p: dict[str, Any]) -> bool:
    """The authors' `check_if_speak_at_the_same_time`: one segment must carry the speech."""
    sp = p["speaking"]
    for seg in segments:
        if seg.start >= end or seg.end <= start:
            continue
        total, count = inside(seg, start, end)
        if total >= float(sp["min_speech_s"]) or count > int(sp["min_words_exclusive"]):
            return True
    return False


def segment_amount(segments: Sequence[Segment], start: float, end: float) -> tuple[float, int]:
    """The largest in-window amount of any one segment (for a record's reason)."""
    best = (0.0, 0)
    for seg in segments:
        best = max(best, inside(seg, start, end))
    return best


def clamped_latency(segments: Sequence[Segment], anchor: float) -> float:
    """The authors' latency of a round: 0 when no segment runs at or after the anchor."""
    later = [s for s in segments if s.end > anchor]
    if not later:
        return 0.0
    return max(0.0, min(s.start for s in later) - anchor)


def covered_by_one_segment(segments: Sequence[Segment], start: float, end: float, p: dict[str, Any]) -> bool:
    """The authors' background check on [event start + delay, event end]."""
    lo = start + float(p["background_onset_delay_s"])
    tol = float(p["background_end_tolerance_s"])
    gap = float(p["background_max_word_gap_s"])
    if lo >= end:
        return False
    for seg in segments:
        if not (seg.start <= lo and end <= seg.end - tol):
            continue
        touching = sorted((w for w in seg.words if w.end > lo and w.start < end + tol), key=lambda w: w.start)
        if not touching or touching[0].start > lo or touching[-1].end < end - tol:
            continue
        if all(b.start - a.end <= gap for a, b in zip(touching, touching[1:])):
            return True
    return False


_PUNCT = re.compile(r"[^\w\s\[\]]")


def word_count(seg: Segment) -> int:
    """Words as the authors count them: the segment's text without punctuation, split on spaces."""
    return len(_PUNCT.sub("", " ".join(w.text for w in seg.words)).split())


def backchannel_frequency(segments: Sequence[Segment], p: dict[str, Any]) -> dict[str, Any]:
    """Short segments (backchannel-like) per second of the model's segment time, in one round."""
    q = p["backchannel_frequency"]
    short = sum(1 for s in segments if s.end - s.start < float(q["max_duration_s"]) and word_count(s) <= int(q["max_words"]))
    seconds = sum(s.end - s.start for s in segments)
    return {"count": short, "seconds": round(seconds, 6), "value": round(short / seconds, 6) if seconds > 0 else 0.0}
