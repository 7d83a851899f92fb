"""Full-Duplex-Bench's plug-in parts: the embedded set's rendering into the published layout,
sample listing, the reference distribution's checks, the reference agents' cues, the task
means and the relevance scale. Real flite, the real offline judge; no stand-ins."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from duplexeval.benchmarks import CannotRun, plugins
from duplexeval.benchmarks.fdb.embedded import EmbeddedSourceError, load_source, render
from duplexeval.benchmarks.fdb.samples import data_root, list_samples, reference_distributions
from duplexeval.benchmarks.fdb.score import relevance, task_metrics
from duplexeval.benchmarks.fdb.stimulus import SampleStimulus
from duplexeval.judges.llm import Judge
from duplexeval.specs import repo_root

SOURCE = """\
kind: fdb-embedded
version: 1
voice: slt
rate: 16000
backchannel_word: "I see"
subsets:
  synthetic_pause_handling:
    - id: "1"
      parts:
        - say: "I went to"
        - silence: 1.5
          pause: true
        - say: "the shop."
  icc_backchannel:
    - id: "0"
      parts:
        - say: "I went to the shop."
        - silence: 0.8
          backchannel: true
        - say: "Then I came home."
  synthetic_user_interruption:
    - id: "1"
      parts:
        - say: "Tell me about cats."
          context: true
        - silence: 2.0
          reply_room: true
        - say: "What about dogs?"
          interrupt: true
        - silence: 3.0
      reply: "Dogs are loyal."
