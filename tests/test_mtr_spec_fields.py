"""Spec fields of the MTR benchmarks that scoring reads (issue 13, items 12 and 13).

Every rule of a spec either does something or is gone: segmentation.center and
segmentation.response_window are read, quality's score_max / score_step bound and bin the
scores, and a Candor clip is scored on every segmented turn (no 10-turn cap)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from duplexeval.benchmarks.mtr import items as mtr_items, segmentation as mtr_segmentation
from duplexeval.benchmarks.mtr.clustering import Turn, cluster_votes
from duplexeval.benchmarks.mtr.score import metrics_for, on_scale, score_distribution
from duplexeval.specs import Registry


@pytest.fixture(scope="module")
def registry():
    return Registry.load()


def test_new_spec_fields_are_written_with_the_code_defaults(registry) -> None:
    from duplexeval.benchmarks.mpe.text_reference import SILENCE_LABELS
    from duplexeval.benchmarks.mtr.score import EPISODE_PAD_S, SILENCE_FLOOR

    for bench in ("mtr-quality", "mtr-safety", "mtr-interruption", "mtr-combo-sipb"):
        b = registry.get("benchmark", bench).data
        assert b["asr"]["episode_pad_s"] == EPISODE_PAD_S
        assert b["vad"]["silence_floor"] == SILENCE_FLOOR
        assert b["segmentation"]["text_slack_s"] == 0.05
    for bench in ("mpe-explicit", "mpe-implicit"):
        assert tuple(registry.get("benchmark", bench).data["metrics"]["shush"]["labels"]) == SILENCE_LABELS


def test_spec_fields_that_nothing_read_are_gone(registry) -> None:
    for bench in ("mpe-explicit", "mpe-implicit", "mtr-quality", "mtr-interruption"):
        b = registry.get("benchmark", bench).data
        assert "sample_rate" not in b["vad"]
        stats = b.get("metrics", {}).get("statistics", {})
        assert "spearman" not in stats and not {"alternative", "exact"} & set(stats.get("mcnemar", {}))
        assert "denominator" not in b.get("metrics", {}).get("answer", {})
    assert "no_response" not in registry.get("benchmark", "mtr-interruption").data["metrics"]


def test_segmentation_center_median_is_the_paper_mean_is_honoured() -> None:
    votes = [[(0.0, 2.0)], [(0.2, 2.0)], [(1.0, 2.0)]]
    (median,) = cluster_votes(votes, overlap_threshold=0.3, center="median")
    (mean,) = cluster_votes(votes, overlap_threshold=0.3, center="mean")
    assert median.start == pytest.approx(0.2) and mean.start == pytest.approx(0.4)
    with pytest.raises(ValueError, match="segmentation.center"):
        cluster_votes(votes, overlap_threshold=0.3, center="mode")


def test_response_window_rule_is_read_and_an_unknown_one_refused(registry) -> None:
    bench = registry.get("benchmark", "mtr-quality").data
    assert mtr_items.response_window_rule(bench) == "turn-start-to-next-turn-end"
    bad = {**bench, "segmentation": {**bench["segmentation"], "response_window": "turn-end-to-next-turn-start"}}
    with pytest.raises(ValueError, match="response_window"):
        mtr_items.scored_rounds(bad, [])


def test_quality_scores_every_segmented_turn_of_a_clip_no_10_turn_cap(monkeypatch, registry) -> None:
    bench = registry.get("benchmark", "mtr-quality").data
    rate = 16000
    turns = [Turn(10.0 * k, 10.0 * k + 4.0, 6) for k in range(14)]  # 14 turns in a 140 s clip
    seg = SimpleNamespace(turns=turns, segments=[{"speaker": "user", "start": t.start, "end": t.end, "text": f"turn {k}"}
                                                 for k, t in enumerate(turns, 1)])
    monkeypatch.setattr(mtr_segmentation, "segment_dialogue", lambda *a, **k: seg)
    silence = np.zeros(140 * rate, dtype=np.float32)
    dialogue = SimpleNamespace(id="clip", rate=rate, audio_path="clip.wav", audio=lambda: (silence, silence))
    rounds = mtr_items.segmented_rounds(bench, dialogue, judge=object())
    assert [r.round for r in rounds] == list(range(1, 15)) and bench["rounds"] == 10
    assert rounds[13].user.text == "turn 14"


def quality_rec(verdict, parsed_ok=True, outcome="scored") -> dict:
    return {"outcome": outcome, "passed": None, "parsed_ok": parsed_ok, "verdict": verdict, "round": 1}


def test_quality_reports_the_per_turn_score_distribution(registry) -> None:
    bench = registry.get("benchmark", "mtr-quality").data
    recs = [quality_rec(4.5), quality_rec(4.5), quality_rec(0, outcome="no_response"), quality_rec(None, False, "unparseable")]
    m = metrics_for(recs, bench)
    dist = m["score"]["distribution"]
    assert list(dist) == ["0", "0.5", "1", "1.5", "2", "2.5", "3", "3.5", "4", "4.5", "5"]
    assert dist["4.5"] == 2 and dist["0"] == 1 and sum(dist.values()) == m["score"]["denominator"] == 3


def test_quality_score_off_the_scale_or_grid_is_unparseable(registry) -> None:
    metrics = registry.get("benchmark", "mtr-quality").data["metrics"]
    assert on_scale(0, metrics) and on_scale(2.5, metrics) and on_scale(5, metrics)
    assert not on_scale(5.5, metrics) and not on_scale(2.25, metrics) and not on_scale(-0.5, metrics)
    assert not on_scale(True, metrics) and not on_scale("4", metrics)
    assert score_distribution([], {**metrics, "score_max": 1, "score_step": 1}) == {"0": 0, "1": 0}
