"""Issue 13, items 1, 2, 4, 5: the whole reply is judged, numbers are not split at a window
edge, a late reply's spill-over into the next window is counted (and optionally
forgiven), and speaking again after N4R starts fails Stop (App. A4.1)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from mpe_helpers import RATE, spec

from duplexeval.benchmarks.mpe import metrics as mpe
from duplexeval.benchmarks.mpe.score import CallCounter, EpisodeTranscripts
from duplexeval.benchmarks.mtr.features import W, in_window
from duplexeval.judges.asr import Transcript, Word
from duplexeval.scoring.words import merge_word_pieces

PARAMS = spec()["metrics"]


# -- item 1 -------------------------------------------------------------------------------

def test_answer_judges_the_filler_and_the_answer_after_a_1_s_pause_as_one_reply() -> None:
    filler, answer = (10.0, 10.4), (11.4, 12.2)  # "Hmm, let me think." ... "The taco place."
    reply, until = mpe.response_span(filler, [14.2], [filler, answer], PARAMS)
    assert reply == [filler, answer] and until == 14.2


def test_answer_response_end_episode_judges_the_first_episode_only() -> None:
    params = spec(metrics={**PARAMS, "answer": {**PARAMS["answer"], "response_end": "episode"}})["metrics"]
    filler, answer = (10.0, 10.4), (11.4, 12.2)
    assert mpe.response_span(filler, [14.2], [filler, answer], params)[0] == [filler]


def test_speech_from_the_next_turns_start_on_is_not_part_of_the_reply() -> None:
    first, later = (10.0, 10.4), (14.2, 15.0)
    assert mpe.response_span(first, [14.2], [first, later], PARAMS)[0] == [first]


def test_a_reply_that_starts_after_the_next_turn_started_is_judged_whole() -> None:
    late = (11.0, 12.0)
    assert mpe.response_span(late, [10.5], [late], PARAMS) == ([late], float("inf"))


# -- item 2 -------------------------------------------------------------------------------

@dataclass
class FixedASR:
    transcript: Transcript

    def __call__(self, audio, rate, asr):
        return self.transcript


def test_a_number_straddling_the_window_edge_is_claimed_whole() -> None:
    tr = Transcript(" $1,200.", [Word("$1", 0.0, 0.4), Word(",200.", 0.4, 0.9)], "fake", "fake")
    asr = EpisodeTranscripts(np.zeros(2 * RATE, np.float32), RATE, {}, FixedASR(tr), CallCounter())
    # "$1" has its midpoint (0.2 s) before the edge at 0.3 s, ",200." after it: one word, midpoint 0.45 s.
    assert asr.text_in([(0.0, 1.0)], 0.3, float("inf")) == "$1,200."


def test_word_pieces_without_a_leading_space_merge_into_the_word_before() -> None:
    words = [W("It's", 0.0, 0.3), W("$1", 0.3, 0.6), W(",200", 0.6, 1.0), W("total.", 1.1, 1.5)]
    merged = merge_word_pieces(words, " It's $1,200 total.")
    assert [w.text for w in merged] == ["It's", "$1,200", "total."]
    assert (merged[1].start, merged[1].end) == (0.3, 1.0)


def test_separate_words_stay_separate_and_mtr_windows_claim_merged_numbers() -> None:
    words = [W("nine", 0.0, 0.3), W("dollars", 0.3, 0.7)]
    assert merge_word_pieces(words, " nine dollars") == words
    pieces = merge_word_pieces([W("$1", 0.0, 0.4), W(",200", 0.4, 0.9)], None)  # no text: ",2" cannot start a word
    assert [w.text for w in in_window(pieces, 0.3, 5.0)] == ["$1,200"]


# -- item 5 -------------------------------------------------------------------------------

def stop(restart: str | None = None):
    params = spec()["metrics"]
    if restart:
        params["stop"]["restart"] = restart
    r_start, r_end = 20.0, 21.0
    episodes = [(18.0, 20.5), (21.4, 21.8)]  # stops at N4R + 0.5 s, "sorry" at +1.4 .. +1.8 s
    return mpe.stop_outcome(r_start, r_end, episodes, params)


def test_speaking_again_before_the_stop_deadline_fails_stop() -> None:
    out = stop()
    assert out.outcome == "did_not_yield" and out.times["resumed"] == 21.4


def test_stop_restart_after_deadline_lets_a_restart_before_the_deadline_pass() -> None:
    assert stop("after-deadline").passed is True


def test_silent_after_stopping_passes_stop() -> None:
    assert mpe.stop_outcome(20.0, 21.0, [(18.0, 20.5)], PARAMS).passed is True


def test_an_unknown_stop_restart_reading_is_refused() -> None:
    with pytest.raises(ValueError, match="stop.restart"):
        stop("sometimes")


# -- item 4 -------------------------------------------------------------------------------

@dataclass
class Verdict:
    value: str
    judge_id: str = "stub"
    label: str = "stub"
    cache_key: str = "k"
    parsed_ok: bool = True
    reason: str = ""


class StubJudge:
    id, label = "stub", "stub"

    def __init__(self, value: str) -> None:
        self.value = value

    def decide(self, inputs, artifacts=None):
        return Verdict(self.value)


def words_over_clip(audio, rate, asr):
    n = len(audio) / rate
    return Transcript(" Nine dollars.", [Word("Nine", 0.0, n / 2), Word("dollars.", n / 2, n)], "stub", "stub")


def late_reply_records(tmp_path, attribute: str):
    from mpe_helpers import AmplitudeVAD, ClipModel, fake_conversation, run_scheduler, write_item

    from duplexeval.benchmarks.mpe.results import aggregate
    from duplexeval.benchmarks.mpe.scenes.scheduler import MPEScheduler
    from duplexeval.benchmarks.mpe.score import score_item
    from duplexeval.tts import synthesize

    bench = spec()
    bench["metrics"]["shush"]["attribute_t_response"] = attribute
    frame = 1280
    model = ClipModel(frame, [("T", "end", 1.0, synthesize("Nine dollars.", "kal16", RATE))])
    sch = MPEScheduler(fake_conversation([("T", 1.3), ("N2", 1.5), ("N3", 0.9)]), bench,
                       vad_factory=lambda: AmplitudeVAD(frame / RATE))
    inputs, outputs, events, _ = run_scheduler(sch, frame, model)
    item = tmp_path / attribute
    write_item(item, inputs, outputs, events)
    judges = {"answer": StubJudge("correct"), "backchannel": StubJudge("content")}
    records = score_item(item, bench, judges, transcriber=words_over_clip)
    return records, aggregate(records, bench, CallCounter(), {"ok": 1, "total": 1})


def test_a_reply_1_s_after_t_passes_start_and_fails_the_next_window_literally(tmp_path) -> None:
    records, results = late_reply_records(tmp_path, attribute="counts-against-window")
    start = next(r for r in records if r["metric"] == "start")
    first_window = next(r for r in records if r["metric"] == "shush")
    assert start["outcome"] == "fresh"
    assert first_window["passed"] is False and first_window["t_reply_speech"] is True
    assert results["metrics"]["shush"]["failed_by_t_reply"] == 1


def test_shush_attribute_t_response_does_not_count_a_start_passing_reply_against_the_next_window(tmp_path) -> None:
    records, results = late_reply_records(tmp_path, attribute="attributed-to-t")
    first_window = next(r for r in records if r["metric"] == "shush")
    assert first_window["passed"] is True and first_window["outcome"] == "silent"
    assert results["metrics"]["shush"]["failed_by_t_reply"] == 0


# -- issue 36: an already-speaking reply, judged after T or whole --------------------------

def test_an_already_speaking_reply_is_judged_on_its_words_after_t_or_whole() -> None:
    # T ends 10.0; one episode 9.0-12.0: "the taco place" before T's end, "nine dollars" after.
    tr = Transcript(" the taco place nine dollars", [Word("the", 0.0, 0.3), Word("taco", 0.3, 0.6),
                    Word("place", 0.6, 0.95), Word("nine", 1.1, 1.5), Word("dollars", 1.5, 2.0)], "fake", "fake")
    asr = EpisodeTranscripts(np.zeros(13 * RATE, np.float32), RATE, {}, FixedASR(tr), CallCounter())
    episodes = [(9.0, 12.0)]
    already = mpe.start_outcome(10.0, episodes, PARAMS)
    assert already.outcome == "already_speaking"
    texts = {}
    for reading in ("words-after-t", "whole-reply"):
        params = {**PARAMS, "answer": {**PARAMS["answer"], "already_speaking": reading}}
        texts[reading] = asr.text_in(episodes, mpe.answer_from(10.0, already, params), float("inf"))
    assert texts == {"words-after-t": "nine dollars", "whole-reply": "the taco place nine dollars"}
    # A fresh reply has nothing before T's end under either reading.
    fresh = mpe.start_outcome(10.0, [(10.5, 12.0)], PARAMS)
    assert mpe.answer_from(10.0, fresh, PARAMS) == float("-inf")
    with pytest.raises(ValueError, match="answer.already_speaking"):
        mpe.answer_from(10.0, already, {**PARAMS, "answer": {"already_speaking": "half"}})
