"""The default run id: the same command names the same run, so repeating it resumes (issue 28).

A timestamped default started a fresh run on every repeat, redoing hours of finished
items. The id is the suite, plus — when `--models` / `--benchmarks` pick a subset — a short
hash of the sorted selection, so `run --suite embedded --models silent,oracle` and
`--models oracle,silent` are one run, and a different selection is another. `--limit` is
left out on purpose: a resume with a higher limit adds the items the lower one skipped.
`--new` appends the UTC time for a fresh run of the same selection.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone


def default_run_id(suite_id: str, models: list[str] | None, benchmarks: list[str] | None) -> str:
    """`<suite>` for the whole suite, else `<suite>-<8 hex of the sorted selection>`."""
    if not models and not benchmarks:
        return suite_id
    key = "models=" + ",".join(sorted(models or [])) + ";benchmarks=" + ",".join(sorted(benchmarks or []))
    return f"{suite_id}-{hashlib.sha256(key.encode('utf-8')).hexdigest()[:8]}"


def fresh_run_id(suite_id: str, models: list[str] | None, benchmarks: list[str] | None,
                 now: datetime | None = None) -> str:
    """The default id with the UTC time appended (`--new`)."""
    return f"{default_run_id(suite_id, models, benchmarks)}-{(now or datetime.now(timezone.utc)):%Y%m%d-%H%M%S}"
