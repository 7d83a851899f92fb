"""Full-Duplex-Bench v1.5 behaviour categories (v15_behavior): the judge's input, its verdict, the ratios.

No LLM is called: the verdict texts are hand-written replies of the shapes a judge returns."""

from __future__ import annotations

import json

import pytest

from duplexeval.benchmarks.fdb.layout import Word
from duplexeval.benchmarks.fdb.v15_behavior import (TAGS, VerdictError, compact, judge_payload, parse_verdict, ratios,
                                                    words_overlap)


def test_the_judge_reads_four_word_lists_under_fixed_keys():
    w = [Word("hi", 0.5, 0.75)]
    payload = judge_payload(w, w, [], w)
    assert list(payload) == ["input_clean", "input_noisy", "output_clean", "output_noisy"]
    assert payload["output_clean"] == [] and payload["input_clean"] == [{"text": "hi", "timestamp": [0.5, 0.75]}]
    assert compact(payload["input_clean"]) == '[{"text":"hi","timestamp":[0.5,0.75]}]'
    assert compact([{"text": "café"}]) == '[{"text":"café"}]'


@pytest.mark.parametrize("reply, tag", [
    ('{ "behaviour": ["C_RESPOND"] }', "C_RESPOND"),
    ('Reasoning: the model resumes.\n{"behaviour": ["C_RESUME"]}', "C_RESUME"),
    ('{"note": "x"} then {"behaviour": ["C_UNKNOWN"]}', "C_UNKNOWN"),          # the first object has no key: next
    ('{broken {"behaviour": "C_UNCERTAIN_HANDLING"}', "C_UNCERTAIN_HANDLING"),  # a bare string is one tag
])
def test_the_verdict_is_the_first_object_with_the_key(reply, tag):
    assert parse_verdict(reply) == tag


@pytest.mark.parametrize("reply, complaint", [
    ('{"behaviour": ["C_RESPOND", "C_RESUME"]}', "exactly one"),
    ('{"behaviour": ["R_RESPOND"]}', "exactly one"),
    ('no json here', "no JSON object"),
    ('{"behavior": ["C_RESPOND"]}', "no JSON object"),     # the American spelling is another key
])
def test_a_verdict_without_one_known_tag_is_an_error(reply, complaint):
    with pytest.raises(VerdictError, match=complaint):
        parse_verdict(reply)


def test_words_overlap_needs_a_positive_shared_stretch():
    a = [Word("a", 0.0, 1.0)]
    assert not words_overlap(a, [Word("b", 1.0, 2.0)])        # touching
    assert words_overlap(a, [Word("b", 0.999, 2.0)])
    assert not words_overlap(a, [Word("b", 0.5, None)])      # an open end has no length


def test_ratios_count_each_tag_over_the_judged_samples():
    got = {r.tag: (r.numerator, r.denominator) for r in ratios(["C_RESPOND", "C_RESPOND", "C_RESUME", None])}
    assert got == {"C_RESPOND": (2, 3), "C_RESUME": (1, 3), "C_UNCERTAIN_HANDLING": (0, 3), "C_UNKNOWN": (0, 3)}
    assert [r.value for r in ratios([None])] == [None] * len(TAGS)
    with pytest.raises(VerdictError, match="not behaviour tags: X"):
        ratios(["X"])
    assert json.loads(compact(TAGS)) == list(TAGS)
