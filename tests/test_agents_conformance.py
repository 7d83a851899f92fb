"""`duplexeval conformance` passes for all four reference agents (issue 3, "Done when").

Real processes, real Unix sockets; cascade loads real Silero and Whisper tiny.en.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from runner_helpers import faulty_spec

from duplexeval.runner import load_model_spec, model_spec_from
from duplexeval.runner.conformance import run_conformance
from duplexeval.specs.modelspec import REPO_ROOT


@pytest.mark.parametrize("model_id", ["silent", "babbler", "oracle"])
def test_reference_agent_passes_conformance(model_id):
    results = run_conformance(load_model_spec(model_id))
    failed = [f"{r.name}: {r.detail}" for r in results if r.status == "fail"]
    assert not failed, failed
    passed = {r.name for r in results if r.status == "pass"}
    assert {"start", "handshake", "lockstep", "reset", "errors", "realtime"} <= passed


def test_cascade_passes_conformance_through_the_cli():
    proc = subprocess.run([sys.executable, "-m", "duplexeval.cli", "conformance", "cascade"],
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "cascade: all checks passed" in proc.stdout
    assert "FAIL" not in proc.stdout


def test_conformance_reports_a_broken_model_as_failed():
    results = {r.name: r for r in run_conformance(model_spec_from(faulty_spec("wrong-size", at_frame=1)))}
    assert results["handshake"].status == "pass"
    assert results["lockstep"].status == "fail"
    assert "samples" in results["lockstep"].detail


@pytest.mark.parametrize("at_frame", [20, 200])
def test_a_late_garbage_fault_fails_the_long_lockstep_check_naming_the_frame(at_frame):
    """Issue 25: 12 lockstep and 19 realtime frames let a fault from frame 20 on pass."""
    results = {r.name: r for r in run_conformance(model_spec_from(faulty_spec("garbage", at_frame=at_frame)))}
    assert results["lockstep"].status == "pass"  # the short check cannot see it
    assert results["long_lockstep"].status == "fail"
    assert f"at frame {at_frame}" in results["long_lockstep"].detail


def test_spot_checks_catch_a_short_or_out_of_range_model_channel():
    import numpy as np

    from duplexeval.runner.conformance import spot_check

    heard = [np.zeros(1280, dtype=np.float32)] * 10
    assert "10 random frames of 10" in spot_check(np.zeros(12800, dtype=np.float32), heard, 1280, seed=1)
    with pytest.raises(AssertionError, match="samples for"):
        spot_check(np.zeros(12800 - 7, dtype=np.float32), heard, 1280, seed=1)
    loud = np.zeros(12800, dtype=np.float32)
    loud[1280 * 4 + 3] = 2.0
    with pytest.raises(AssertionError, match="output frame 4"):
        spot_check(loud, heard, 1280, seed=1, count=10)
