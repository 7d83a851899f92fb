"""Full-Duplex-Bench v1.5 timing: stop latency and response latency from the two speakers' speech intervals.

v1.5 (arXiv 2507.23159) times two things per sample: how long the model keeps talking once
the user talks over it (stop latency) and how long after the user falls silent the model
starts (response latency). The paper leaves the interval arithmetic to its public code
(evaluation/get_timing.py); the rules here are that code's, in our own words:

1. Speech intervals come from a VAD on each channel (Silero at 16 kHz in their code; the
   caller gives the intervals, so the VAD is the caller's judge). Intervals of one speaker
   closer than a gap are merged: 0.6 s for the user, 0.5 s for the model. "Closer" is
   `next.start - previous.end <= gap`, so a gap of exactly 0.6 s is merged.
2. Stop intervals: walking both merged lists in time order, every stretch where a user
   interval and a model interval overlap by a positive length is one [start, end]
   (start = the later start, end = the earlier end); then the pointer of the interval that
   ends first moves on (on a tie, the model's). Of the stretches that end at the same
   millisecond only the shortest is kept. Its length is the stop latency.
3. Response gaps: for each user interval, the first model interval that starts strictly
   after the user interval ends gives [user end, model start]. When several user intervals
   lead to the same model start (same millisecond), the one ending last (the shortest gap)
   is kept. Its length is the response latency.

Times are rounded to the millisecond (3 decimals) as the published intervals are. Their
code forms no average over samples; what a report averages is the plug-in's reading.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

USER_MERGE_GAP_S = 0.6
MODEL_MERGE_GAP_S = 0.5

Interval = tuple[float, float]


def merge(intervals: Sequence[Interval], gap_s: float) -> list[Interval]:
    """One speaker's intervals sorted, with those separated by at most `gap_s` joined into one."""
    out: list[Interval] = []
    for start, end in sorted((float(s), float(e)) for s, e in intervals):
        if out and start - out[-1][1] <= gap_s:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _ms(t: float) -> int:
    return int(round(t * 1000))


def stop_intervals(user: Sequence[Interval], model: Sequence[Interval]) -> list[Interval]:
    """Overlaps of merged user and model speech, one per end millisecond (the shortest), ordered by end."""
    found: list[Interval] = []
    i = j = 0
    while i < len(user) and j < len(model):
        (us, ue), (ms, me) = user[i], model[j]
        start, end = max(us, ms), min(ue, me)
        if end > start:
            found.append((start, end))
        if ue < me:
            i += 1
        else:
            j += 1
    shortest: dict[int, Interval] = {}
    for start, end in found:
        key = _ms(end)
        if key not in shortest or end - start < shortest[key][1] - shortest[key][0]:
            shortest[key] = (start, end)
    return [(round(s, 3), round(e, 3)) for s, e in sorted(shortest.values(), key=lambda iv: iv[1])]


def response_gaps(user: Sequence[Interval], model: Sequence[Interval]) -> list[Interval]:
    """[user end, next model start] per model start (the latest user end wins), ordered by model start."""
    starts = [s for s, _ in model]
    best: dict[int, Interval] = {}
    for _, user_end in user:
        nxt = next((s for s in starts if s > user_end), None)
        if nxt is None:
            continue
        key = _ms(nxt)
        candidate = (round(user_end, 3), round(nxt, 3))
        if key not in best or candidate[0] > best[key][0]:
            best[key] = candidate
    return [best[k] for k in sorted(best, key=lambda k: best[k][1])]


@dataclass(frozen=True)
class Timing:
    """One sample's timing, as their latency_intervals.json holds it, plus the merged intervals it came from."""
    user: list[Interval]
    model: list[Interval]
    stop: list[Interval]
    response: list[Interval]

    @property
    def stop_latencies(self) -> list[float]:
        return [round(e - s, 3) for s, e in self.stop]

    @property
    def response_latencies(self) -> list[float]:
        return [round(e - s, 3) for s, e in self.response]

    def to_json(self) -> dict[str, list[list[float]]]:
        """Their file's two keys (latency_stop_list, latency_resp_list), for the differential and records."""
        return {"latency_stop_list": [list(iv) for iv in self.stop],
                "latency_resp_list": [list(iv) for iv in self.response]}


def sample_timing(user_speech: Sequence[Interval], model_speech: Sequence[Interval], *,
                  user_gap_s: float = USER_MERGE_GAP_S, model_gap_s: float = MODEL_MERGE_GAP_S) -> Timing:
    """Raw VAD intervals of input.wav (user) and output.wav (model) -> the sample's stop and response intervals."""
    user = merge(user_speech, user_gap_s)
    model = merge(model_speech, model_gap_s)
    return Timing(user, model, stop_intervals(user, model), response_gaps(user, model))
