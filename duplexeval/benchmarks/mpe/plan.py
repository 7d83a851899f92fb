"""Duplex-MPE items of a job: one conversation per scene, rendered lazily; the job's plan of work units.

The factory renders on demand so a resumed run spends no TTS on finished items (and a
worker renders only the scenes of the units it plays). `scenes.json` in the job folder
lists every planned conversation with its turns (as MTR's rounds.json lists rounds), so
scoring counts a planned item whose folder is gone as missing, never as absent.
"""

from __future__ import annotations

from typing import Any, Callable

from duplexeval.benchmarks.mpe.plan_file import write_plan_file
from duplexeval.benchmarks.mpe.scenes.loader import load_bench_scenes
from duplexeval.benchmarks.mpe.scenes.render import render_turns
from duplexeval.benchmarks.mpe.scenes.scheduler import MPEScheduler
from duplexeval.executors.base import JobPlan
from duplexeval.runfolder.job_files import write_job_files
from duplexeval.runner.fork import Group
from duplexeval.runner.stimulus import Stimulus


def mpe_items(bench: dict[str, Any], limit: int | None = None) -> list[tuple[str, Callable[[], Stimulus]]]:
    scenes = load_bench_scenes(bench, limit)
    rate = int(bench["audio"]["rate"])
    condition = bench["condition"]

    def factory(scene) -> Callable[[], Stimulus]:
        return lambda: MPEScheduler(render_turns(scene, condition, rate, tts=bench.get("tts")), bench)

    return [(scene.id, factory(scene)) for scene in scenes]


class MpePlan(JobPlan):
    """A Duplex-MPE job as units: one conversation (scene) per unit."""

    def build_groups(self) -> list[Group]:
        return [(item_id, [(item_id, factory)]) for item_id, factory in mpe_items(self.job.bench, self.limit)]

    def write_job_files(self) -> None:
        write_job_files(self.bench_dir, self.job)
        write_plan_file(self.bench_dir, self.job.bench, load_bench_scenes(self.job.bench, self.limit))

    def summary(self) -> str:
        return f"  {len(self.groups())} conversations"

    def score(self, progress: Callable[[int, int, str], None] | None = None) -> dict[str, Any]:
        from duplexeval.benchmarks.mpe.results import judges_from_spec, score_bench_dir

        return score_bench_dir(self.bench_dir, self.job.bench, judges_from_spec(self.job.bench, self.cache_mode),
                               progress=progress)

