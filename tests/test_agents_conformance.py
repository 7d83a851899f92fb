"""`duplexeval conformance` passes for all four reference agents (issue 3, "Done when").

Real processes, real Unix sockets; cascade loads real Silero and Whisper tiny.en.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from duplexeval.runner import load_model_spec, model_spec_from
from duplexeval.runner.conformance import run_conformance
from duplexeval.runner.modelspec import REPO_ROOT
from runner_helpers import faulty_spec


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
