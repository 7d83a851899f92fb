"""Shared hypothesis settings for tests/test_fuzz_*.py: a fixed seed, bounded examples.

`make test` runs each target with FUZZ_EXAMPLES examples (default below, all targets
together well under a minute); `make fuzz` raises DUPLEXEVAL_FUZZ_EXAMPLES for a longer run.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

EXAMPLES = int(os.environ.get("DUPLEXEVAL_FUZZ_EXAMPLES", "300"))


def fuzz(scale: float = 1.0):
    return settings(max_examples=max(1, int(EXAMPLES * scale)), derandomize=True, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
