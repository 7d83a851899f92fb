"""Full-Duplex-Bench v1.5 task numbers from hand-made pair records: the latency pooling reading,
the tag ratios' denominators, the trimmed side means and which samples the paired tests take."""

from __future__ import annotations

import copy

import pytest

from duplexeval.benchmarks.fdb.score_v15 import paired_tests, task_metrics
from duplexeval.specs import Registry


def side(wpm, mean_db=-30.0, std_db=5.0, dur=2.0):
    return {"wpm": wpm, "speech_dur_s": dur, "words": 3, "mean_intensity": mean_db, "std_intensity": std_db}


def pair(item, stops, resps, tag, pre=120.0, post=150.0, clean=130.0):
    return {"item": item, "role": "pair", "outcome": "ok", "stop_latencies_s": stops, "response_latencies_s": resps,
            "behaviour": tag, "adaptation": {"sides": {"pre": side(pre), "post": side(post), "clean": side(clean)}}}


@pytest.fixture()
def bench():
    return copy.deepcopy(Registry.load().get("benchmark", "fdb-v15-user-interruption").data)


PAIRS = [pair("1", [0.1, 0.5], [0.2], "C_RESPOND"), pair("2", [0.3], [], "C_RESUME"), pair("3", [], [0.4], "C_RESPOND")]


@pytest.mark.parametrize("pool, stop, resp", [("every-interval", (0.9, 3), (0.6, 2)),
                                              ("first-per-sample", (0.4, 2), (0.6, 2))])
def test_the_latency_pool_reading_decides_what_is_averaged(bench, pool, stop, resp):
    bench["options"]["v15"]["latency_pool"] = pool
    m = task_metrics(PAIRS, bench, "x:y")
    assert (round(m["stop_latency_s"]["numerator"], 6), m["stop_latency_s"]["denominator"]) == stop
    assert (round(m["response_latency_s"]["numerator"], 6), m["response_latency_s"]["denominator"]) == resp


def test_tag_ratios_count_over_the_judged_samples(bench):
    m = task_metrics(PAIRS, bench, "x:y")
    assert (m["respond_ratio"]["numerator"], m["respond_ratio"]["denominator"]) == (2, 3)
    assert (m["resume_ratio"]["numerator"], m["unknown_ratio"]["numerator"]) == (1, 0)
    assert all(m[k]["denominator"] == 3 for k in ("uncertain_ratio", "unknown_ratio"))


def test_a_side_mean_is_trimmed_from_three_values_and_not_below(bench):
    four = PAIRS + [pair("4", [], [], "C_RESPOND", pre=600.0)]
    m = task_metrics(four, bench, "x:y")
    # 5th..95th percentile of [120, 120, 120, 600] drops 600: 3 of 4 kept
    assert (m["wpm_pre"]["value"], m["wpm_pre"]["denominator"]) == (120.0, 3)
    m2 = task_metrics(PAIRS[:2], bench, "x:y")   # 2 values: no trim
    assert m2["wpm_pre"]["denominator"] == 2 and "2 of 2" in m2["wpm_pre"]["note"]


def test_only_respond_samples_without_a_zero_rate_enter_the_paired_tests(bench):
    zero = pair("5", [], [], "C_RESPOND", post=0.0)
    out = paired_tests(PAIRS + [zero], bench)
    assert out["samples"] == ["1", "3"]
    assert {t["pair"] for t in out["tests"]} <= {"pre_vs_post", "clean_vs_post"}


@pytest.mark.parametrize("reading, measures", [("readme-command", ["wpm", "mean_intensity", "std_intensity"]),
                                               ("every-measure", ["wpm", "speech_dur_s", "mean_intensity",
                                                                  "std_intensity"])])
def test_the_test_measures_reading_decides_what_holm_corrects_over(bench, reading, measures):
    bench["options"]["v15"]["test_measures"] = reading
    out = paired_tests(PAIRS, bench)
    assert out["measures"] == measures
    assert {t["measure"] for t in out["tests"]} | {k.split(":")[1] for k in out["not_run"]} == set(measures)


def _sample(root, clean=True, meta='{"context_text": "a", "current_turn_text": "b", "timestamps": [1.0, 2.0]}'):
    import numpy as np
    import soundfile as sf

    d = root / "user_interruption" / "3"
    d.mkdir(parents=True)
    sf.write(d / "input.wav", np.zeros(1600, dtype=np.float32), 16000)
    if clean:
        sf.write(d / "clean_input.wav", np.zeros(1600, dtype=np.float32), 16000)
    (d / "metadata.json").write_text(meta)
    return d


def test_a_sample_without_its_clean_input_or_with_bad_metadata_stops_the_plan_naming_the_file(bench, tmp_path):
    from duplexeval.benchmarks.fdb.samples import SampleError, list_samples, sample_record

    d = _sample(tmp_path / "a", clean=False)
    with pytest.raises(SampleError, match="clean_input.wav: missing"):
        list_samples(bench, tmp_path / "a")
    _sample(tmp_path / "b", meta='{"context_text": "a", "current_turn_text": "b", "timestamps": [2.0]}')
    with pytest.raises(SampleError, match="metadata.json.*timestamps"):
        list_samples(bench, tmp_path / "b")
    d = _sample(tmp_path / "c")
    (sample,) = list_samples(bench, tmp_path / "c")
    rec = sample_record(bench, sample, None)
    assert rec["annotation"]["timestamps"] == [1.0, 2.0] and rec["clean_input_duration_s"] == 0.1
    assert d.name == rec["id"]
