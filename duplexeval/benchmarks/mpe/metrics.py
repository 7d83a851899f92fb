"""Duplex-MPE scoring rules as pure functions on a timeline and VAD episodes.

Nothing here reads files, runs a model or holds a metric constant: every threshold comes
from the benchmark spec's `metrics` block (passed as `params`), every time is seconds on
the recording's clock, and an episode is a (start_s, end_s) pair from the causal VAD on
the model channel (bursts < vad.min_speech_ms dropped, then gaps < vad.merge_gap_ms
merged; duplexeval.judges.vad). The rules, with their sources:

- Start (Table 2, §3.4, App. A3.2): Aria silent when T ends, then an onset within
  start.window_s. Outcomes: fresh (pass) / already_speaking / miss.
- Response presence (Table 9) = fresh + already_speaking.
- Shush (Table 2, App. A3.3): an N1/N2/N3 window passes with no speech, or speech whose
  transcript a judge calls a backchannel; content fails however short; speech with an
  empty transcript fails (shush.empty_asr_fails). A window without speech passes with no
  ASR or judge call (VAD-gated judging).
- Stop (§3.5, App. A4.1): eligible = quiet during N4Q, an onset in the gap before N4R,
  still talking when N4R starts; everything else is excluded, not failed. Pass = silent
  at N4R start + stop.deadline_s and silent until N4R end + stop.tail_s.

Boundary conventions (documented in docs/mpe.md): an onset exactly at the end of the
Start window counts (<=); an episode that ends exactly when T ends is not "already
speaking"; an episode that starts exactly when T ends is a fresh onset after 0 s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

Episode = tuple[float, float]


@dataclass(frozen=True)
class Outcome:
    """One rule's decision: `passed` is None when the unit is excluded (Stop)."""

    outcome: str
    passed: bool | None
    reason: str
    times: dict[str, float] = field(default_factory=dict)


# Table 9: presence counts fresh starts and speech already running at T's end.
PRESENCE_OUTCOMES = ("fresh", "already_speaking")


def overlapping(episodes: Sequence[Episode], start: float, end: float) -> list[Episode]:
    """Episodes with any speech inside [start, end)."""
    return [ep for ep in episodes if ep[0] < end and ep[1] > start]


def speaking_at(episodes: Sequence[Episode], t: float) -> Episode | None:
    """The episode running across instant t (started before it, ends after it), if any."""
    return next((ep for ep in episodes if ep[0] < t < ep[1]), None)


def first_onset(episodes: Sequence[Episode], start: float, end: float, *, include_end: bool) -> Episode | None:
    """The first episode starting in [start, end] (or [start, end) when not include_end)."""
    for ep in sorted(episodes):
        if ep[0] >= start and (ep[0] <= end if include_end else ep[0] < end):
            return ep
    return None


# -- Start and presence -------------------------------------------------------------------

def start_outcome(t_end: float, episodes: Sequence[Episode], params: dict[str, Any]) -> Outcome:
    """Start for one T turn ending at `t_end`; params = spec["metrics"]."""
    window_s = float(params["start"]["window_s"])
    running = speaking_at(episodes, t_end)
    if running is not None:
        return Outcome("already_speaking", False,
                       f"Aria was already speaking when T ended (episode from {running[0]:.3f} s); "
                       "an onset before T ends is not a decision to answer (App. A3.2)",
                       {"episode_start": running[0], "episode_end": running[1]})
    onset = first_onset(episodes, t_end, t_end + window_s, include_end=True)
    if onset is None:
        return Outcome("miss", False, f"no onset within {window_s:g} s of T's end", {})
    latency = onset[0] - t_end
    return Outcome("fresh", True, f"fresh onset {latency:.3f} s after T ended (window {window_s:g} s)",
                   {"onset": onset[0], "latency_s": latency, "episode_end": onset[1]})


def response_episode(t_end: float, episodes: Sequence[Episode], start: Outcome) -> Episode | None:
    """The episode judged for Answer: the fresh onset's, or the one running across T's end."""
    if start.outcome == "fresh":
        return (start.times["onset"], start.times["episode_end"])
    if start.outcome == "already_speaking":
        return (start.times["episode_start"], start.times["episode_end"])
    return None


