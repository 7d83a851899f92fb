"""The server base over real sockets: TCP loopback transport, text/state events reaching events.jsonl."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from duplexeval.audio import read_stereo_recording
from duplexeval.io import read_jsonl
from duplexeval.runner import FileStimulus, load_model_spec, run_item
from duplexeval.runner.client import Endpoint
from duplexeval.runner.session import run_session
from duplexeval.specs.modelspec import REPO_ROOT

TESTS = Path(__file__).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_server_on_tcp_loopback_runs_a_lockstep_session():
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "duplexeval.agents.silent", "--port", str(port)],
                            cwd=REPO_ROOT, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, "server did not start"
                time.sleep(0.05)
        stim = FileStimulus(np.zeros(16000, dtype=np.float32), 16000)
        out = asyncio.run(run_session(Endpoint(port=port), load_model_spec("silent"), stim, "lockstep"))
        assert out.ok, out.fault
        assert out.frames == 13 and len(out.said) == 13 * 1280
    finally:
        proc.terminate()
        proc.wait(timeout=5)


def test_model_text_and_state_events_are_recorded_at_their_frame(tmp_path):
    spec = {"id": "event-agent", "capabilities": ["text_events", "state_events"], "clocks": ["lockstep"],
            "launch": {"backend": "local", "command": ["{python}", str(TESTS / "runner_event_agent.py"), "--socket", "{socket}"],
                       "env": {"PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(TESTS)])}},
            "audio": {"in_rate": 16000, "out_rate": 16000, "frame_ms": 80}}
    result = run_item(spec, FileStimulus(np.zeros(8000, dtype=np.float32), 16000), tmp_path / "item")
    assert result.status == "ok", result.reason
    events = read_jsonl(tmp_path / "item" / "events.jsonl")
    assert {"t": 0.16, "frame": 2, "type": "model_state", "state": "speak"} in events
    assert {"t": 0.16, "frame": 2, "type": "model_text", "text": "hello"} in events
    _, said, _ = read_stereo_recording(tmp_path / "item" / "recording.wav")
    assert np.all(said[: 2 * 1280] == 0) and np.allclose(said[2 * 1280 :], 0.25, atol=1e-3)
