"""The PersonaPlex and FLM-Audio shims on their upstream code with random tiny weights.

Opt-in: the upstream code is not committed and not on PyPI. Point the variables at the
folders `python -m duplexeval.upstream install` made from the pinned tarballs
(images/<id>/README.md) to run them; without them these tests skip.

    DUPLEXEVAL_PERSONAPLEX_SRC=/tmp/personaplex                 # PersonaPlex's moshi/ folder
    DUPLEXEVAL_FLM_AUDIO_SRC=/tmp/flm-audio                      # patched FLM-Audio source
    DUPLEXEVAL_FLM_AUDIO_DEPS=/tmp/flmdeps                       # transformers 4.51.3 & co. (pip --target)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(script: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "bench" / script), *args], capture_output=True, text=True,
                          timeout=600, cwd=ROOT)


@pytest.mark.skipif(not os.environ.get("DUPLEXEVAL_PERSONAPLEX_SRC"), reason="DUPLEXEVAL_PERSONAPLEX_SRC not set")
def test_personaplex_shim_on_upstream_code_with_tiny_weights():
    proc = _run("personaplex_tiny_check.py", "--upstream", os.environ["DUPLEXEVAL_PERSONAPLEX_SRC"])
    results = [ln for ln in proc.stdout.splitlines() if ln.startswith(("PASS", "FAIL"))]
    assert proc.returncode == 0 and len(results) == 4, proc.stdout + proc.stderr[-2000:]


@pytest.mark.skipif(not os.environ.get("DUPLEXEVAL_FLM_AUDIO_SRC"), reason="DUPLEXEVAL_FLM_AUDIO_SRC not set")
def test_flm_audio_shim_on_upstream_code_with_tiny_weights():
    deps = os.environ.get("DUPLEXEVAL_FLM_AUDIO_DEPS")
    proc = _run("flm_audio_tiny_check.py", "--upstream", os.environ["DUPLEXEVAL_FLM_AUDIO_SRC"],
                *(["--deps", deps] if deps else []))
    results = [ln for ln in proc.stdout.splitlines() if ln.startswith(("PASS", "FAIL"))]
    assert proc.returncode == 0 and len(results) == 4, proc.stdout + proc.stderr[-2000:]
