"""Shared by the shim tests: run a shim on its stand-in core as a local server and check conformance.

Each tests/test_shims_<model>.py doubles as the stand-in server script (its __main__), so
the spec below keeps the real spec's audio, clocks and capabilities and swaps only launch.
"""

from __future__ import annotations

BASE_CHECKS = {"start", "handshake", "lockstep", "reset", "errors", "realtime"}


def standin_spec(model_id: str, script: str) -> dict:
    """The real spec of `model_id`, launched as `script` (a test file serving the stand-in)."""
    from duplexeval.runner import load_model_spec

    data = dict(load_model_spec(model_id).data)
    data["id"] = f"standin-{model_id}"
    data["launch"] = {"backend": "local", "startup_timeout_s": 60, "step_timeout_s": 20,
                      "command": ["{python}", script, "--socket", "{socket}"]}
    return data


def assert_conformance(spec: dict, must_pass: set[str]) -> None:
    from duplexeval.runner import model_spec_from
    from duplexeval.runner.conformance import run_conformance

    results = run_conformance(model_spec_from(spec))
    failed = [f"{r.name}: {r.detail}" for r in results if r.status == "fail"]
    assert not failed, failed
    assert {r.name for r in results if r.status == "pass"} >= must_pass


def drive(srv, inputs, start: int = 0, seed: int | None = 0, prompt=None):
    """Steps `srv` in process over `inputs` (a fresh session first unless seed is None).

    Returns the output frames and the events (text/state) each step queued.
    """
    if seed is not None:
        srv.start_session("lockstep", seed, prompt)
    outs, events = [], []
    for i, x in enumerate(inputs, start):
        srv._pending = []
        outs.append(srv.step(i, x, None))
        events += srv._pending
    return outs, events
