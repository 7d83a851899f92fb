"""A model server stopped by a signal from outside the harness leaves its item resumable (issue 25).

A background run ignores SIGINT; a Ctrl-C sent to its process group still stops the model
server, which used to record the item as the model's own `CLOSED` fault, never replayed.
Real processes: the silent agent over a Unix socket, a real SIGINT / SIGTERM.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import numpy as np
import pytest
from runner_helpers import faulty_spec, tone

from duplexeval.runner import FileStimulus, load_model_spec, run_items
from duplexeval.runner.items import finished_status, interrupting_signal


def _children() -> list[int]:
    me = str(os.getpid())
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me:
            out.append(int(stat.parent.name))
    return out


class SignalAt(FileStimulus):
    """Plays a tone and, at `frame`, sends `sig` to the model server (this process's child)."""

    def __init__(self, sig: int, frame: int = 10):
        super().__init__(tone(4.0), 16000)
        self.sig, self.frame = sig, frame

    def next_input(self, frame_idx: int) -> np.ndarray | None:
        if frame_idx == self.frame:
            for pid in _children():
                os.kill(pid, self.sig)
        return super().next_input(frame_idx)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_outside_signal_to_the_server_mid_item_is_replayed_on_resume(tmp_path, sig):
    spec = load_model_spec("silent")
    (first,) = run_items(spec, [("a", lambda: SignalAt(sig))], tmp_path)
    status = json.loads((tmp_path / "items" / "a" / "status.json").read_text())
    assert first.status == "error" and status["error_code"] == "INTERRUPTED", status
    assert signal.Signals(sig).name in status["reason"] and "resume replays" in status["reason"]
    assert finished_status(tmp_path / "items" / "a") is None  # not final: a resume plays it again
    (again,) = run_items(spec, [("a", lambda: FileStimulus(tone(4.0), 16000))], tmp_path)
    assert again.status == "ok" and not again.skipped


def test_a_model_that_crashes_on_its_own_stays_a_final_error(tmp_path):
    (first,) = run_items(faulty_spec("crash", at_frame=2), [("a", lambda: FileStimulus(tone(1.0), 16000))], tmp_path)
    status = json.loads((tmp_path / "items" / "a" / "status.json").read_text())
    assert status["error_code"] == "CLOSED" and "exit status 3" in status["reason"]
    (again,) = run_items(faulty_spec("crash", at_frame=2), [("a", lambda: FileStimulus(tone(1.0), 16000))], tmp_path)
    assert again.skipped


@pytest.mark.parametrize("status,name", [(130, "SIGINT"), (143, "SIGTERM"), (-2, "SIGINT"), (-15, "SIGTERM"),
                                         (129, "SIGHUP"), (0, None), (1, None), (3, None), (-9, None), (137, None),
                                         (-11, None), (None, None)])
def test_which_exit_statuses_mean_stopped_from_outside(status, name):
    assert interrupting_signal(status) == name