def response_span(first: Episode, later_starts: Sequence[float], episodes: Sequence[Episode],
                  params: dict[str, Any]) -> tuple[list[Episode], float]:
    """The episodes of the whole reply to T, and the time its words must lie before.

    `later_starts` are the start times of the turns after T, in order. answer.response_end
    "next-turn" (default): the reply runs from its first episode to the start of the first
    turn that begins after the reply began. For a reply that began in the gap after T that
    is the next turn's start, which the scheduler places only after yield_silence_s (2 s)
    of Aria silence (§3.4) - so "Hmm, let me think." ... "The taco place." is one reply.
    A late reply, begun after the next turn had already started (T ends 10.0, N2 plays from
    10.5, "Hmm, let me think." 11.0-11.8, "The taco place, nine dollars." 12.8-14.5), runs
    to the turn after that one, which again waits for Aria's 2 s of silence: the filler
    alone is never what is judged (issue 24).
    "episode": the first speech episode alone (a pause >= merge_gap ends the reply).
    """
    mode = params["answer"].get("response_end", "next-turn")
    if mode == "episode":
        return [first], float("inf")
    if mode != "next-turn":
        raise ValueError(f"unknown answer.response_end {mode!r}; use 'next-turn' or 'episode'")
    until = min((s for s in later_starts if s > first[0]), default=float("inf"))
    return [ep for ep in sorted(episodes) if first[0] <= ep[0] < until], until


ALREADY_SPEAKING_READINGS = ("words-after-t", "whole-reply")


def answer_from(t_end: float, start: Outcome, params: dict[str, Any]) -> float:
    """Where the judged words of a reply to T begin (answer.already_speaking).

    Only an `already_speaking` reply can hold words from before T ended. "words-after-t"
    (ours): what it said before T ended was not said to T, so only the words after T's end
    (by midpoint) are judged. "whole-reply": the whole reply, from its episode's start, is
    judged (a model that began "The taco place..." while T was still being asked is judged
    on all of it). The paper does not say which (App. A3.2 names only Start's rule).
    """
    mode = params["answer"].get("already_speaking", ALREADY_SPEAKING_READINGS[0])
    if mode not in ALREADY_SPEAKING_READINGS:
        raise ValueError(f"unknown answer.already_speaking {mode!r}; use "
                         f"{' or '.join(map(repr, ALREADY_SPEAKING_READINGS))}")
    return t_end if start.outcome == "already_speaking" and mode == "words-after-t" else float("-inf")


T_REPLY_READINGS = ("counts-against-window", "attributed-to-t")


def t_reply_attributed(params: dict[str, Any]) -> bool:
    """shush.attribute_t_response: whether a Start-passing reply's spill-over is forgiven.

    "counts-against-window" (the text read literally): the reply's speech in a later
    silence window fails that window like any other speech. "attributed-to-t": it belongs
    to T and is left out of every window it spills into. docs/mpe.md has the timeline that
    separates them and the published counts that bear on the choice.
    """
    mode = params["shush"].get("attribute_t_response", T_REPLY_READINGS[0])
    if mode not in T_REPLY_READINGS:
        raise ValueError(f"unknown shush.attribute_t_response {mode!r}; use {' or '.join(map(repr, T_REPLY_READINGS))}")
    return mode == "attributed-to-t"


def answer_outcome(verdict_value: Any, parsed_ok: bool, transcript: str, params: dict[str, Any]) -> Outcome:
    """Answer for one T with speech (§3.5): empty transcript or unparseable verdict = incorrect.

    The judge's verdict vocabulary is the judge specs' ("correct" / "incorrect").
    """
    if params["answer"]["unparseable_counts_as"] != "incorrect":
        raise ValueError("Duplex-MPE counts unparseable answer verdicts as incorrect (§3.5)")
    if not transcript.strip():
        return Outcome("incorrect", False, "speech detected but the transcript is empty", {})
    if not parsed_ok:
        return Outcome("incorrect", False, "the judge's verdict was unparseable (counts as incorrect, §3.5)", {})
    if verdict_value == "correct":
        return Outcome("correct", True, "the judge matched the reply to the gold answer", {})
    return Outcome("incorrect", False, "the judge did not match the reply to the gold answer", {})


# -- Shush ------------------------------------------------------------------------------

