"""parakeet-tdt (Full-Duplex-Bench's ASR) from the main suite: a clear refusal here, its real tests in .venv-parakeet.

NeMo cannot live in the main lock (requirements/parakeet.txt says why), so in the main
venv selecting the backend must name what is missing and how to get it, never a bare
ImportError. Where `make parakeet-venv` was run, tests/test_asr_parakeet.py runs there as
one test of this session; the venv is opt-in, so its absence skips (naming the command).
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
PARAKEET_PYTHON = REPO / ".venv-parakeet" / "bin" / "python"


@pytest.mark.skipif(importlib.util.find_spec("nemo") is not None, reason="NeMo is installed in this venv")
def test_without_nemo_the_backend_refuses_naming_the_venv_to_make():
    from duplexeval.judges.asr import transcribe
    from duplexeval.judges.local_models import MissingExtraError

    with pytest.raises(MissingExtraError) as err:
        transcribe(np.zeros(1600, dtype=np.float32), 16000, {"backend": "parakeet-tdt", "model": "/nonexistent.nemo"},
                   cache=False)
    message = str(err.value)
    assert "parakeet-tdt" in message and "nemo_toolkit[asr]" in message and "make parakeet-venv" in message


def test_the_parakeet_tests_pass_in_their_own_venv():
    if not PARAKEET_PYTHON.exists():
        pytest.skip(f"{PARAKEET_PYTHON} is missing: make parakeet-venv (opt-in, 2.2 GB)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    proc = subprocess.run([str(PARAKEET_PYTHON), "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs",
                           "tests/test_asr_parakeet.py"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    summary = out.strip().splitlines()[-1]
    passed = re.search(r"(\d+) passed", summary)
    assert passed and int(passed.group(1)) >= 5 and "skipped" not in summary, out[-3000:]
