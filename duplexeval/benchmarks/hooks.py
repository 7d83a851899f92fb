"""The plug-in hooks of a benchmark family, grouped by who asks (docs/architecture.md,
"Benchmarks as plug-ins"). `Benchmark` (base.py) implements every group with defaults; a
caller types what it needs by the group, so the report asks only `Reports` of a family,
`duplexeval score` only `Scores`, and a new hook finds its place in exactly one group
(tests/test_benchmark_plugins.py checks every public hook of `Benchmark` is in one).

    Runs      the executor and `run`:        family, plan, after_run, statistics, unit_audio_s,
              planned_units, run_context
    Scores    `score`, `verify`:              score_dir, result_lines, outcomes
    Reports   reports/ (handed the plug-ins): report_sections, report_item, record_span,
              record_speech, turn_roles, higher_is_better, paper_arithmetic, paper_golden_files
              (= reports.sections.FamilyReport, defined below the families' layer)
    Data      `data`, `import-recordings`,    data_sets, data_importers, recording_exporters,
              `export-recordings`:            recording_importers, recording_import_refusal
    Commands  the CLI:                        commands
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Protocol, runtime_checkable

from duplexeval.reports.sections import FamilyReport as Reports

if TYPE_CHECKING:
    import click

    from duplexeval.benchmarks.base import DataImporter, ItemProgress, RecordingExporter, RecordingImporter
    from duplexeval.data.sets import DataSet
    from duplexeval.executors.base import JobPlan
    from duplexeval.runfolder.plan import Job


@runtime_checkable
class Runs(Protocol):
    """What running a suite asks of a family: its work units, and outputs per benchmark after the run."""

    family: ClassVar[str]

    def plan(self, job: Job, bench_dir: Path, *, clock: str, seed: int, cache_mode: str,
             limit: int | None) -> JobPlan: ...

    def after_run(self, run_dir: Path, jobs: list[Job], *, cache_mode: str, limit: int | None,
                  progress: Callable[[str], None]) -> None: ...

    def statistics(self, run_dir: Path) -> dict[str, Any] | None: ...

    def unit_audio_s(self, bench: dict[str, Any], *, capabilities: tuple[str, ...] = (),
                     clock: str = "realtime") -> float | None: ...

    def planned_units(self, bench: dict[str, Any]) -> int | None: ...

    def run_context(self, bench: dict[str, Any], *, capabilities: tuple[str, ...] = (),
                    clock: str = "realtime") -> dict[str, Any] | None: ...


@runtime_checkable
class Scores(Protocol):
    """What scoring and reading records ask: re-score a folder, print it, and what its records say."""

    outcomes: ClassVar[frozenset[str] | None]

    def score_dir(self, bench_dir: Path, spec: dict[str, Any], cache_mode: str,
                  progress: ItemProgress | None = None) -> dict[str, Any] | None: ...

    def result_lines(self, rel: str, results: dict[str, Any]) -> list[str]: ...


@runtime_checkable
class Data(Protocol):
    """What moving data in and out asks: published sets to fetch and import, writers of other layouts."""

    def data_sets(self) -> dict[str, DataSet]: ...

    def data_importers(self) -> dict[str, DataImporter]: ...

    def recording_exporters(self) -> dict[str, RecordingExporter]: ...

    def recording_importers(self) -> dict[str, RecordingImporter]: ...

    def recording_import_refusal(self) -> str | None: ...


@runtime_checkable
class Commands(Protocol):
    """What the CLI asks: the family's own commands."""

    def commands(self) -> list[click.Command]: ...


GROUPS: dict[str, type] = {"Runs": Runs, "Scores": Scores, "Reports": Reports, "Data": Data, "Commands": Commands}


def group_members(group: type) -> set[str]:
    """The hook names a group declares (its methods and attributes)."""
    names = {n for n in vars(group) if not n.startswith("_")}
    names |= set(getattr(group, "__annotations__", {}))
    return {n for n in names if not n.startswith("_")}


__all__ = ["Commands", "Data", "GROUPS", "Reports", "Runs", "Scores", "group_members"]
