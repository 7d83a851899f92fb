"""moshi-tiny as a server: `duplexeval conformance` and sessions over the wire (issue 11).

Real processes started by the local backend from specs/models/moshi-tiny.yaml, exactly
the command the image runs (`python images/moshi/shim.py --tiny --socket ...`).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys

import numpy as np
from moshi_helpers import signal

from duplexeval.protocol.wire import FrameKind
from duplexeval.runner import load_model_spec
from duplexeval.runner.backends import make_backend
from duplexeval.runner.client import ProtocolClient
from duplexeval.specs.modelspec import REPO_ROOT

CHECKS = ("start", "handshake", "lockstep", "reset", "errors", "fork", "teacher_forcing", "realtime")


def test_conformance_passes_every_check_through_the_cli():
    # --long-s 8: 100 frames, past where late faults start (frame 20), at a third of the default's CPU.
    proc = subprocess.run([sys.executable, "-m", "duplexeval.cli", "conformance", "moshi-tiny", "--long-s", "8"],
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "moshi-tiny: all checks passed" in proc.stdout
    for check in CHECKS:  # realtime included: the tiny model is faster than real time on one thread
        assert f"PASS {check}:" in proc.stdout, (check, proc.stdout)
    assert "FAIL" not in proc.stdout


async def _session(client: ProtocolClient, seed: int, n: int, n_forced: int = 0) -> np.ndarray:
    ready = await client.hello("lockstep", seed, timeout=60)
    assert ready["model"] == "moshi-tiny" and ready["in_frame_samples"] == ready["out_frame_samples"] == 1920
    inputs, forced = signal(n, seed=1), signal(n_forced, seed=2)
    outs = []
    for i, x in enumerate(inputs):
        if i < n_forced:
            await client.send_audio(FrameKind.FORCED, i, forced[i])
        await client.send_audio(FrameKind.INPUT, i, x)
        outs.append(await client.recv_output(i, 1920))
    return np.concatenate(outs)


def test_second_hello_and_a_second_process_give_the_same_bytes():
    spec = load_model_spec("moshi-tiny")

    async def on_one_server(endpoint) -> list[np.ndarray]:
        first = await ProtocolClient.open(endpoint, spec.step_timeout_s)
        a = await _session(first, 11, 14, n_forced=6)
        b = await _session(first, 11, 14, n_forced=6)     # hello again on the same connection
        c = await _session(first, 12, 14, n_forced=6)     # another seed
        await first.close()
        second = await ProtocolClient.open(endpoint, spec.step_timeout_s)
        d = await _session(second, 11, 14, n_forced=6)    # a second session of the same server
        await second.close()
        return [a, b, c, d]

    outputs = []
    for _ in range(2):  # two server processes: weights and sampling come from seeds only
        backend = make_backend(spec)
        try:
            outputs.append(asyncio.run(on_one_server(backend.start())))
        finally:
            backend.stop()
    (a, b, c, d), (a2, _, _, _) = outputs
    assert np.array_equal(a, b) and np.array_equal(a, d)
    assert not np.array_equal(a, c)
    assert np.array_equal(a, a2)
    assert np.abs(a[1920:]).max() > 0.01  # after the first (delay) frame the model makes sound
