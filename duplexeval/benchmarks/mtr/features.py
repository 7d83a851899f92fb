"""Dialogue-feature rules of MTR-DuplexBench, per round, on the model's ASR words.

Every parameter comes from the spec's `metrics` block (`p` below); where the paper text
is silent the rule is a reading (docs/mtr.md "Readings"): the authors' rules, on ASR
segments, live in `segments.py`; the corrected readings (the schema defaults) are here:

- `speaking.counting: pooled-midpoint`: the model *speaks* in a window when its
  in-window words (by midpoint) total at least `speaking.min_speech_s` seconds, or number
  more than `speaking.min_words_exclusive`; a reply whose speech began more than
  `speaking.max_onset_lead_s` before the anchor is `already_speaking`, not a response
  (the word rule alone lets a model that never stops talking pass a short user turn);
- success = it does not speak during the user turn and speaks in the response window:
  `reply_window: from-anchor` (ours) runs from the anchor (the user turn's end, or the
  interruption's end for `latency_from: interruption-end`) to the end of the round's
  window; `from-turn-start` (the paper's window) from the user turn's start, so words a
  reply began just before the turn ended count toward it;
- `pause_rule: silent-then-respond`: it also stays silent in [pause start, pause end +
  `pause_extension_s`];
- `background_rule: continuous-from-start` (background speech, and the user's
  backchannel, which has no published rule): one continuous speech unit (word gaps <=
  `background_max_word_gap_s`) across the event;
- `latency_s` = onset of the first VAD episode reaching into the response window - anchor
  (Whisper's word starts are too coarse; the first word's start without episodes), never
  clamped; a round without a response has none (never 0). The authors' clamped latency
  (`latency_clamped_s`) is recorded for every round beside it;
- `single_background_timing: measured` (ours) records the clamped latency and the
  backchannel frequency of single-feature background rounds as measured; `authors-zero`
  records 0 for both, which is what the authors' `eval_single_scenario_background` gets
  from `eval_3_scenarios`' "Unknown scenario type" branch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from duplexeval.benchmarks.mtr.format import Round
from duplexeval.benchmarks.mtr.segments import (
    Segment,
    clamped_latency,
    covered_by_one_segment,
    segment_amount,
    segments_from,
    speaks_per_segment,
)


@dataclass(frozen=True)
class W:
    """A word with times (duplexeval.judges.asr.Word has the same fields)."""

    text: str
    start: float
    end: float


def in_window(words: Sequence[Any], start: float, end: float) -> list[Any]:
    return [w for w in words if start <= (w.start + w.end) / 2 < end]


def speech_amount(words: Sequence[Any], start: float, end: float) -> tuple[float, int]:
    ws = in_window(words, start, end)
    return sum(max(0.0, w.end - w.start) for w in ws), len(ws)


def speaks(words: Sequence[Any], start: float, end: float, p: dict[str, Any]) -> bool:
    total, count = speech_amount(words, start, end)
    sp = p["speaking"]
    return total >= float(sp["min_speech_s"]) - 1e-9 or count > int(sp["min_words_exclusive"])


def speech_units(words: Sequence[Any], max_gap_s: float) -> list[tuple[float, float]]:
    """Words joined into continuous units while the gap between them is <= max_gap_s."""
    units: list[list[float]] = []
    for w in sorted(words, key=lambda w: w.start):
        if units and w.start - units[-1][1] <= max_gap_s + 1e-9:
            units[-1][1] = max(units[-1][1], w.end)
        else:
            units.append([w.start, w.end])
    return [(a, b) for a, b in units]


def continuous_across(words: Sequence[Any], start: float, end: float, max_gap_s: float) -> bool:
    return any(a <= start and b >= end for a, b in speech_units(words, max_gap_s))


def anchor_time(rnd: Round, p: dict[str, Any]) -> float:
    if p.get("latency_from", "turn-end") == "interruption-end":
        ev = rnd.event("interruption")
        if ev is not None:
            return ev.end
    return rnd.user.end


def response_onset(words: Sequence[Any], episodes: Sequence[tuple[float, float]] | None, anchor: float,
                   window_end: float) -> float:
    response = in_window(words, anchor, window_end)
    first_word = min(w.start for w in response)
    if episodes:
        reaching = [s for s, e in episodes if e > anchor and s < window_end and s <= first_word + 1e-9]
        if reaching:
            return min(reaching)
    return first_word


def reply_start(rnd: Round, anchor: float, p: dict[str, Any]) -> float:
    """Where the response window starts: the anchor (ours) or the user turn's start (the paper)."""
    return rnd.user.start if p.get("reply_window", "from-anchor") == "from-turn-start" else anchor


def authors_zero_timing(feature: str | None, single: bool, p: dict[str, Any]) -> bool:
    """A single-feature background round under `single_background_timing: authors-zero`."""
    return single and feature == "background" and p.get("single_background_timing", "measured") == "authors-zero"


