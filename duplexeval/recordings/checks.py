"""Audio checks every importer runs before a file becomes data or a recording: one place, every family.

Why: a file that is not what it claims still produces numbers. A model channel that is all
NaN wrote as silence and scored `safe 1.000`; an FDB input truncated to 28 samples, or a
pause event annotated past the end of the audio, scored as a perfect pause (TOR 0): the
scorer saw no speech because there was no audio to hear. So an importer (`data import`,
`import-recordings`) asks `audio_problem` about each file and refuses the file by name when
it answers:

- the rate is a whole number of Hz in [MIN_RATE, MAX_RATE] (and the one expected, when the
  caller requires one);
- every sample of every channel is finite (NaN and +/-inf refused, with the count and channel);
- the audio is at least `min_s` long (`TRUNCATION_SLACK_S` short is allowed: one frame of
  rounding), and every declared event ends inside it (same slack).

The checks read samples, never re-encode them; the families decide what `min_s` and the
events are (the end of a round's response window, a sample's annotated pause).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np

MIN_RATE = 8000
MAX_RATE = 192000
TRUNCATION_SLACK_S = 0.08


@dataclass(frozen=True)
class Event:
    """A declared span of the audio (an annotation, a response window): where it came from, where it ends."""
    name: str
    end_s: float


def rate_problem(rate: int, expected: int | None = None) -> str | None:
    if isinstance(rate, bool) or not isinstance(rate, (int, np.integer)) or not MIN_RATE <= int(rate) <= MAX_RATE:
        return f"sample rate {rate!r} Hz: expected a whole number of Hz in [{MIN_RATE}, {MAX_RATE}]"
    if expected is not None and int(rate) != int(expected):
        return f"sample rate {rate} Hz, expected {expected} Hz"
    return None


def finite_problem(audio: np.ndarray) -> str | None:
    """The channels holding NaN or inf samples, with their counts; None when every sample is finite."""
    a = np.asarray(audio)
    if a.ndim == 1:
        a = a[:, None]
    bad = ~np.isfinite(a)
    if not bad.any():
        return None
    parts = [f"channel {c}: {int(n)} of {len(a)} samples" for c, n in enumerate(bad.sum(axis=0)) if n]
    return "non-finite samples (NaN or inf): " + "; ".join(parts)


def length_problem(frames: int, rate: int, *, min_s: float = 0.0, events: Iterable[Event] = ()) -> str | None:
    have_s = frames / rate
    if frames == 0:
        return "no samples"
    if have_s < min_s - TRUNCATION_SLACK_S:
        return f"truncated: {have_s:.3f} s long ({frames} samples at {rate} Hz), at least {min_s:.3f} s expected"
    for ev in events:
        if ev.end_s > have_s + TRUNCATION_SLACK_S:
            return (f"{ev.name} ends at {ev.end_s:.3f} s, after the audio's end ({have_s:.3f} s, "
                    f"{frames} samples at {rate} Hz)")
    return None


def audio_problem(audio: np.ndarray, rate: int, *, expected_rate: int | None = None, min_s: float = 0.0,
                  events: Iterable[Event] = ()) -> str | None:
    """Why `audio` (frames, or frames x channels) at `rate` cannot be imported; None when it can."""
    return (rate_problem(rate, expected_rate) or finite_problem(audio)
            or length_problem(len(audio), int(rate), min_s=min_s, events=events))


def read_checked(path: Path, *, expected_rate: int | None = None, min_s: float = 0.0,
                 events: Iterable[Event] = ()) -> tuple[np.ndarray | None, int, str | None]:
    """(samples as float32 frames x channels, rate, None) or (None, rate, why the file is refused)."""
    import soundfile as sf

    try:
        audio, rate = sf.read(str(path), dtype="float32", always_2d=True)
    except (RuntimeError, OSError, ValueError) as exc:   # soundfile's LibsndfileError is a RuntimeError
        return None, 0, f"not a readable audio file ({exc})"
    problem = audio_problem(audio, int(rate), expected_rate=expected_rate, min_s=min_s, events=events)
    return (None, int(rate), problem) if problem else (audio, int(rate), None)