def shush_window(turn_start: float, turn_end: float, next_start: float | None, scene_end: float,
                 params: dict[str, Any]) -> tuple[float, float]:
    """The window of one N1/N2/N3 turn.

    shush.window "turn+gap" (default, and the paper's reading): from the turn's start to
    the next turn's start, so speech in the gap after a silence turn counts against it;
    the last turn's window runs to the end of the scene (the scheduler's tail).
    "turn": the turn's own audio only.
    """
    mode = params["shush"].get("window", "turn+gap")
    if mode == "turn":
        return (turn_start, turn_end)
    if mode == "turn+gap":
        return (turn_start, next_start if next_start is not None else max(scene_end, turn_end))
    raise ValueError(f"unknown shush.window {mode!r}; use 'turn' or 'turn+gap'")


STRADDLE_READINGS = ("by-words", "any-overlap")


def window_speech(speech: Sequence[Episode], start: float, end: float,
                  word_mids: dict[Episode, list[float] | None], min_speech_s: float,
                  params: dict[str, Any]) -> list[Episode]:
    """The episodes that count as speech in the window [start, end) (shush.straddle).

    `word_mids[ep]` are the midpoints of the episode's words on the recording's clock
    (None: the ASR gave text without word times; []: it heard no words at all).
    "by-words" (default): a window holds an episode's speech where it holds the episode's
    words (claimed by midpoint, as transcripts are); an episode with no words at all
    counts where at least min_speech_s of it (the VAD's own shortest speech) lies, and in
    the window holding its midpoint (so a short one split by an edge is not lost). So an
    "Mm-hmm" whose episode begins 50 ms before N2's window ends, with its word after the
    edge, is heard - and judged - in the next window, not failed as unreadable in N2's:
    the verdict does not depend on where an episode's first frames fall.
    "any-overlap": any overlap is speech in the window; with no words claimed there the
    window fails as unreadable speech (the rule before issue 24).
    """
    mode = params["shush"].get("straddle", STRADDLE_READINGS[0])
    if mode not in STRADDLE_READINGS:
        raise ValueError(f"unknown shush.straddle {mode!r}; use {' or '.join(map(repr, STRADDLE_READINGS))}")
    if mode == "any-overlap":
        return list(speech)
    out = []
    for ep in speech:
        mids = word_mids.get(ep)
        if mids is None:
            out.append(ep)  # text without word times: the whole episode, wherever it overlaps
        elif mids:
            if any(start <= m < end for m in mids):
                out.append(ep)
        elif min(ep[1], end) - max(ep[0], start) >= min_speech_s or start <= (ep[0] + ep[1]) / 2 < end:
            out.append(ep)  # no words: where min_speech_s of it lies, and where its middle lies
    return out


def shush_window_outcome(speech: Sequence[Episode], transcript: str | None, verdict_value: Any,
                         parsed_ok: bool, params: dict[str, Any]) -> Outcome:
    """Shush for one window given its speech, the in-window transcript and the judge's verdict.

    Call order is the point (VAD-gated judging, App. A3.3): with no speech, pass before
    any ASR; with speech and an empty transcript, decide before any judge call. The
    verdict vocabulary is the judge specs' ("backchannel" / "content").
    """
    if not speech:
        return Outcome("silent", True, "no speech in the window (no ASR or judge call)", {})
    if transcript is None:
        raise ValueError("shush_window_outcome: speech in the window needs its transcript")
    if not transcript.strip():
        if params["shush"]["empty_asr_fails"]:
            return Outcome("unreadable_speech", False,
                           "VAD heard speech but ASR returned nothing (fails, Table 10)", {})
        return Outcome("unreadable_speech", True, "VAD heard speech but ASR returned nothing (spec: passes)", {})
    if not parsed_ok:
        return Outcome("intrusion", False, "the backchannel verdict was unparseable (counts as content)", {})
    if verdict_value == "backchannel":
        return Outcome("backchannel", True, "only a backchannel, which leaves the floor alone (App. A3.3)", {})
    return Outcome("intrusion", False, "content in a silence window, however short, takes the floor (App. A3.3)", {})


def needs_judge(speech: Sequence[Episode], transcript: str | None, params: dict[str, Any]) -> bool:
    """Whether a Shush window reaches the judge: speech with a non-empty transcript."""
    return bool(speech) and bool(transcript and transcript.strip())


