"""Faults are results, not silence: each broken-model mode yields an `error` item with its
reason, the run goes on with a fresh model process, and no item is lost or duplicated."""

from __future__ import annotations

import json

import pytest
from runner_helpers import faulty_spec, tone

from duplexeval.io import read_jsonl
from duplexeval.runner import FileStimulus, run_items

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


def test_a_model_that_cannot_start_marks_every_item_startup_error_that_a_resume_redoes(tmp_path):
    spec = faulty_spec("none")
    # Starts only once the "weights" flag file exists: the same spec fails, then resumes.
    flag = tmp_path / "weights-placed"
    spec["launch"]["env"] = {"WEIGHTS_FLAG": str(flag)}
    spec["launch"]["command"] = [
        "{python}", "-c",
        "import os, runpy, sys; os.path.exists(os.environ['WEIGHTS_FLAG']) or sys.exit('no weights here'); "
        "sys.argv = ['faulty'] + sys.argv[1:]; runpy.run_module('duplexeval.agents.faulty', run_name='__main__')",
        *spec["launch"]["command"][3:],
    ]
    items = [(i, lambda: FileStimulus(tone(0.2), RATE)) for i in ("a", "b")]
    out = tmp_path / "run"
    results = run_items(spec, items, out)
    assert [r.status for r in results] == ["error", "error"]  # none lost: each says why
    first = json.loads((out / "items" / "a" / "status.json").read_text())
    second = json.loads((out / "items" / "b" / "status.json").read_text())
    assert first["error_code"] == "STARTUP" and "no weights here" in first["reason"]
    assert "not retried" in second["reason"]  # one failed start is not repeated per item
    assert not (out / "items" / "a" / "recording.wav").exists()
    flag.write_text("ok")
    results = run_items(spec, items, out)  # the resume plays them: a start failure is no result
    assert [(r.status, r.skipped) for r in results] == [("ok", False), ("ok", False)]


def test_startup_errors_are_redone_on_resume_not_kept(tmp_path):
    from duplexeval.runner.items import finished_status

    item = tmp_path / "items" / "a"
    item.mkdir(parents=True)
    (item / "status.json").write_text(json.dumps({"status": "error", "error_code": "STARTUP", "reason": "image missing"}))
    assert finished_status(item) is None
    (item / "status.json").write_text(json.dumps({"status": "error", "error_code": "CRASH", "reason": "exit 1"}))
    assert finished_status(item)["error_code"] == "CRASH"  # a model fault is a result, kept