"""


def bench(task: str, subset: str, **data) -> dict:
    return {"id": f"fdb-test-{task}", "dimension": "fdb-v1.0", "data": {"source": "embedded", **data},
            "options": {"task": task, "subset": subset}}


@pytest.fixture(scope="module")
def layout(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("fdb")
    (root / "source.yaml").write_text(SOURCE)
    return render(root / "source.yaml", root / "layout")


def test_the_family_is_registered_by_entry_point():
    assert plugins()["full-duplex-bench"].family == "full-duplex-bench"


def test_render_writes_the_published_layout_with_annotations_at_the_part_boundaries(layout):
    pause = json.loads((layout / "synthetic_pause_handling/1/pause.json").read_text())
    audio, rate = sf.read(layout / "synthetic_pause_handling/1/input.wav")
    assert rate == 16000 and audio.ndim == 1
    start, end = pause[0]["timestamp"]
    assert pause[0]["text"] == "[PAUSE]" and end - start == pytest.approx(1.5, abs=1e-3)
    gap = audio[int((start + 0.02) * rate):int(end * rate) - 1]   # flite's trimmed clip keeps a 10 ms fade
    assert np.abs(gap).max() == 0.0 and np.abs(audio[:int(start * rate)]).max() > 0.05   # the pause is silence


def test_render_writes_the_interruption_files_and_the_oracle_cues(layout):
    folder = layout / "synthetic_user_interruption/1"
    ann = json.loads((folder / "interrupt.json").read_text())[0]
    assert (ann["context"], ann["interrupt"]) == ("Tell me about cats.", "What about dogs?")
    s, e = ann["timestamp"]
    interrupt, rate = sf.read(folder / "interrupt.wav")
    assert len(interrupt) / rate == pytest.approx(e - s, abs=1e-3)
    cues = json.loads((folder / "oracle.json").read_text())["cues"]
    assert [(c["label"], c["phase"]) for c in cues] == [("N4Q", "end"), ("N4R", "start"), ("T", "end")]
    assert cues[1]["t"] == s and cues[2]["t"] == e and cues[2]["gold_answer"] == "Dogs are loyal."


def test_the_backchannel_reference_is_the_slots_distribution_over_the_bins(layout):
    ref = json.loads((layout / "icc_backchannel/reference_distribution.json").read_text())["0"]
    audio, rate = sf.read(layout / "icc_backchannel/0/input.wav")
    assert len(ref) == int(len(audio) / rate / 0.2) + 1 and sum(ref) == pytest.approx(1.0)
    cue = json.loads((layout / "icc_backchannel/0/oracle.json").read_text())["cues"][0]
    assert ref[int(cue["t"] / 0.2)] > 0.1 and cue["gold_answer"] == "I see"


def test_a_bad_source_names_the_file_and_the_part(tmp_path):
    bad = tmp_path / "source.yaml"
    bad.write_text(SOURCE.replace("        - silence: 1.5\n", "        - silence: 1.5\n          say: both\n"))
    with pytest.raises(EmbeddedSourceError, match=r"source.yaml: subsets.synthetic_pause_handling\[0\].parts\[1\]"):
        load_source(bad)
    bad.write_text(SOURCE.replace("pause: true", "paws: true"))
    with pytest.raises(EmbeddedSourceError, match="unknown mark.*paws"):
        load_source(bad)
    bad.write_text("kind: something-else\n")
    with pytest.raises(EmbeddedSourceError, match="not a Full-Duplex-Bench embedded source"):
        load_source(bad)


def test_samples_are_listed_by_number_and_backchannel_keeps_only_numbered_folders(tmp_path):
    for subset in ("synthetic_pause_handling", "icc_backchannel"):
        for name in ("10", "2", "1", "extra"):
            d = tmp_path / subset / name
            d.mkdir(parents=True)
            sf.write(d / "input.wav", np.zeros(160, dtype=np.float32), 16000)
            (d / "pause.json").write_text('[{"text": "[PAUSE]", "timestamp": [0.0, 0.01]}]')
    ids = [s.id for s in list_samples(bench("pause", "synthetic_pause_handling"), tmp_path)]
    assert ids == ["1", "2", "10", "extra"]
    assert [s.id for s in list_samples(bench("backchannel", "icc_backchannel"), tmp_path)] == ["1", "2", "10"]
    assert [s.id for s in list_samples(bench("pause", "synthetic_pause_handling"), tmp_path, limit=2)] == ["1", "2"]


def test_a_missing_annotation_names_the_file(tmp_path):
    d = tmp_path / "candor_turn_taking" / "7"
    d.mkdir(parents=True)
    sf.write(d / "input.wav", np.zeros(160, dtype=np.float32), 16000)
    from duplexeval.benchmarks.fdb.samples import SampleError

    with pytest.raises(SampleError, match=r"candor_turn_taking/7/turn_taking.json: missing"):
        list_samples(bench("smooth-turn-taking", "candor_turn_taking"), tmp_path)


def test_without_a_data_path_the_job_cannot_run_and_says_which_override_to_set():
    b = bench("pause", "candor_pause_handling")
    b["data"] = {"source": "licensed"}
    with pytest.raises(CannotRun, match=r"overrides.data.fdb-v1.0.path.*candor_pause_handling/"):
        data_root(b)


def test_the_reference_distribution_is_checked_against_its_pinned_sha256(tmp_path):
    (tmp_path / "icc.json").write_text('{"0": [0.5, 0.5]}')
    b = bench("backchannel", "icc_backchannel")
    b["data"]["source"] = "licensed"
    b["options"]["reference_distribution"] = {"licensed": {"path": "icc.json", "sha256": "0" * 64}}
    with pytest.raises(CannotRun, match=r"icc.json has sha256 [0-9a-f]{64}, the spec pins 0{64}"):
        reference_distributions(b, tmp_path)
    del b["options"]["reference_distribution"]["licensed"]["sha256"]
    assert reference_distributions(b, tmp_path) == {"0": [0.5, 0.5]}
    b["options"]["reference_distribution"]["licensed"]["path"] = "absent.json"
    with pytest.raises(CannotRun, match="absent.json is not here"):
        reference_distributions(b, tmp_path)


def test_cues_reach_the_oracle_on_the_frame_they_fall_in_with_their_offset():
    stim = SampleStimulus(np.zeros(16000, dtype=np.float32), 16000,
                          cues=[{"t": 0.5, "label": "T", "phase": "end", "gold_answer": "yes"}], item_id="3")
    stim.bind(16000, 1280)                           # 80 ms frames: 0.5 s falls in frame 6, 20 ms in
    sent = {}
    for n in range(13):
        assert stim.next_input(n) is not None
        sent[n] = stim.drain_labels()
    assert [n for n, labels in sent.items() if labels] == [6]
    label = sent[6][0]
    assert (label["label"], label["phase"], label["gold_answer"], label["frame_idx"]) == ("T", "end", "yes", 6)
    assert label["offset_s"] == pytest.approx(0.02)
    assert stim.next_input(13) is None   # 12.5 frames of input, the last padded; no tail: as long as the input


def test_latency_averages_only_the_samples_that_took_the_turn_and_errors_stay_out():
    records = [{"outcome": "ok", "took_turn": True, "latency_s": 0.3},
               {"outcome": "ok", "took_turn": True, "latency_s": 0.0},
               {"outcome": "ok", "took_turn": False, "latency_s": None},
               {"outcome": "error", "item": "4"}]
    m = task_metrics(records, "smooth-turn-taking")
    assert m["tor"] == {"value": 2 / 3, "numerator": 2, "denominator": 3}
    assert m["latency_s"] == {"value": pytest.approx(0.15), "numerator": pytest.approx(0.3), "denominator": 2}


def test_relevance_averages_parsed_ratings_and_counts_the_unparseable_apart():
    rel = [{"parsed_ok": True, "rating": 4}, {"parsed_ok": True, "rating": 2}, {"parsed_ok": False, "rating": None}]
    records = [{"outcome": "ok", "took_turn": True, "latency_s": 0.1, "relevance": r} for r in rel]
    records.append({"outcome": "ok", "took_turn": False, "latency_s": None, "relevance": None})
    m = task_metrics(records, "user-interruption")
    assert m["relevance"] == {"value": 3.0, "numerator": 6.0, "denominator": 2, "unparseable": 1}
    assert m["tor"]["numerator"] == 3 and m["latency_s"]["denominator"] == 3


def test_a_rating_off_the_integer_scale_is_unparseable(tmp_path):
    from collections import Counter

    def offline(step: float | None):
        params = {"method": "quality-heuristic", **({"score_step": step} if step else {})}
        return Judge.from_spec({"kind": "judge", "id": "j", "task": "fdb-interruption-relevance",
                                "label": "offline heuristic judge", "provider": "offline", "offline": params},
                               tmp_path / "j.yaml")

    half_steps, whole = offline(None), offline(1)
    b = {"options": {"relevance": {"min": 0, "max": 5, "step": 1}}}
    info = {"annotation": [{"context": "Tell me about cats.", "interrupt": "What about dogs?"}]}
    rec = {"transcript": "dogs bark"}
    sf.write(tmp_path / "r.wav", np.zeros((160, 2), dtype=np.float32), 16000)
    assert not float(half_steps.decide({"context": "", "user_turn": "What about dogs?",
                                        "transcript": "dogs bark"}).value).is_integer()

    half = relevance({"relevance": half_steps}, b, info, rec, tmp_path / "r.wav", Counter())
    assert half["parsed_ok"] is False and half["rating"] is None and "not on the scale" in half["reason"]
    ok = relevance({"relevance": whole}, b, info, rec, tmp_path / "r.wav", Counter())
    assert ok["parsed_ok"] is True and float(ok["rating"]).is_integer()


def test_the_embedded_suite_renders_its_source_into_the_cache_once(tmp_path, monkeypatch):
    monkeypatch.setenv("DUPLEXEVAL_CACHE", str(tmp_path))
    b = bench("pause", "synthetic_pause_handling", path="data/embedded/fdb/source.yaml")
    root = data_root(b)
    # in the content store: renders/<key[:2]>/<key>/, checked file by file on every read
    assert root.parent.parent == tmp_path / "renders" and (root / "synthetic_pause_handling/1/input.wav").is_file()
    assert (root.parent / f"{root.name}.json").is_file()
    stamp = (root / "synthetic_pause_handling/1/input.wav").stat().st_mtime_ns
    assert data_root(b) == root and (root / "synthetic_pause_handling/1/input.wav").stat().st_mtime_ns == stamp
    assert (repo_root() / "data/embedded/fdb/source.yaml").is_file()
