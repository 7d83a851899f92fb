"""What a benchmark family gives the harness: one small interface, as a task is one unit in lm-evaluation-harness.

The executor and the `score` command know only this interface; a family's own code (its
stimuli, its scoring, its commands) lives in its package, duplexeval/benchmarks/<family>/.
Shared infrastructure (specs, runner, judges, reports) stays outside every family.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar

if TYPE_CHECKING:
    import click

    from duplexeval.executors.base import JobPlan
    from duplexeval.reports.golden import Golden
    from duplexeval.reports.paper_arithmetic import ArithmeticRow
    from duplexeval.reports.sections import ReportSection, SectionInputs
    from duplexeval.runfolder.plan import Job

ItemProgress = Callable[[int, int, str], None]   # (done, total, item id), as score_bench_dir takes it


@dataclass(frozen=True)
class DataImporter:
    """A family's importer of a published data set, reached by `duplexeval data import NAME PATH`.

    `convert(src, out)` validates the copy in `src` and writes this project's files into
    the empty folder `out` (the command renames it into place only when convert returned,
    so a failed import leaves nothing). It returns the lines the command prints after the
    import (what was found, beside the counts the paper states), and raises a ValueError
    (or one of `errors`) whose message names the file, folder or field at fault: the
    command prints it, exit 2, never a traceback. `fetch_hint` is for a set no command
    can download (e.g. a cloud-drive folder): `data fetch NAME` prints it and stops.
    """

    convert: Callable[[Path, Path], list[str] | None]
    errors: tuple[type[Exception], ...] = ()
    fetch_hint: str = ""


@dataclass(frozen=True)
class RecordingExporter:
    """A family's writer of a run's recordings in another project's layout (`export-recordings --layout NAME`).

    `export(bench_dir, out, spec)` writes one <model>/<benchmark> folder's finished items
    into the new folder `out` and returns (the files written, {item: why not exported});
    it raises SkipFolder(reason) when this folder has nothing in this layout (listed as
    skipped, the export goes on) and ValueError for a fault that stops the command.
    """

    export: Callable[[Path, Path, dict[str, Any]], tuple[list[str], dict[str, str]]]
    help: str


class SkipFolder(Exception):
    """This folder cannot be written in the requested layout (another family, a missing file): skipped by name."""


class Benchmark(ABC):
    """One benchmark family (the spec's `benchmark:` field), registered as an entry point
    of the group `duplexeval.benchmarks` under that same name.

    A plug-in is instantiated once per process with no arguments; keep imports of heavy
    modules inside the methods so loading every plug-in (the CLI does) stays cheap.
    """

    family: ClassVar[str]   # the spec's `benchmark:` value, and the entry point's name

    @abstractmethod
    def plan(self, job: Job, bench_dir: Path, *, clock: str, seed: int, cache_mode: str,
             limit: int | None) -> JobPlan:
        """The job's work units (duplexeval/executors/base.py). Raise CannotRun(reason) when
        this job cannot run here; the run goes on with the other jobs."""

    @abstractmethod
    def score_dir(self, bench_dir: Path, spec: dict[str, Any], cache_mode: str,
                  progress: ItemProgress | None = None) -> dict[str, Any] | None:
        """Re-score one <model>/<benchmark> folder from its recordings (writes records.jsonl and
        results.json); None when the folder holds nothing this family can score."""

    def result_lines(self, rel: str, results: dict[str, Any]) -> list[str]:
        """What `duplexeval score` prints for a scored folder (`rel` is its path in the run)."""
        metrics = results.get("metrics", {})
        return [f"{rel}: " + ", ".join(f"{k}={v.get('value')} ({v.get('numerator')}/{v.get('denominator')})"
                                       for k, v in metrics.items() if isinstance(v, dict))]

    def after_run(self, run_dir: Path, jobs: list[Job], *, cache_mode: str, limit: int | None,  # noqa: B027
                  progress: Callable[[str], None]) -> None:  # optional hook: most families have nothing to add
        """Outputs of the run that belong to the benchmark, not to one model (e.g. Duplex-MPE's
        text-only reference). `jobs` are this family's jobs of the run, planned or not."""

    def statistics(self, run_dir: Path) -> dict[str, Any] | None:
        """The family's statistics across the run's jobs (e.g. McNemar between conditions), as
        top-level keys of the run's statistics.json (duplexeval.runs.statistics), computed from
        the run's folders after every run; None (the default): the family has none."""
        return None

    def report_sections(self, inputs: SectionInputs) -> list[ReportSection] | None:
        """The family's part of the report (duplexeval/reports/sections.py): its tables, charts,
        statistics and its papers' tables as published. None (the default): the report shows
        every metric of the family's results in a generic table, so a plug-in that never
        heard of reports still appears in one."""
        return None

    def report_item(self, bench_dir: Path, item_id: str) -> dict[str, Any] | None:
        """What the report's item view draws beyond events.jsonl: {"turns": [{start, end, speaker,
        label, text}], "window": [start, end]} on the recording's time axis; None (the default)
        when events.jsonl says it all."""
        return None

    def record_span(self, record: dict[str, Any]) -> tuple[float, float] | None:
        """Where one of the family's records sits on the recording's time axis, when its records
        spell that window their own way (the item view marks it); None (the default): the report
        reads the spellings every family shares (`window`, start/end, t0/t1)."""
        return None

    def record_speech(self, record: dict[str, Any]) -> list[tuple[float, float]]:
        """Model speech a record of the family judged beyond its `episodes` / `speech` lists (the
        item view draws it in the model's lane); empty by default."""
        return []

    def paper_arithmetic(self, papers: dict[str, Golden]) -> list[ArithmeticRow]:
        """The family's half of `paper-check`: published numbers re-derived from the paper's own
        counts (`papers`: paper id -> golden file). Empty for a family without a paper."""
        return []

    def data_importers(self) -> dict[str, DataImporter]:
        """Data set name -> importer, for `duplexeval data import NAME PATH` (and `data fetch NAME`
        of a set that cannot be downloaded). Empty (the default): the family imports nothing."""
        return {}

    def recording_exporters(self) -> dict[str, RecordingExporter]:
        """Layout name -> exporter, for `duplexeval export-recordings RUN --layout NAME OUT`.
        Empty (the default): the family's recordings are written in no other layout."""
        return {}

    def commands(self) -> list[click.Command]:
        """Click commands the family adds to `duplexeval` (e.g. `scenes`, `mtr`)."""
        return []
