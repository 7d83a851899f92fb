"""What a benchmark family gives the harness: one small interface, as a task is one unit in lm-evaluation-harness.

The hooks fall in five groups by who asks (benchmarks/hooks.py: Runs, Scores, Reports, Data,
Commands; docs/architecture.md lists each hook with its caller).

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

    from duplexeval.data.sets import DataSet
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

    convert: Callable[[Path, Path], list[str] | ImportReport | None]
    errors: tuple[type[Exception], ...] = ()
    fetch_hint: str = ""


@dataclass(frozen=True)
class ImportReport:
    """What a DataImporter's convert may return instead of plain lines: the lines, and the samples it
    skipped ({path: the message naming the file and field}). A skipped sample is damaged or of a
    structure the importer does not know; the rest is imported, and `data import` lists each skipped
    one, prints the count and exits 4 (a partial import)."""

    lines: list[str]
    skipped: dict[str, str]


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


@dataclass(frozen=True)
class RecordingImporter:
    """A family's reader of recordings made elsewhere in one layout (`import-recordings BENCH DIR --layout NAME`).

    `run(bench, src, request)` checks the files of `src` against the benchmark's stimulus,
    writes the run folder (duplexeval.recordings.run_folder) and scores it through the
    family's own scorer, returning an ImportedRun. It raises a ValueError (or one of
    `errors`) whose message names the file at fault when nothing could be imported: the
    command prints it, exit 2. A file that alone is refused, when the layout scores samples
    one by one, is listed in ImportedRun.skipped and the command exits 4 (partial).
    """

    run: Callable[[dict[str, Any], Path, ImportRequest], ImportedRun]
    help: str
    errors: tuple[type[Exception], ...] = ()


@dataclass(frozen=True)
class ImportRequest:
    """What `import-recordings` was asked besides the benchmark and the folder (the family reads what it needs)."""

    layout: str
    model: str
    runs_dir: Path
    run_id: str
    suite: str | None
    bench_sha256: str
    cache_mode: str
    log: Callable[[str], None]


@dataclass(frozen=True)
class ImportedRun:
    """An import's outcome: the <model>/<benchmark> folder written, its results, {file: why not imported}."""

    bench_dir: Path
    results: dict[str, Any]
    skipped: dict[str, str]


class SkipFolder(Exception):
    """This folder cannot be written in the requested layout (another family, a missing file): skipped by name."""


class Benchmark(ABC):
    """One benchmark family (the spec's `benchmark:` field), registered as an entry point
    of the group `duplexeval.benchmarks` under that same name.

    A plug-in is instantiated once per process with no arguments; keep imports of heavy
    modules inside the methods so loading every plug-in (the CLI does) stays cheap.
    """

    family: ClassVar[str]   # the spec's `benchmark:` value, and the entry point's name
    # What the family's records.jsonl says, declared here so the core names no family's words
    # (specs/schema/records.schema.json holds the shared fields; docs/architecture.md, "records.jsonl"):
    # every `outcome` word its records may carry (None: open, e.g. a judge's verdict written verbatim;
    # `verify` and the tests check a closed vocabulary), each metric's direction (True: higher is
    # better; the report's generic table marks it), and the role of each turn label the item view
    # colours (`target`: what the model must answer, `interrupt`: what it must yield to; the
    # report's CSS knows only these roles).
    outcomes: ClassVar[frozenset[str] | None] = None
    higher_is_better: ClassVar[dict[str, bool]] = {}
    turn_roles: ClassVar[dict[str, str]] = {}
    paper_golden_files: ClassVar[tuple[str, ...]] = ()   # golden/ files of the papers it re-derives

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

    def data_sets(self) -> dict[str, DataSet]:
        """Data set name -> the published set `duplexeval data fetch|verify|path NAME` reaches
        (duplexeval.data.sets.DataSet: its kind, the spec that pins it, its licence, the words
        `data import` counts it with, and for a URL set the family's download and check).
        Empty (the default): the family has no set a command downloads."""
        return {}

    def recording_exporters(self) -> dict[str, RecordingExporter]:
        """Layout name -> exporter, for `duplexeval export-recordings RUN --layout NAME OUT`.
        Empty (the default): the family's recordings are written in no other layout."""
        return {}

    def unit_audio_s(self, bench: dict[str, Any], *, capabilities: tuple[str, ...] = (),
                     clock: str = "realtime") -> float | None:
        """Seconds of audio one work unit of this benchmark streams to a model with these
        capabilities on this clock (an MTR dialogue replayed per round plays its history again): the
        dry run's audio minutes, a paid API's cost estimate and `--max-cost`'s reservation per
        session (duplexeval/runs/cost_estimate.py). The default: the spec's `unit_audio` when it is
        given per unit; else None (unknown, and the estimate says so rather than guessing for
        the family). A family whose units hold rounds, or that can measure placed data, says more."""
        declared = declared_unit_audio(bench)
        return float(declared["seconds"]) if declared and declared["per"] == "unit" else None

    def run_context(self, bench: dict[str, Any], *, capabilities: tuple[str, ...] = (),
                    clock: str = "realtime") -> dict[str, Any] | None:
        """How this benchmark's items reach a model with these capabilities on this clock, where
        the family has a choice that changes what the model hears (MTR: its context mode, and
        how history-as-heard rounds are played): the run manifest's `jobs[].context`, written
        before anything plays. None (the default): no such choice."""
        return None

    def planned_units(self, bench: dict[str, Any]) -> int | None:
        """How many units the benchmark's data holds, known without generating anything: the
        spec's `data.count` by default; a family may count a local data set's files instead."""
        count = bench.get("data", {}).get("count")
        return count if isinstance(count, int) and not isinstance(count, bool) else None

    def recording_importers(self) -> dict[str, RecordingImporter]:
        """Layout name -> importer, for `duplexeval import-recordings BENCH DIR --layout NAME`.
        Empty (the default): recordings of the family made elsewhere cannot be imported."""
        return {}

    def recording_import_refusal(self) -> str | None:
        """Why the family can never import a recording made elsewhere (printed by
        `import-recordings`), or None (the default) when it has no reason beyond having no importer."""
        return None

    def commands(self) -> list[click.Command]:
        """Click commands the family adds to `duplexeval` (e.g. `scenes`, `mtr`)."""
        return []


def declared_unit_audio(bench: dict[str, Any]) -> dict[str, Any] | None:
    """A benchmark spec's `unit_audio` (seconds, per unit or per round, published or assumed,
    its source): the figure a family's `unit_audio_s` starts from; None without one."""
    declared = bench.get("unit_audio")
    return declared if isinstance(declared, dict) else None
