"""Harness overhead (issue 15, item 4): a pipelined lockstep window records the same bytes.

Real agent processes over real Unix sockets. Each case runs the same items with one
frame in flight (the plain ping-pong, byte-identical to the code before the window
existed: checked by sha256 when the change was made, docs/runner.md) and with K > 1,
and compares recording.wav / events.jsonl byte for byte.
"""

from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
from runner_helpers import ScriptedStimulus, faulty_spec, tone

from duplexeval.benchmarks.mpe.scenes.scheduler import MPEScheduler
from duplexeval.runner import FileStimulus, load_model_spec, run_items
from duplexeval.runner.session import pipeline_window
from duplexeval.specs.modelspec import REPO_ROOT, model_spec_from

TESTS = Path(__file__).parent
RATE = 16000


def with_window(data: dict, k: int) -> dict:
    data = copy.deepcopy(data)
    data["launch"]["pipeline_frames"] = k
    return data


def file_items() -> list:
    return [("tone", lambda: FileStimulus(tone(3.0, seed=1), RATE, tail_frames=5)),
            ("no-tail", lambda: FileStimulus(tone(0.5, seed=2), RATE)),  # input_end falls after the last frame
            ("shorter-than-window", lambda: FileStimulus(tone(0.2, seed=3), RATE, tail_frames=1))]


def recorded(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.name in ("recording.wav", "events.jsonl")}


def assert_same_bytes(a: Path, b: Path) -> None:
    ra, rb = recorded(a), recorded(b)
    assert ra and sorted(ra) == sorted(rb)
    for name in ra:
        assert ra[name] == rb[name], name


@pytest.mark.parametrize("model", ["babbler", "oracle"])
def test_eight_frames_in_flight_record_the_same_bytes_as_one(tmp_path, model):
    # babbler: 24 kHz, so both resamplers run; oracle: teacher forcing absent, labels none.
    data = load_model_spec(model).data
    for k in (1, 8):
        results = run_items(with_window(data, k), file_items(), tmp_path / f"k{k}", rate=RATE)
        assert [r.status for r in results] == ["ok"] * 3, [r.reason for r in results]
    assert_same_bytes(tmp_path / "k1", tmp_path / "k8")


def test_model_events_keep_their_place_in_events_jsonl_when_pipelined(tmp_path):
    data = {"id": "event-agent", "capabilities": ["text_events", "state_events"], "clocks": ["lockstep"],
            "launch": {"backend": "local", "command": ["{python}", str(TESTS / "runner_event_agent.py"), "--socket", "{socket}"],
                       "env": {"PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(TESTS)])}},
            "audio": {"in_rate": 16000, "out_rate": 16000, "frame_ms": 80}}
    for k in (1, 4):
        run_items(with_window(data, k), file_items(), tmp_path / f"k{k}", rate=RATE)
    assert_same_bytes(tmp_path / "k1", tmp_path / "k4")
    events = (tmp_path / "k4/items/tone/events.jsonl").read_text().splitlines()
    types = [json.loads(e)["type"] for e in events]
    # frame 2's events come after input_start (frame 0) and before input_end (frame 38)
    assert types.index("input_start") < types.index("model_state") < types.index("input_end")


@pytest.mark.parametrize("mode", ["crash", "garbage", "nan"])
def test_a_fault_with_frames_in_flight_is_reported_as_with_one(tmp_path, mode):
    items = [("long", lambda: FileStimulus(tone(1.0), RATE))]
    status = {}
    for k in (1, 8):
        run_items(with_window(faulty_spec(mode), k), items, tmp_path / f"k{k}", rate=RATE)
        s = json.loads((tmp_path / f"k{k}/items/long/status.json").read_text())
        status[k] = {key: s.get(key) for key in ("status", "error_code", "error_frame", "reason")}
        status[k]["reason"] = re.sub(r"/tmp/dxe-\w+", "/tmp/dxe-X", status[k]["reason"])  # each server its own folder
    assert status[8] == status[1]
    assert status[8]["status"] == "error" and status[8]["error_frame"] == 3


def test_the_window_is_only_used_for_stimuli_that_do_not_listen():
    spec = model_spec_from(with_window(load_model_spec("silent").data, 8))
    assert pipeline_window(spec, FileStimulus(tone(0.2), RATE)) == 8
    assert pipeline_window(spec, FileStimulus(tone(0.2), RATE), override=3) == 3
    # The adaptive MPE scheduler waits for the model to fall silent: never pipelined.
    assert MPEScheduler.output_independent is False
    assert pipeline_window(spec, ScriptedStimulus(tone(0.2), RATE)) == 1
    assert pipeline_window(load_model_spec("silent"), FileStimulus(tone(0.2), RATE)) == 16  # the agents' spec
    assert pipeline_window(load_model_spec("moshi-tiny"), FileStimulus(tone(0.2), RATE)) == 1  # the default


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "8"])
def test_a_bad_window_is_an_error_naming_the_field(bad):
    spec = model_spec_from(with_window(load_model_spec("silent").data, bad))
    with pytest.raises(ValueError, match=r"model silent: .*launch\.pipeline_frames.* must be an integer >= 1"):
        pipeline_window(spec, FileStimulus(np.zeros(160, dtype=np.float32), RATE))
