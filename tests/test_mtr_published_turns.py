"""The MTR-DuplexBench authors' published turn boundaries of the quality clips (issue 36):
`turns: published` reads their layout (one {id, filtered_turn: [{start, end}]} per line,
their data/Scenarios_encoding/dialogue_quality/semantic_turned_time_v3.jsonl) instead of
segmenting; a reading of mtr-quality, named by paper-mtr, not re-scorable (it decides the
rounds). The clip is the embedded quality dialogue, whose sidecar knows its turns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from duplexeval.benchmarks.mtr.format import load_dialogue
from duplexeval.benchmarks.mtr.generate import render_script_file
from duplexeval.benchmarks.mtr.items import scored_rounds
from duplexeval.benchmarks.mtr.published_turns import PublishedTurnsError, read_turn_file
from duplexeval.specs import Registry, repo_root
from duplexeval.specs.readings import benchmark_readings

FIXTURE = Path(__file__).parent / "fixtures" / "mtr_published" / "semantic_turned_time_v3.jsonl"


def test_the_authors_layout_is_read_in_file_order():
    assert read_turn_file(FIXTURE) == {"clip-a": [(1.2, 3.4), (6.0, 8.5)], "clip-b": []}


@pytest.mark.parametrize("line, message", [
    ('{"id": "x", "turns": []}', ":1: expected an object with `id`"),
    ('{"id": "x", "filtered_turn": [{"start": 3.0, "end": 2.0}]}', ":1: filtered_turn[0] needs numeric start < end"),
    ("not json", ":1: not JSON"),
])
def test_a_line_off_the_layout_is_an_error_naming_file_line_and_field(tmp_path, line, message):
    path = tmp_path / "turns.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(PublishedTurnsError, match=message.replace("[", r"\[").replace("]", r"\]")):
        read_turn_file(path)


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    out = tmp_path_factory.mktemp("quality")
    (sidecar,) = render_script_file(repo_root() / "data/embedded/mtr/quality.yaml", out, 16000)
    return load_dialogue(sidecar)


def bench(turns_file: Path) -> dict:
    data = Registry.load().get("benchmark", "mtr-quality").data
    return {**data, "turns": "published", "data": {**data["data"], "turns_file": str(turns_file)},
            "asr": {"backend": "faster-whisper", "model": "tiny.en", "language": "en", "options": {"beam_size": 1}}}


def test_published_turns_are_the_rounds_and_windows_run_to_the_next_turns_end(tmp_path, clip):
    truth = [(r.user.start, r.user.end) for r in clip.rounds]
    # The file splits the clip differently from its sidecar (its first two turns as one):
    # what the file says is what is scored, with no segmentation judge at all.
    published = [(truth[0][0], truth[1][1]), *truth[2:]]
    path = tmp_path / "semantic_turned_time_v3.jsonl"
    path.write_text(json.dumps({"id": clip.id, "filtered_turn": [{"start": a, "end": b} for a, b in published]}) + "\n")
    rounds = scored_rounds(bench(path), [clip], judges={})
    assert [(r.window.start_s, r.window.user_end_s) for r in rounds] == published
    ends = [r.window.end_s for r in rounds]
    assert ends[:-1] == [b for _, b in published[1:]]                       # next turn's end
    assert ends[-1] == pytest.approx(len(clip.audio()[0]) / clip.rate)      # the last: the clip's end
    assert all(r.round.user.text for r in rounds)                           # the user's words, from the ASR


def test_a_clip_the_file_does_not_list_is_refused_by_name(tmp_path, clip):
    with pytest.raises(PublishedTurnsError, match=f"no line for clip '{clip.id}'"):
        scored_rounds(bench(FIXTURE), [clip], judges={})
    data = Registry.load().get("benchmark", "mtr-quality").data
    with pytest.raises(PublishedTurnsError, match="needs data.turns_file"):
        scored_rounds({**data, "turns": "published"}, [clip], judges={})


def test_turns_is_a_reading_of_quality_named_by_the_paper_suite_and_not_rescorable():
    registry = Registry.load()
    found = benchmark_readings(registry.get("benchmark", "mtr-quality").data)["turns"]
    assert (found["value"], found["values"], found["rescore"]) == ("segmented", ["segmented", "published"], False)
    assert "turns" not in benchmark_readings(registry.get("benchmark", "mtr-combo-s").data)
    assert registry.get("suite", "paper-mtr").data["overrides"]["readings"]["turns"] == "published"
