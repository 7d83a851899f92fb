"""What a session through a network API did to time: send lateness, receive jitter, clock offset.

All times are on the bridge's monotonic clock, with 0 at the arrival of input frame 0
(the harness sends frame n at n frame periods on its own wall clock, so frame n's
append is due at n * frame_ms). docs/models.md, "Reading latency through a network
API", says how to read each figure.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def _ms(x: float | None) -> float | None:
    return None if x is None else round(x * 1000.0, 2)


@dataclass
class SessionTiming:
    frame_s: float
    t0: float | None = None
    lateness: list[float] = field(default_factory=list)      # per append: left - deadline (s), negative = early
    gaps: list[float] = field(default_factory=list)          # between consecutive audio deltas of one response (s)
    offsets: list[float] = field(default_factory=list)       # stream time at arrival - the event's audio position (s)
    _last_delta: float | None = None
    deltas: int = 0
    audio_in_s: float = 0.0
    audio_out_s: float = 0.0

    def now(self) -> float:
        return time.monotonic()

    def stream_time(self, t: float | None = None) -> float:
        """Seconds since input frame 0 arrived (0 before it)."""
        t = self.now() if t is None else t
        return 0.0 if self.t0 is None else t - self.t0

    def frame_arrived(self, n: int, t: float) -> None:
        if self.t0 is None or n == 0:
            self.t0 = t

    def append_sent(self, n: int, left: float, seconds: float) -> float:
        """Records how late frame n's append left against its deadline; returns it (s)."""
        late = (left - self.t0) - n * self.frame_s if self.t0 is not None else 0.0
        self.lateness.append(late)
        self.audio_in_s += seconds
        return late

    def delta_arrived(self, t: float, seconds: float) -> None:
        if self._last_delta is not None:
            self.gaps.append(t - self._last_delta)
        self._last_delta = t
        self.deltas += 1
        self.audio_out_s += seconds

    def response_ended(self) -> None:
        self._last_delta = None  # the silence between responses is not jitter

    def server_position(self, t: float, audio_ms: float) -> float:
        """An event naming a position in our input audio (speech started/stopped): the offset (s)."""
        off = self.stream_time(t) - audio_ms / 1000.0
        self.offsets.append(off)
        return off

    def summary(self) -> dict:
        lat = self.lateness
        return {
            "appends": len(lat),
            "audio_in_s": round(self.audio_in_s, 3),
            "audio_out_s": round(self.audio_out_s, 3),
            "send_lateness_ms": {"p50": _ms(_pct(lat, 0.5)), "p95": _ms(_pct(lat, 0.95)), "max": _ms(max(lat) if lat else None)},
            "receive": {"deltas": self.deltas, "gap_p50_ms": _ms(_pct(self.gaps, 0.5)), "gap_p95_ms": _ms(_pct(self.gaps, 0.95)),
                        "jitter_ms": _ms(statistics.pstdev(self.gaps) if len(self.gaps) > 1 else None)},
            "clock_offset_ms": {"events": len(self.offsets), "min": _ms(min(self.offsets) if self.offsets else None),
                                "median": _ms(statistics.median(self.offsets) if self.offsets else None)},
        }


__all__ = ["SessionTiming"]
