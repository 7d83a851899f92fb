"""status.json vouches for the files written before it: a damaged item is an error, never silence."""

from __future__ import annotations

import pytest
from runner_helpers import faulty_spec, tone

from duplexeval.runner import FileStimulus, run_items
from duplexeval.runner.integrity import item_status

RATE = 16000


@pytest.fixture
def finished(tmp_path):
    run_items(faulty_spec("none"), [("a", lambda: FileStimulus(tone(0.5), RATE))], tmp_path)
    item = tmp_path / "items" / "a"
    assert item_status(item)["status"] == "ok"
    return item


def _truncate(p):
    data = p.read_bytes()
    p.write_bytes(data[: min(5000, len(data) // 2)])


def _flip(p):
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0x01
    p.write_bytes(bytes(data))


@pytest.mark.parametrize("name", ["recording.wav", "events.jsonl"])
@pytest.mark.parametrize("harm", [_truncate, _flip, lambda p: p.unlink()], ids=["truncate", "flip", "delete"])
def test_a_damaged_artifact_makes_the_item_an_error_naming_the_file(finished, name, harm):
    harm(finished / name)
    st = item_status(finished)
    assert st["status"] == "error" and st["error_code"] == "DAMAGED"
    assert name in st["reason"]


def test_an_unreadable_status_file_is_an_error_not_a_crash(finished):
    (finished / "status.json").write_text("{not json")
    st = item_status(finished)
    assert st["status"] == "error" and "status.json" in st["reason"]


def test_a_resume_replays_a_damaged_item(finished, tmp_path):
    _truncate(finished / "recording.wav")
    results = run_items(faulty_spec("none"), [("a", lambda: FileStimulus(tone(0.5), RATE))], tmp_path)
    assert results[0].status == "ok" and not results[0].skipped
    assert item_status(finished)["status"] == "ok"


def test_status_records_frames_duration_and_lines(finished):
    import json

    st = json.loads((finished / "status.json").read_text())
    assert st["recording_frames"] > 0 and st["recording_channels"] == 2 and st["recording_rate"] == RATE
    assert abs(st["recording_duration_s"] - st["recording_frames"] / RATE) < 1e-6
    assert st["events_lines"] == len((finished / "events.jsonl").read_text().splitlines())


def test_a_truncated_recording_names_its_frame_count(finished):
    _truncate(finished / "recording.wav")
    assert "frames" in item_status(finished)["reason"]


def test_an_edited_status_that_still_parses_is_an_error(finished):
    import json

    path = finished / "status.json"
    st = json.loads(path.read_text())
    st["seed"] += 1
    path.write_text(json.dumps(st))
    st = item_status(finished)
    assert st["status"] == "error" and "status_sha256" in st["reason"]
