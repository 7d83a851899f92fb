"""Issue 24, item 3: the audit's Duplex-MPE timelines, each failing before the fix.

Items are hand-made timelines: events.jsonl says where each turn played, and the speech
of the model channel is given as episodes with their words. Two stand-ins, named so:
`StandInVAD` returns the hand-made episodes instead of running Silero on the recording
(the recording's model channel carries only a per-episode marker level), and
`StandInASR` returns each episode's hand-made words. The judges are the real offline
ones; scoring, windows, readings and aggregation are the code under test.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from mpe_helpers import RATE, spec

from duplexeval.audio import write_wav
from duplexeval.benchmarks.mpe import score as mpe_score
from duplexeval.benchmarks.mpe.results import aggregate, score_bench_dir
from duplexeval.benchmarks.mpe.score import CallCounter, score_item
from duplexeval.benchmarks.mpe.statistics import run_statistics
from duplexeval.io import atomic_write_json, atomic_write_jsonl
from duplexeval.judges.asr import Transcript, Word
from duplexeval.judges.llm import Judge
from duplexeval.specs import load_spec, repo_root

Speech = tuple[float, float, list[tuple[str, float, float]]]  # episode start, end, words (text, start, end)


@pytest.fixture(scope="module")
def judges():
    specs = {role: load_spec(repo_root() / "specs" / "judges" / f"{jid}.yaml", "judge")
             for role, jid in spec()["judges"].items()}
    return {role: Judge.from_spec(s.data, s.path) for role, s in specs.items()}


def marker(k: int) -> float:
    return 0.01 * (k + 1)


class StandInASR:
    """Stand-in for the ASR: the hand-made words of the episode whose marker the clip holds."""

    def __init__(self, speech: list[Speech], pad_s: float) -> None:
        self.speech, self.pad_s = speech, pad_s

    def __call__(self, audio, rate, asr):
        k = int(round(float(np.max(np.abs(audio))) / 0.01)) - 1
        start, _, words = self.speech[k]
        offset = max(0.0, start - self.pad_s)
        return Transcript(" ".join(w for w, _, _ in words),
                          [Word(w, a - offset, b - offset) for w, a, b in words], "stand-in", "stand-in")


def hand_item(item_dir: Path, turns: list[tuple[str, float, float]], speech: list[Speech], end: float,
              monkeypatch) -> StandInASR:
    """An item folder with these turns (label, start, end) and this model speech."""
    n = int(round(end * RATE)) + RATE
    model = np.zeros(n, np.float32)
    for k, (a, b, _) in enumerate(speech):
        model[int(a * RATE):int(b * RATE)] = marker(k)
    item_dir.mkdir(parents=True)
    write_wav(item_dir / "recording.wav", np.stack([np.zeros(n, np.float32), model], axis=1), RATE)
    events = [{"type": "scene", "t": 0.0, "scene_id": item_dir.name, "condition": "explicit"}]
    for i, (label, a, b) in enumerate(turns):
        extra = {"gold_answer": "the taco place, nine dollars"} if label == "T" else {}
        events += [{"type": "turn_start", "turn": i, "turn_id": f"hand:{i}", "label": label, "t": a,
                    "text": f"turn {i}", **extra},
                   {"type": "turn_end", "turn": i, "turn_id": f"hand:{i}", "label": label, "t": b}]
    events.append({"type": "scene_end", "t": end})
    atomic_write_jsonl(item_dir / "events.jsonl", events)
    atomic_write_json(item_dir / "status.json", {"status": "ok", "reason": None})
    # Stand-in VAD: the hand-made episodes, not Silero's reading of the marker levels.
    monkeypatch.setattr(mpe_score, "model_episodes", lambda *a, **k: [(s, e) for s, e, _ in speech])
    return StandInASR(speech, spec()["metrics"]["asr_pad_s"])


def scored(tmp_path, monkeypatch, judges, turns, speech, end, **metrics):
    bench = spec()
    for path, value in metrics.items():
        block, name = path.split("__")
        bench["metrics"][block][name] = value
    asr = hand_item(tmp_path / "item", turns, speech, end, monkeypatch)
    records = score_item(tmp_path / "item", bench, judges, transcriber=asr)
    return records, aggregate(records, bench, CallCounter(), {"ok": 1, "total": 1})


def one(records, metric, label=None):
    return next(r for r in records if r["metric"] == metric and (label is None or r["label"] == label))


# -- a late reply to T is judged whole -------------------------------------------------------

# T ends at 10.0; N2 plays 10.5-13.0; Aria: "Hmm, let me think." 11.0-11.8, then "The taco
# place, nine dollars." 12.8-14.5 (a 1.0 s pause: two episodes). The scheduler places the
# turn after N2 only once Aria has been silent 2 s: 16.5.
LATE_TURNS = [("N1", 0.0, 4.5), ("T", 5.0, 10.0), ("N2", 10.5, 13.0), ("N3", 16.5, 18.0)]
LATE_SPEECH: list[Speech] = [
    (11.0, 11.8, [("Hmm,", 11.0, 11.2), ("let", 11.25, 11.4), ("me", 11.4, 11.5), ("think.", 11.5, 11.8)]),
    (12.8, 14.5, [("The", 12.8, 12.9), ("taco", 12.9, 13.2), ("place,", 13.2, 13.6), ("nine", 13.7, 13.9),
                  ("dollars.", 13.9, 14.5)]),
]


def test_a_late_reply_begun_after_the_next_turn_started_is_judged_whole(tmp_path, monkeypatch, judges) -> None:
    records, results = scored(tmp_path, monkeypatch, judges, LATE_TURNS, LATE_SPEECH, 18.5)
    assert one(records, "start")["outcome"] == "fresh"
    answer = one(records, "answer")
    assert answer["transcript"] == "Hmm, let me think. The taco place, nine dollars."
    assert answer["outcome"] == "correct"
    window = one(records, "shush", "N2")
    assert window["passed"] is False and window["t_reply_speech"] is True
    assert results["metrics"]["shush"]["failed_by_t_reply"] == 1  # two episodes, one spilled-into window


def test_a_late_two_episode_reply_attributed_to_t_leaves_the_window_it_spills_into(tmp_path, monkeypatch,
                                                                                   judges) -> None:
    records, results = scored(tmp_path, monkeypatch, judges, LATE_TURNS, LATE_SPEECH, 18.5,
                              shush__attribute_t_response="attributed-to-t")
    assert one(records, "shush", "N2")["outcome"] == "silent"
    assert results["metrics"]["shush"]["failed_by_t_reply"] == 0


def test_response_end_episode_still_judges_the_filler_alone(tmp_path, monkeypatch, judges) -> None:
    records, _ = scored(tmp_path, monkeypatch, judges, LATE_TURNS, LATE_SPEECH, 18.5, answer__response_end="episode")
    assert one(records, "answer")["outcome"] == "incorrect"


# -- speech straddling a window's end --------------------------------------------------------

# N2's window is [5.0, 7.5); a "Mm-hmm" episode starts just before its end, its word after it.
EDGE_TURNS = [("N1", 0.0, 4.5), ("N2", 5.0, 7.0), ("N3", 7.5, 9.0), ("T", 9.5, 11.0), ("N1", 11.5, 12.5)]


@pytest.mark.parametrize("onset", [7.40, 7.45, 7.49])
def test_a_backchannel_straddling_a_window_end_is_heard_in_the_next_window_only(tmp_path, monkeypatch, judges,
                                                                               onset) -> None:
    speech: list[Speech] = [(onset, 7.9, [("Mm-hmm.", 7.5, 7.85)])]
    records, results = scored(tmp_path, monkeypatch, judges, EDGE_TURNS, speech, 13.0)
    n2, n3 = one(records, "shush", "N2"), one(records, "shush", "N3")
    assert (n2["outcome"], n2["passed"]) == ("silent", True)
    assert n2["speech"] and n2["counted_speech"] == []  # heard by the VAD, belongs next door
    assert (n3["outcome"], n3["passed"]) == ("backchannel", True)
    assert results["metrics"]["shush"]["outcomes"].get("unreadable_speech", 0) == 0


def test_straddle_any_overlap_fails_the_first_window_as_unreadable(tmp_path, monkeypatch, judges) -> None:
    speech: list[Speech] = [(7.45, 7.9, [("Mm-hmm.", 7.5, 7.85)])]
    records, _ = scored(tmp_path, monkeypatch, judges, EDGE_TURNS, speech, 13.0, shush__straddle="any-overlap")
    assert one(records, "shush", "N2")["outcome"] == "unreadable_speech"


def test_wordless_speech_straddling_an_edge_fails_once_where_it_lies(tmp_path, monkeypatch, judges) -> None:
    records, results = scored(tmp_path, monkeypatch, judges, EDGE_TURNS, [(7.45, 7.9, [])], 13.0)
    assert one(records, "shush", "N2")["passed"] is True
    assert one(records, "shush", "N3")["outcome"] == "unreadable_speech"
    assert results["metrics"]["shush"]["outcomes"]["unreadable_speech"] == 1


# -- denominators --------------------------------------------------------------------------

def test_deleted_item_folders_of_planned_scenes_are_missing_units_not_absent_ones(tmp_path) -> None:
    from duplexeval.benchmarks.mpe.plan_file import write_plan_file
    from duplexeval.benchmarks.mpe.scenes.loader import EMBEDDED_SCENES, load_bench_scenes

    bench = {**spec(), "data": {"source": "embedded", "path": str(EMBEDDED_SCENES)}}
    bench_dir = tmp_path / "silent" / "mpe-explicit"
    scenes = load_bench_scenes(bench)
    write_plan_file(bench_dir, bench, scenes)
    kept = scenes[:4]  # 20 of 24 item folders deleted
    for scene in kept:
        d = bench_dir / "items" / scene.id
        d.mkdir(parents=True)
        n = 20 * RATE
        write_wav(d / "recording.wav", np.zeros((n, 2), np.float32), RATE)
        atomic_write_jsonl(d / "events.jsonl", [
            {"type": "scene", "t": 0.0, "scene_id": scene.id, "condition": "explicit"},
            {"type": "turn_start", "turn": 0, "turn_id": "x", "label": "N2", "t": 1.0},
            {"type": "turn_end", "turn": 0, "turn_id": "x", "label": "N2", "t": 3.0},
            {"type": "turn_start", "turn": 1, "turn_id": "t", "label": "T", "t": 3.5, "gold_answer": "x"},
            {"type": "turn_end", "turn": 1, "turn_id": "t", "label": "T", "t": 5.0},
            {"type": "turn_start", "turn": 2, "turn_id": "y", "label": "N3", "t": 5.5},
            {"type": "turn_end", "turn": 2, "turn_id": "y", "label": "N3", "t": 7.0},
            {"type": "scene_end", "t": 12.0}])
        atomic_write_json(d / "status.json", {"status": "ok", "reason": None})
    results = score_bench_dir(bench_dir, bench, judges={})
    assert results["complete"] is False and results["incomplete"]["items"] == {"missing": 20}
    assert results["metrics"]["start"]["denominator"] == 24
    assert results["metrics"]["start"]["outcomes"]["error"] == 20
    assert results["items"]["missing"] == 20 and results["items"]["total"] == 24


def stop_record(eligibility: str, passed) -> dict:
    return {"metric": "stop", "eligibility": eligibility, "outcome": "yielded" if passed else eligibility,
            "passed": passed}


def test_errored_n4_events_are_not_eligible_so_one_yield_is_not_reported() -> None:
    records = [stop_record("eligible", True)] + [stop_record("error", False) for _ in range(29)]
    stop = aggregate(records, spec(), CallCounter(), {"ok": 1, "error": 1, "total": 2})["metrics"]["stop"]
    assert stop["value"] is None and stop["reported"] is False
    assert (stop["eligible"], stop["errored"], stop["n4_events"]) == (1, 29, 30)
    assert stop["yield_rate_all_n4"]["denominator"] == 1  # the errored 29 are not known to have failed


def mpe_folder(run: Path, bench_id: str, condition: str, starts: dict[str, str]) -> None:
    folder = run / "model" / bench_id
    bench = {**spec(), "id": bench_id, "condition": condition, "dimension": "mpe"}
    bench["metrics"]["statistics"]["mcnemar"] = {"pair_with": "mpe-implicit"}
    atomic_write_json(folder / "benchmark.json", bench)
    atomic_write_jsonl(folder / "records.jsonl", [
        {"item": item, "metric": "start", "outcome": outcome, "passed": outcome == "fresh"}
        for item, outcome in starts.items()])
    atomic_write_json(folder / "results.json", {"metrics": {"presence": {"value": 0.5}, "start": {"value": 0.5}}})


def test_mcnemar_leaves_out_an_item_whose_t_errored(tmp_path) -> None:
    mpe_folder(tmp_path, "mpe-explicit", "explicit", {"a": "fresh", "b": "fresh", "c": "miss"})
    mpe_folder(tmp_path, "mpe-implicit", "implicit", {"a": "error", "b": "miss", "c": "miss"})
    entry = next(e for e in run_statistics(tmp_path)["mcnemar"] if e["metric"] == "presence")
    assert (entry["pairs"], entry["first_only"], entry["second_only"]) == (2, 1, 0)
    assert entry["excluded_errored"] == 1
    json.dumps(entry)


def test_spearman_and_mcnemar_leave_an_errored_t_out_alike(tmp_path) -> None:
    """Issue 36: one rule in both tests. An errored T neither responded nor failed to: it
    leaves McNemar's pairs and Spearman's rates (results.json still counts it against Start)."""
    mpe_folder(tmp_path, "mpe-explicit", "explicit", {"a": "fresh", "b": "fresh", "c": "error", "d": "miss"})
    mpe_folder(tmp_path, "mpe-implicit", "implicit", {"a": "already_speaking", "b": "miss", "c": "miss", "d": "miss"})
    stats = run_statistics(tmp_path)
    explicit = next(e for e in stats["entries"] if e["benchmark"] == "mpe-explicit")
    # Over the 3 T units that did not error: 2 fresh of 3, not 2 of 4 as with the error as a failure.
    assert (explicit["presence"], explicit["start"], explicit["t_units"], explicit["excluded_errored"]) == \
        (round(2 / 3, 6), round(2 / 3, 6), 3, 1)
    implicit = next(e for e in stats["entries"] if e["benchmark"] == "mpe-implicit")
    assert (implicit["presence"], implicit["start"], implicit["excluded_errored"]) == (0.25, 0.0, 0)
    presence = next(e for e in stats["mcnemar"] if e["metric"] == "presence")
    assert (presence["pairs"], presence["excluded_errored"]) == (3, 1)


def test_statistics_json_holds_what_the_families_compute_and_names_none(tmp_path) -> None:
    from duplexeval.runs import statistics as core

    assert core.run_statistics(tmp_path) == {"schema": "duplexeval.statistics/1"}   # no family has a folder here
    mpe_folder(tmp_path, "mpe-explicit", "explicit", {"a": "fresh"})
    written = core.write_statistics(tmp_path)
    assert set(written) == {"schema", "mcnemar", "spearman", "entries", "conditions"}
    assert json.loads((tmp_path / "statistics.json").read_text()) == written
    source = (repo_root() / "duplexeval/runs/statistics.py").read_text().lower()
    assert not any(word in source for word in ("mpe", "mcnemar", "spearman", "mtr"))
