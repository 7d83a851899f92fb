"""Faults are results, not silence: each broken-model mode yields an `error` item with its
reason, the run goes on with a fresh model process, and no item is lost or duplicated."""

from __future__ import annotations

import json

import pytest

from duplexeval.io import read_jsonl
from duplexeval.runner import FileStimulus, ModelStartError, run_items
from runner_helpers import faulty_spec, tone

RATE = 16000
EXPECTED_REASON = {
    "crash": ["CLOSED", "exit status 3", "simulated crash"],
    "hang": ["TIMEOUT", "no output frame 3 within 1 s"],
    "wrong-size": ["BAD_FRAME", "1273 samples", "declared 1280"],
    "garbage": ["BAD_FRAME", "garbage binary message"],
    "nan": ["INTERNAL", "NaN"],
    "close": ["CLOSED", "model closed the socket"],
}


@pytest.mark.parametrize("mode", sorted(EXPECTED_REASON))
def test_faulty_agent_yields_error_items_and_the_run_goes_on(tmp_path, mode):
    # The agent fails from frame 3 on: 2-frame items pass, 1 s items fail.
    items = [
        ("a-short", lambda: FileStimulus(tone(0.16), RATE)),
        ("b-long", lambda: FileStimulus(tone(1.0), RATE)),
        ("c-short", lambda: FileStimulus(tone(0.16), RATE)),
        ("d-long", lambda: FileStimulus(tone(1.0), RATE)),
    ]
    results = run_items(faulty_spec(mode), items, tmp_path)
    assert [r.item_id for r in results] == ["a-short", "b-long", "c-short", "d-long"]
    assert [r.status for r in results] == ["ok", "error", "ok", "error"]
    assert sorted(p.name for p in (tmp_path / "items").iterdir()) == [i for i, _ in items]
    for r in results[1::2]:
        status = json.loads((r.item_dir / "status.json").read_text())
        assert status["status"] == "error" and status["error_frame"] == 3
        for fragment in EXPECTED_REASON[mode]:
            assert fragment in status["reason"], status["reason"]
        assert not (r.item_dir / "recording.wav").exists()  # nothing to mistake for silence
        assert read_jsonl(r.item_dir / "events.jsonl")[-1]["type"] == "error"
    for r in results[0::2]:
        assert (r.item_dir / "recording.wav").exists()


def test_a_model_that_cannot_start_stops_the_run_without_marking_items(tmp_path):
    spec = faulty_spec("none")
    spec["launch"]["command"] = ["{python}", "-c", "import sys; sys.stderr.write('no weights here'); sys.exit(2)"]
    with pytest.raises(ModelStartError, match="no weights here"):
        run_items(spec, [("a", lambda: FileStimulus(tone(0.2), RATE))], tmp_path)
    assert not (tmp_path / "items" / "a" / "status.json").exists()  # a resume redoes it
