"""What a job folder (<run>/<model>/<benchmark>/) records about its job, for re-scoring.

`benchmark.json`: the benchmark spec with the suite's overrides, which a re-score must
use. `model.json`: the model's id, spec hash and caveat, so a re-score labels its numbers
as the run did even if the spec changed since (duplexeval/scoring/model_caveat.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from duplexeval.io import atomic_write_json
from duplexeval.runfolder.plan import Job


def write_job_files(bench_dir: Path, job: Job, bench: dict[str, Any] | None = None) -> None:
    atomic_write_json(bench_dir / "benchmark.json", job.bench if bench is None else bench)
    atomic_write_json(bench_dir / "model.json", {"id": job.model.id, "sha256": job.model.sha256,
                                                 "caveat": job.model.data.get("caveat")})
