"""Which dialogues and rounds an MTR benchmark scores (issue 13, items 8, 9 and 11).

- Round 1 of an interruption dialogue is an interruption round (its user cuts the
  opening exchange's forced ground-truth reply) and is scored in the "1" column; "1-10"
  pools rounds 1..10.
- A single-feature benchmark reads the dialogues of that feature only (the paper's
  smooth column equals its S-only ablation); combinations keep their mixed dialogues.
- Safety also runs inside interruption contexts (mtr-safety-interruption), with the
  refusal rate and no_response beside it.
Real embedded dialogues (flite-rendered); feature records from real rules on given words.
"""

from __future__ import annotations

import copy
from collections import Counter

import numpy as np
import pytest

from duplexeval.benchmarks.mtr.features import W, feature_outcome
from duplexeval.benchmarks.mtr.items import load_dialogues, scored_rounds
from duplexeval.benchmarks.mtr.score import aggregate, metrics_for
from duplexeval.runfolder.plan import apply_overrides
from duplexeval.specs import Registry

SINGLE = {"mtr-smooth-turn-taking": "smooth", "mtr-interruption": "interruption", "mtr-pause-handling": "pause",
          "mtr-background-speech": "background", "mtr-backchannel": "backchannel"}
COMBOS = {"mtr-combo-s": "feat-s", "mtr-combo-si": "feat-si", "mtr-combo-sip": "feat-sip", "mtr-combo-sipb": "feat-sipb"}


@pytest.fixture(scope="module")
def registry():
    return Registry.load()


def embedded(registry, bench_id: str, **changes) -> dict:
    """The benchmark as the embedded suite runs it (its data overrides applied)."""
    suite = registry.get("suite", "embedded").data
    bench = apply_overrides(registry.get("benchmark", bench_id).data, suite["overrides"])
    bench.update(changes)
    return bench


def rounds_of(bench: dict):
    return scored_rounds(bench, load_dialogues(bench))


@pytest.mark.parametrize("bench_id", sorted(SINGLE))
def test_single_feature_benchmarks_read_only_dialogues_of_their_feature(registry, bench_id):
    bench = embedded(registry, bench_id)
    assert bench["round_selection"] == "feature-dialogues"
    scored = rounds_of(bench)
    assert scored and {sr.round.feature for sr in scored} == {SINGLE[bench_id]}
    for sr in scored:  # every round of each dialogue read is of that feature: no mixed dialogue pools in
        assert set(sr.dialogue.features) == {SINGLE[bench_id]}, sr.item_id
    assert sorted({sr.round.round for sr in scored})[0] == 1  # round 1 is scored for every feature


def test_smooth_turn_taking_and_the_s_ablation_read_the_same_dialogues(registry):
    # The paper: smooth turn-taking 57.4 (main table) = S only 57.4 (ablation), for Moshi.
    a = [sr.item_id for sr in rounds_of(embedded(registry, "mtr-smooth-turn-taking"))]
    b = [sr.item_id for sr in rounds_of(embedded(registry, "mtr-combo-s"))]
    assert a == b and len(a) == 10


@pytest.mark.parametrize("bench_id", sorted(COMBOS))
def test_combinations_keep_their_mixed_dialogues(registry, bench_id):
    bench = embedded(registry, bench_id)
    scored = rounds_of(bench)
    assert {sr.dialogue.id for sr in scored} == {COMBOS[bench_id]} and len(scored) == 10
    features = bench["features"]
    assert [sr.round.feature for sr in scored] == [features[i % len(features)] for i in range(10)]


def test_feature_rounds_reading_pools_the_feature_rounds_of_mixed_dialogues(registry):
    bench = embedded(registry, "mtr-interruption", round_selection="feature-rounds")
    by_dialogue = Counter(sr.dialogue.id for sr in rounds_of(bench))
    assert by_dialogue == {"feat-i": 5, "feat-si": 5, "feat-sip": 3, "feat-sipb": 3}


def test_feature_rounds_is_refused_where_rounds_have_no_feature_rule(registry):
    bench = embedded(registry, "mtr-safety", round_selection="feature-rounds")
    with pytest.raises(ValueError, match=r"benchmark mtr-safety: round_selection 'feature-rounds' is not one of"):
        rounds_of(bench)


# ---- item 8: round 1 of an interruption dialogue ---------------------------------------

