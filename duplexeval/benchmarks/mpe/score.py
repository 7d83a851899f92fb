"""Score Duplex-MPE items from recordings alone, and aggregate them into results.

`score_item(item_dir, bench_spec, judges)` reads `recording.wav` (channel 1 = the model)
and `events.jsonl`, finds speech episodes with the causal VAD of the spec, transcribes
only episodes that some window needs (VAD-gated: a silent window costs nothing), asks
the judges, and returns one record per scored unit. `duplexeval score RUN` writes
`records.jsonl` and `results.json` for every model x benchmark folder of a run
(results.py's `score_bench_dir` per Duplex-MPE folder).

Determinism: records hold no wall-clock time and no cache-hit flags, floats are rounded,
and the output files are written with duplexeval.io's canonical JSON, so scoring a run
twice gives byte-identical files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

import numpy as np

from duplexeval.audio import read_stereo_recording
from duplexeval.benchmarks.mpe import metrics as mpe
from duplexeval.benchmarks.mpe.timeline import Timeline, timeline_from_events
from duplexeval.io import read_jsonl, sha256_file, sha256_json
from duplexeval.scoring.words import merge_word_pieces

RECORD_VERSION = 1
_ROUND = 4  # seconds to 0.1 ms: enough for audio frames, stable across platforms
# The audio around an episode given to the ASR is the spec's metrics.asr_pad_s: a causal
# VAD marks onsets late and Whisper misreads a clip cut at the first phoneme ("Nine
# dollars" -> "$99"); windows still claim words by their midpoint.


class DecidingJudge(Protocol):
    """What scoring needs from a judge (duplexeval.judges.llm.Judge, OfflineJudge)."""

    id: str
    label: str

    def decide(self, inputs: dict[str, Any], artifacts: dict[str, str] | None = None) -> Any: ...


Transcriber = Callable[[np.ndarray, int, dict[str, Any]], Any]  # -> object with .text and .words


def default_transcriber(audio: np.ndarray, rate: int, asr: dict[str, Any]) -> Any:
    from duplexeval.judges.asr import transcribe

    return transcribe(audio, rate, asr)


@dataclass
class CallCounter:
    """Requests made while scoring (not cache hits: counts must not depend on the cache)."""

    asr: int = 0
    judge: int = 0


@dataclass
class EpisodeTranscripts:
    """Transcribes each speech episode at most once and lets windows claim its words.

    Whole episodes go to the ASR (it reads whole utterances better than cut-outs); a
    window then claims the words whose midpoint lies inside it (duplexeval.judges.asr).
    """

    audio: np.ndarray
    rate: int
    asr: dict[str, Any]
    transcriber: Transcriber
    calls: CallCounter
    pad_s: float = 0.0
    _done: dict[tuple[float, float], Any] = field(default_factory=dict)

    def _transcript(self, ep: mpe.Episode) -> Any:
        if ep not in self._done:
            a = max(0, int(round((ep[0] - self.pad_s) * self.rate)))
            b = min(len(self.audio), int(round((ep[1] + self.pad_s) * self.rate)))
            self.calls.asr += 1
            self._done[ep] = (a / self.rate, self.transcriber(self.audio[a:b], self.rate, self.asr))
        return self._done[ep]

    def word_mids(self, ep: mpe.Episode) -> list[float] | None:
        """Midpoints of the episode's words on the recording's clock ([] none, None no word times)."""
        offset, tr = self._transcript(ep)
        words = merge_word_pieces(list(getattr(tr, "words", []) or []), getattr(tr, "text", ""))
        if words:
            return [offset + (w.start + w.end) / 2 for w in words if w.text.strip()]
        return None if (tr.text or "").strip() else []

    def text_in(self, episodes: list[mpe.Episode], start: float, end: float) -> str:
        parts = []
        for ep in sorted(episodes):
            offset, tr = self._transcript(ep)
            words = merge_word_pieces(list(getattr(tr, "words", []) or []), getattr(tr, "text", ""))
            if words:
                parts += [w.text.strip() for w in words if start <= offset + (w.start + w.end) / 2 < end]
            elif (tr.text or "").strip():
                parts.append(tr.text.strip())  # a backend without word times: the whole episode
        return " ".join(p for p in parts if p)


def _r(x: float | None) -> float | None:
    return None if x is None else round(float(x), _ROUND)


def _times(d: dict[str, float]) -> dict[str, float | None]:
    return {k: _r(v) for k, v in sorted(d.items())}


def _verdict_fields(verdict: Any) -> dict[str, Any]:
    return {"judge_id": verdict.judge_id, "judge_label": verdict.label, "cache_key": verdict.cache_key,
            "verdict": verdict.value, "parsed_ok": bool(verdict.parsed_ok), "judge_reason": verdict.reason}


def score_item(item_dir: str | Path, bench_spec: dict[str, Any], judges: dict[str, DecidingJudge], *,
               transcriber: Transcriber | None = None, calls: CallCounter | None = None,
               item_id: str | None = None, episodes: list[mpe.Episode] | None = None) -> list[dict[str, Any]]:
    """One record per scored unit (Start, Answer, Shush window, Stop event) of one item.

    `judges` maps the spec's roles ("answer", "backchannel") to judge objects. Episodes on
    channel 1 come from duplexeval.judges.vad.detect_episodes with the spec's vad block,
    unless `episodes` brings them (`model_episodes_batch`: the job's items at once).
    """
    item_dir = Path(item_dir)
    item_id = item_id or item_dir.name
    calls = calls if calls is not None else CallCounter()
    transcriber = transcriber or default_transcriber
    rec_path, ev_path = item_dir / "recording.wav", item_dir / "events.jsonl"
    _, model, rate = read_stereo_recording(rec_path)
    timeline = timeline_from_events(read_jsonl(ev_path), len(model) / rate, ev_path)
    if episodes is None:
        episodes = model_episodes(model, rate, bench_spec["vad"])
    params = bench_spec["metrics"]
    asr = EpisodeTranscripts(model, rate, bench_spec["asr"], transcriber, calls, float(params["asr_pad_s"]))
    base = {
        "v": RECORD_VERSION, "item": item_id, "scene_id": timeline.scene_id, "condition": timeline.condition,
        "benchmark": bench_spec.get("id"),
        "hashes": {"recording": sha256_file(rec_path), "events": sha256_file(ev_path),
                   "spec": sha256_json(bench_spec)},
    }
    records: list[dict[str, Any]] = []
    t_reply: set[mpe.Episode] = set()  # speech of Start-passing replies (shush.attribute_t_response)
    for turn in timeline.turns:
        common = {**base, "turn": turn.index, "turn_id": turn.turn_id, "label": turn.label,
                  "turn_start": _r(turn.start), "turn_end": _r(turn.end)}
        if turn.label == "T":
            records += _score_t(timeline, turn, episodes, params, asr, judges, calls, common, t_reply)
        elif turn.label in params["shush"]["labels"]:
            records.append(_score_shush(timeline, turn, episodes, params, asr, judges, calls, common, t_reply,
                                        float(bench_spec["vad"]["min_speech_ms"]) / 1000))
        elif turn.label == "N4Q":
            records.append(_score_stop(timeline, turn, episodes, params, common))
    return records


def model_episodes(model: np.ndarray, rate: int, vad: dict[str, Any], *, cache: bool = True,
                   cache_dir: Path | None = None) -> list[mpe.Episode]:
    """Speech episodes of the model's channel with the spec's causal VAD, cached by content.

    Why a cache: scoring is re-done on every resume and re-score (`duplexeval run` with
    the same run id, `duplexeval mpe score`), and once ASR and judges hit their caches the
    causal Silero pass over each recording (1-2 s per conversation) is most of what is
    left (duplexeval.judges.vad_cache.cached_episodes says what the key holds).
    """
    from duplexeval.judges.vad import vad_hysteresis
    from duplexeval.judges.vad_cache import cached_episodes

    return cached_episodes(model, rate, threshold=float(vad["threshold"]), min_speech_ms=float(vad["min_speech_ms"]),
                           merge_gap_ms=float(vad["merge_gap_ms"]), mode=vad["mode"], hysteresis=vad_hysteresis(vad),
                           scorer="mpe", cache=cache, cache_dir=cache_dir)


def model_episodes_batch(item_dirs: list[Path], vad: dict[str, Any]) -> dict[Path, list[mpe.Episode]]:
    """`model_episodes` of several items' recordings, their Silero passes run as one batch
    (duplexeval.judges.vad_batch.detect_episodes_batch: the same episodes, the same cache entries).

    An item whose recording cannot be read is left out: `score_item` reads it again and
    reports it where it reports every damaged recording.
    """
    from duplexeval.judges.vad import vad_hysteresis
    from duplexeval.judges.vad_cache import cached_episodes_batch

    by_rate: dict[int, list[tuple[Path, np.ndarray]]] = {}
    for d in item_dirs:
        try:
            _, model, rate = read_stereo_recording(d / "recording.wav")
        except Exception:  # noqa: BLE001 - score_item meets it again and reports it
            continue
        by_rate.setdefault(rate, []).append((d, model))
    out: dict[Path, list[mpe.Episode]] = {}
    for rate, items in by_rate.items():
        found = cached_episodes_batch(
            [m for _, m in items], rate, threshold=float(vad["threshold"]), min_speech_ms=float(vad["min_speech_ms"]),
            merge_gap_ms=float(vad["merge_gap_ms"]), mode=vad["mode"], hysteresis=vad_hysteresis(vad), scorer="mpe")
        out.update({d: eps for (d, _), eps in zip(items, found)})
    return out


def _score_t(timeline, turn, episodes, params, asr, judges, calls, common, t_reply) -> list[dict[str, Any]]:
    start = mpe.start_outcome(turn.end, episodes, params)
    out = [{**common, "metric": "start", "outcome": start.outcome, "passed": start.passed,
            "reason": start.reason, "times": _times(start.times), "window": [_r(turn.end), _r(turn.end + float(params["start"]["window_s"]))]}]
    response = mpe.response_episode(turn.end, episodes, start)
    if response is None:
        return out  # silent T: no Answer unit (denominator = presence, §3.5)
    # Already speaking: the answer.already_speaking reading says which of its words are the reply to T.
    lo = mpe.answer_from(turn.end, start, params)
    later_starts = [t.start for t in timeline.turns[turn.index + 1:]]
    reply, hi = mpe.response_span(response, later_starts, episodes, params)
    text = asr.text_in(reply, lo, hi)
    if start.passed:
        t_reply.update(reply)
    response = (response[0], max(ep[1] for ep in reply))
    record = {**common, "metric": "answer", "transcript": text, "gold_answer": turn.gold_answer,
              "window": [_r(max(lo, response[0])), _r(response[1])], "start_outcome": start.outcome}
    if not text.strip():
        outcome = mpe.answer_outcome(None, False, text, params)
    else:
        judge = judges["answer"]
        calls.judge += 1
        verdict = judge.decide({"transcript": text, "gold_answer": turn.gold_answer or "", "question": turn.text})
        outcome = mpe.answer_outcome(verdict.value, verdict.parsed_ok, text, params)
        record.update(_verdict_fields(verdict))
    record.update({"outcome": outcome.outcome, "passed": outcome.passed, "reason": outcome.reason})
    out.append(record)
    return out


def _score_shush(timeline: Timeline, turn, episodes, params, asr, judges, calls, common, t_reply,
                 min_speech_s: float) -> dict[str, Any]:
    w0, w1 = mpe.shush_window(turn.start, turn.end, timeline.next_start(turn.index), timeline.end, params)
    speech = mpe.overlapping(episodes, w0, w1)
    # Speech that is all a Start-passing reply to T, spilled past the next turn's start.
    spill = bool(speech) and all(ep in t_reply for ep in speech)
    record = {**common, "metric": "shush", "window": [_r(w0), _r(w1)],
              "speech": [[_r(a), _r(b)] for a, b in speech], "t_reply_speech": spill}
    if mpe.t_reply_attributed(params):
        speech = [ep for ep in speech if ep not in t_reply]
    heard = speech
    if speech:
        speech = mpe.window_speech(speech, w0, w1, {ep: asr.word_mids(ep) for ep in speech},
                                   min_speech_s, params)
        record["counted_speech"] = [[_r(a), _r(b)] for a, b in speech]
    transcript = asr.text_in(speech, w0, w1) if speech else None
    value, parsed_ok = None, False
    if mpe.needs_judge(speech, transcript, params):
        calls.judge += 1
        verdict = judges["backchannel"].decide({"transcript": transcript, "context": turn.text})
        value, parsed_ok = verdict.value, verdict.parsed_ok
        record.update(_verdict_fields(verdict))
    outcome = mpe.shush_window_outcome(speech, transcript, value, parsed_ok, params)
    reason = outcome.reason
    if heard and not speech:
        reason = "speech overlapping the window belongs to a neighbouring window (shush.straddle: by-words)"
    record.update({"transcript": transcript, "outcome": outcome.outcome, "passed": outcome.passed,
                   "reason": reason})
    return record


def _score_stop(timeline: Timeline, turn, episodes, params, common) -> dict[str, Any]:
    nxt = timeline.turns[turn.index + 1] if turn.index + 1 < len(timeline.turns) else None
    if nxt is None or nxt.label != "N4R":
        raise ValueError(f"item {common['item']}: N4Q turn {turn.index} is not followed by an N4R")
    elig = mpe.stop_eligibility(turn.start, turn.end, nxt.start, episodes, params)
    record = {**common, "metric": "stop", "n4r_turn": nxt.index, "n4r_start": _r(nxt.start), "n4r_end": _r(nxt.end),
              "eligibility": elig.outcome, "times": _times(elig.times)}
    if elig.outcome != "eligible":
        record.update({"outcome": elig.outcome, "passed": None, "reason": elig.reason})
        return record
    res = mpe.stop_outcome(nxt.start, nxt.end, episodes, params)
    record.update({"outcome": res.outcome, "passed": res.passed, "reason": res.reason,
                   "times": _times({**elig.times, **res.times})})
    return record
