"""What every ASR backend returns: a `Transcript` of `Word`s with times in seconds.

Its own module so that `duplexeval.judges.asr` (the interface and cache) and the
backends in `duplexeval.judges.asr_backends` both import it without importing each
other (issue 13, item 15).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Word:
    text: str
    start: float
    end: float


@dataclass(frozen=True)
class Transcript:
    text: str
    words: list[Word]
    backend: str
    model: str
    from_cache: bool = field(default=False, compare=False)
    # The decoder's own segments as [first word, end word) index ranges into `words`, for a
    # backend that has them (the Whisper ones); None when it has none, or for a cached entry
    # written before they were kept. MTR's `segment_source: whole-channel-whisper` reads them.
    segments: list[tuple[int, int]] | None = field(default=None, compare=False)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("from_cache")
        if data["segments"] is None:
            data.pop("segments")
        else:
            data["segments"] = [list(r) for r in data["segments"]]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any], *, from_cache: bool = False) -> "Transcript":
        words = [Word(str(w["text"]), float(w["start"]), float(w["end"])) for w in data["words"]]
        segs = data.get("segments")
        segments = [(int(a), int(b)) for a, b in segs] if isinstance(segs, list) else None
        return cls(str(data["text"]), words, str(data["backend"]), str(data["model"]), from_cache=from_cache,
                   segments=segments)


def segment_ranges(counts: list[int]) -> list[tuple[int, int]]:
    """[first, end) word index ranges of consecutive segments holding `counts` words each."""
    out, at = [], 0
    for n in counts:
        out.append((at, at + n))
        at += n
    return out


def clean_words(words: list[tuple[str, float, float]], duration_s: float) -> list[Word]:
    """The adapter contract every backend output passes through.

    Words keep their order; empty words are dropped; times are rounded to the
    millisecond, clamped into [0, duration] and made monotonic (a word never starts
    before the previous one, never ends before it starts). Aligners on short or odd
    audio (and random test weights) can emit times past the clip or out of order;
    the scorers rely on words inside the clip, in order.
    """
    out: list[Word] = []
    last_start = 0.0
    limit = max(0.0, round(float(duration_s), 3))
    for text, start, end in words:
        text = str(text).strip()
        if not text:
            continue
        s = min(max(round(float(start), 3), last_start), limit)
        e = min(max(round(float(end), 3), s), limit)
        out.append(Word(text, s, e))
        last_start = s
    return out