def test_round_1_of_an_interruption_dialogue_interrupts_the_forced_opening_reply(registry):
    from duplexeval.benchmarks.mtr.items import item_factories

    bench = embedded(registry, "mtr-interruption")
    scored = rounds_of(bench)
    r1 = scored[0]
    d = r1.dialogue
    assert r1.item_id == "feat-i.r01" and r1.round.feature == "interruption"
    cut = r1.round.event("interruption")
    assert cut is not None and r1.window.start_s == cut.start == r1.round.user.start
    assert d.opening is not None and d.opening.assistant.start < cut.start < d.opening.assistant.end
    # The model takes over at the interruption; before it, the opening exchange is forced history.
    (_, items), = item_factories(bench, scored[:1], teacher_forcing=True)
    stim = items[0][1]()
    stim.bind(16000, 1280)
    _, asst = d.audio()
    a = int(d.opening.assistant.start * 16000) // 1280 + 1
    forced = np.concatenate([stim.forced_output(i) for i in range(a, stim.fork_frame)])
    assert np.abs(forced).max() > 0.01 and np.allclose(forced, asst[a * 1280: stim.fork_frame * 1280])
    assert stim.forced_output(stim.fork_frame) is None


def _answer_at(anchor: float) -> list[W]:
    """A clean reply: five words starting 0.2 s after the anchor."""
    return [W(f"w{i}", anchor + 0.2 + 0.3 * i, anchor + 0.45 + 0.3 * i) for i in range(5)]


def test_round_1_interruption_is_scored_in_the_1_round_column_and_pooled_in_1_10(registry):
    bench = embedded(registry, "mtr-interruption")
    scored = rounds_of(bench)
    records = []
    for sr in scored:
        words = _answer_at(sr.round.event("interruption").end) if sr.round.round == 1 else []
        rec = feature_outcome(sr.round, words, sr.window.end_s, bench["metrics"])
        records.append({"item": sr.item_id, "round": sr.round.round, **rec})
    res = aggregate(records, bench, {"total": len(records), "ok": len(records)}, {}, Counter())
    r1 = res["rounds"]["1"]["success"]
    assert (r1["numerator"], r1["denominator"], r1["outcomes"]) == (1, 1, {"success": 1})
    assert records[0]["feature"] == "interruption" and records[0]["anchor_s"] == pytest.approx(
        scored[0].round.event("interruption").end, abs=1e-3)
    pooled = res["rounds"]["1-10"]["success"]
    assert (pooled["numerator"], pooled["denominator"]) == (1, 5)  # rounds 1..5 of feat-i, round 1 included
    assert res["rounds"]["1-10"]["no_response"]["numerator"] == 4


# ---- item 11: AdvBench-style requests inside interruption contexts -----------------------

def test_safety_runs_in_smooth_and_in_interruption_contexts_on_their_own_dialogues(registry):
    smooth = rounds_of(embedded(registry, "mtr-safety"))
    inter = rounds_of(embedded(registry, "mtr-safety-interruption"))
    assert {sr.dialogue.id for sr in smooth} == {"safety-01"} and len(smooth) == 10
    assert {sr.dialogue.id for sr in inter} == {"safety-int-01"} and len(inter) == 4
    assert {sr.round.feature for sr in inter} == {"interruption"} and all(sr.round.request for sr in inter)
    first = inter[0]
    assert first.round.round == 1 and first.dialogue.opening is not None
    assert first.window.start_s == first.round.event("interruption").start
    assert first.window.start_s < first.dialogue.opening.assistant.end  # it cuts the opening's reply


def test_safety_in_interruption_contexts_reports_refusal_with_no_response_beside_it(registry):
    bench = embedded(registry, "mtr-safety-interruption")
    assert bench["metrics"]["no_response"] == "own-outcome"
    records = [{"round": k, "outcome": o, "passed": o == "refused", "parsed_ok": True}
               for k, o in enumerate(["refused", "refused", "complied", "no_response"], 1)]
    m = metrics_for(records, bench)
    assert (m["refusal"]["numerator"], m["refusal"]["denominator"]) == (2, 3)
    assert (m["no_response"]["numerator"], m["no_response"]["denominator"]) == (1, 4)
    literal = metrics_for(records, {**copy.deepcopy(bench), "metrics": {**bench["metrics"], "no_response": "not-refused"}})
    assert (literal["refusal"]["numerator"], literal["refusal"]["denominator"]) == (2, 4)
