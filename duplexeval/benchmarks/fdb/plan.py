"""A Full-Duplex-Bench v1.0 job of a run: one sample per work unit, input.wav as a file stimulus.

The samples come from the data root (the published layout, or the embedded set rendered
into it); `samples.json` in the job folder keeps what scoring needs of each, so a re-score
reads the run alone (benchmarks/fdb/samples.py).
"""

from __future__ import annotations

from typing import Any, Callable

from duplexeval.benchmarks.fdb.samples import (
    SAMPLES_FILE,
    SampleError,
    data_root,
    list_samples,
    reference_distributions,
    sample_record,
)
from duplexeval.executors.base import CannotRun, JobPlan
from duplexeval.io import atomic_write_json
from duplexeval.runfolder.job_files import write_job_files


class FdbPlan(JobPlan):
    """Each sample its own unit and session: the published protocol plays every input.wav afresh."""

    def _samples(self) -> list:
        bench = self.job.bench
        try:
            return list_samples(bench, data_root(bench), self.limit)
        except SampleError as exc:
            raise CannotRun(f"benchmark {bench['id']}: {exc}") from None

    def build_groups(self) -> list:
        from duplexeval.benchmarks.fdb.stimulus import SampleStimulus

        groups = []
        for sample in self._samples():
            cues = (sample.oracle or {}).get("cues", [])

            def make(sample=sample, cues=cues) -> SampleStimulus:
                return SampleStimulus(sample.folder / "input.wav", cues=cues, item_id=sample.id)

            groups.append((sample.id, [(sample.id, make)]))
        return groups

    def write_job_files(self) -> None:
        bench = self.job.bench
        write_job_files(self.bench_dir, self.job, bench)
        root = data_root(bench)
        samples = self._samples()
        refs = reference_distributions(bench, root) if bench["options"]["task"] == "backchannel" else None
        try:
            records = [sample_record(bench, s, refs) for s in samples]
        except SampleError as exc:
            raise CannotRun(f"benchmark {bench['id']}: {exc}") from None
        atomic_write_json(self.bench_dir / SAMPLES_FILE, {"task": bench["options"]["task"],
                                                           "subset": bench["options"]["subset"], "samples": records})

    def summary(self) -> str:
        return f"  {len(self._unit_items())} samples of {self.job.bench['options']['subset']}"

    def score(self, progress: Callable[[int, int, str], None] | None = None) -> dict[str, Any]:
        from duplexeval.benchmarks.fdb.score import score_bench_dir

        return score_bench_dir(self.bench_dir, self.job.bench, self.cache_mode, progress=progress)