def feature_outcome(rnd: Round, words: Sequence[Any], window_end: float, p: dict[str, Any],
                    episodes: Sequence[tuple[float, float]] | None = None,
                    segments: Sequence[Segment] | None = None, single: bool = True) -> dict[str, Any]:
    """The round's outcome: success | no_response | already_speaking | spoke_during_turn |
    spoke_in_pause | stopped_at_background | stopped_at_backchannel (with latency and a reason).

    The spec's readings choose the rules (docs/mtr.md, "Readings"): `speaking.counting`
    (pooled words by midpoint, ours; or the authors' per-segment rule on `segments`),
    `pause_rule` and `background_rule` (ours, or the authors'; `single` says the benchmark
    reads single-feature dialogues, where the authors score a pause or background round by
    that check alone). Both latencies are recorded: `latency_s` (ours: VAD onset, only
    when the model responds) and `latency_clamped_s` (the authors': every round, >= 0)."""
    feature = rnd.feature or "smooth"
    anchor = anchor_time(rnd, p)
    segs = list(segments) if segments is not None else segments_from([words])
    authors_count = p["speaking"].get("counting", "pooled-midpoint") == "per-segment-inside"

    def speaks_in(a: float, b: float) -> bool:
        return speaks_per_segment(segs, a, b, p) if authors_count else speaks(words, a, b, p)

    def amount(a: float, b: float) -> tuple[float, int]:
        return segment_amount(segs, a, b) if authors_count else speech_amount(words, a, b)

    lo = reply_start(rnd, anchor, p)
    response = in_window(words, anchor, window_end)
    responded = speaks_in(lo, window_end)
    latency = None
    if responded:
        # Under from-turn-start the reply may lie wholly before the anchor: its onset is then its first word's.
        onset_from = anchor if in_window(words, anchor, window_end) else lo
        latency = round(response_onset(words, episodes, onset_from, window_end) - anchor, 3)
    during = speaks_in(rnd.user.start, rnd.user.end)
    clamped = 0.0 if authors_zero_timing(feature, single, p) else round(clamped_latency(segs, anchor), 3)
    base = {"feature": feature, "latency_s": latency, "latency_clamped_s": clamped,
            "spoke_during_turn": during, "anchor_s": round(anchor, 3), "responded": responded}
    ev = rnd.event(feature) if feature in ("pause", "background", "backchannel") else None
    authors_pause = feature == "pause" and p.get("pause_rule", "silent-then-respond") == "authors"
    authors_ipu = feature in ("background", "backchannel") and p.get("background_rule", "continuous-from-start") == "authors-ipu"
    if ev is not None and single and (authors_pause or (authors_ipu and feature == "background")):
        out = _authors_single(feature, ev, segs, p, speaks_in)
        if not out["passed"] and feature == "background" and not responded:
            out["outcome"] = "no_response"  # the same 0 as theirs, named for what happened
        return {**base, **out}
    total, count = amount(lo, window_end)
    if not responded:
        return {**base, "outcome": "no_response", "passed": False,
                "reason": f"{count} words / {total:.2f} s in the response window [{lo:.2f}, {window_end:.2f}]"}
    lead = p["speaking"].get("max_onset_lead_s")
    if not authors_count and lead is not None and latency is not None and latency < -float(lead):
        return {**base, "outcome": "already_speaking", "passed": False,
                "reason": f"its speech began {-latency:.2f} s before {anchor:.2f}: already speaking, not a response"}
    if during:
        t, c = amount(rnd.user.start, rnd.user.end)
        return {**base, "outcome": "spoke_during_turn", "passed": False,
                "reason": f"{c} words / {t:.2f} s during the user turn [{rnd.user.start:.2f}, {rnd.user.end:.2f}]"}
    if feature == "pause" and ev is not None and not authors_pause:
        hi = ev.end + float(p["pause_extension_s"])
        if speaks_in(ev.start, hi):
            return {**base, "outcome": "spoke_in_pause", "passed": False,
                    "reason": f"spoke in the pause window [{ev.start:.2f}, {hi:.2f}]"}
    if feature in ("background", "backchannel") and ev is not None:
        gap = float(p["background_max_word_gap_s"])
        if authors_ipu and not covered_by_one_segment(segs, ev.start, ev.end, p):
            return {**base, "outcome": f"stopped_at_{feature}", "passed": False,
                    "reason": f"no one segment covers [{ev.start + float(p['background_onset_delay_s']):.2f}, {ev.end:.2f}]"}
        if not authors_ipu and not continuous_across(response, ev.start, ev.end, gap):
            return {**base, "outcome": f"stopped_at_{feature}", "passed": False,
                    "reason": f"no continuous speech unit (gaps <= {gap:g} s) across [{ev.start:.2f}, {ev.end:.2f}]"}
    return {**base, "outcome": "success", "passed": True, "reason": f"responded {latency:.2f} s after {anchor:.2f}"}


def _authors_single(feature: str, ev: Any, segs: Sequence[Segment], p: dict[str, Any], speaks_in: Any) -> dict[str, Any]:
    """Single-feature pause or background dialogues under the authors' readings: the round
    is scored by that one check (their `eval_single_scenario_*`), not by turn-taking."""
    if feature == "pause":
        hi = ev.end + float(p["pause_extension_s"])
        if speaks_in(ev.start, hi):
            return {"outcome": "spoke_in_pause", "passed": False, "reason": f"spoke in the pause window [{ev.start:.2f}, {hi:.2f}]"}
        return {"outcome": "success", "passed": True,
                "reason": f"silent in the pause window [{ev.start:.2f}, {hi:.2f}] (authors: no reply needed)"}
    lo = ev.start + float(p["background_onset_delay_s"])
    if covered_by_one_segment(segs, ev.start, ev.end, p):
        return {"outcome": "success", "passed": True, "reason": f"one segment covers [{lo:.2f}, {ev.end:.2f}] (authors)"}
    return {"outcome": f"stopped_at_{feature}", "passed": False, "reason": f"no one segment covers [{lo:.2f}, {ev.end:.2f}]"}