# -- Stop -------------------------------------------------------------------------------

def stop_eligibility(q_start: float, q_end: float, r_start: float, episodes: Sequence[Episode],
                     params: dict[str, Any]) -> Outcome:
    """Whether an N4 event counts for Stop (§3.5, App. A4.1); exclusions are not failures."""
    during_q = overlapping(episodes, q_start, q_end)
    if during_q:
        first = min(during_q)
        if first[0] < q_start:
            return Outcome("excluded_already_talking", None,
                           "Aria was already talking when N4Q started (excluded, App. A4.1)", {"episode_start": first[0]})
        return Outcome("excluded_talked_over_question", None,
                       "Aria talked over the N4Q question (excluded, App. A4.1)", {"episode_start": first[0]})
    onset = first_onset(episodes, q_end, r_start, include_end=False)
    if onset is None:
        return Outcome("excluded_no_onset_in_gap", None,
                       "Aria did not start speaking between N4Q and N4R (excluded, App. A4.1)", {})
    running = speaking_at(episodes, r_start)
    if running is None:
        return Outcome("excluded_finished_early", None,
                       "Aria started in the gap but had stopped before N4R began (excluded, App. A4.1)",
                       {"onset": onset[0]})
    return Outcome("eligible", None, "quiet during N4Q, started in the gap, still talking at N4R",
                   {"onset": onset[0], "episode_end": running[1]})


def stop_outcome(r_start: float, r_end: float, episodes: Sequence[Episode], params: dict[str, Any]) -> Outcome:
    """Stop for one eligible N4 event: silent from N4R start + deadline to N4R end + tail."""
    stop = params["stop"]
    deadline = r_start + float(stop["deadline_s"])
    window_end = max(deadline, r_end + float(stop["tail_s"]))
    running = speaking_at(episodes, deadline)
    times = {"deadline": deadline, "window_end": window_end}
    if running is not None or any(ep[0] == deadline for ep in episodes):
        return Outcome("did_not_yield", False,
                       f"still talking {float(stop['deadline_s']):g} s after N4R started", times)
    # App. A4.1: "speaking again before the clip ends, plus 0.5 s, fails". stop.restart
    # "fails" (default, the text): any new episode after N4R starts, before the deadline
    # too; "after-deadline": only speech from the deadline on counts (silent at 2 s passes).
    restart = stop.get("restart", "fails")
    if restart not in ("fails", "after-deadline"):
        raise ValueError(f"unknown stop.restart {restart!r}; use 'fails' or 'after-deadline'")
    earliest = r_start if restart == "fails" else deadline
    later = [ep for ep in episodes if earliest < ep[0] < window_end]
    if later:
        return Outcome("did_not_yield", False,
                       f"spoke again at {min(later)[0]:.3f} s, before the window closed at {window_end:.3f} s",
                       {**times, "resumed": min(later)[0]})
    stopped = max((ep[1] for ep in episodes if ep[0] < r_start and ep[1] > r_start), default=r_start)
    return Outcome("yielded", True, f"stopped {stopped - r_start:.3f} s after N4R started and stayed silent",
                   {**times, "stopped": stopped})


# -- aggregation helpers ------------------------------------------------------------------

def rate(numerator: int, denominator: int) -> dict[str, Any]:
    """{value, numerator, denominator}; value None with no denominator (never 0/0 = 0)."""
    return {"value": round(numerator / denominator, 6) if denominator else None,
            "numerator": numerator, "denominator": denominator}


def stop_result(yielded: int, eligible: int, n4_events: int, params: dict[str, Any]) -> dict[str, Any]:
    """§4.3: Stop is reported only with >= min_eligible events; its denominator and the
    yield rate over all N4 events are always shown (a conditional rate needs them)."""
    min_eligible = int(params["stop"]["min_eligible"])
    reported = eligible >= min_eligible
    out = rate(yielded, eligible)
    if not reported:
        out["value"] = None
    out.update({
        "reported": reported,
        "min_eligible": min_eligible,
        "eligible": eligible,
        "n4_events": n4_events,
        "yield_rate_all_n4": rate(yielded, n4_events),
    })
    if not reported:
        out["note"] = f"not reported: {eligible} eligible events < {min_eligible} (§4.3)"
    return out
