"""The MTR-DuplexBench family as a plug-in (entry point `mtr-duplexbench`): plan, re-score, commands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from duplexeval.benchmarks.base import (
    Benchmark,
    DataImporter,
    ImportedRun,
    ImportRequest,
    ItemProgress,
    RecordingExporter,
    RecordingImporter,
    SkipFolder,
)


class MtrDuplexBench(Benchmark):
    family = "mtr-duplexbench"

    def plan(self, job, bench_dir: Path, *, clock: str, seed: int, cache_mode: str, limit: int | None):
        from duplexeval.benchmarks.mtr.plan import MtrPlan

        return MtrPlan(job, bench_dir, clock=clock, seed=seed, cache_mode=cache_mode, limit=limit)

    def score_dir(self, bench_dir: Path, spec: dict[str, Any], cache_mode: str,
                  progress: ItemProgress | None = None) -> dict[str, Any] | None:
        """None for a folder without rounds.json: its job never got planned, so there is nothing to score."""
        if not (bench_dir / "rounds.json").is_file():
            return None
        from duplexeval.benchmarks.mtr.score import judges_for, score_bench_dir

        return score_bench_dir(bench_dir, spec, judges_for(spec, cache_mode), progress=progress)

    def result_lines(self, rel: str, results: dict[str, Any]) -> list[str]:
        def one(k: str, v: dict[str, Any]) -> str:
            outcomes = v.get("outcomes") if isinstance(v.get("outcomes"), dict) else {}
            every = (" [" + ", ".join(f"{o} {n}" for o, n in sorted(outcomes.items())) + "]") if outcomes else ""
            return f"{k}={v['value']} ({v['numerator']}/{v['denominator']}){every}"

        return [f"{rel} round {key}: " + ", ".join(one(k, v) for k, v in metrics.items() if isinstance(v, dict))
                for key, metrics in results["rounds"].items()]

    paper_golden_files = ("mtr-duplexbench.yaml",)   # golden/ file of the paper this family reproduces

    def paper_arithmetic(self, papers):
        from duplexeval.benchmarks.mtr.paper_arithmetic import CHECKS

        golden = papers.get("mtr-duplexbench")
        return [row for check in CHECKS for row in check(golden)] if golden is not None else []

    def report_item(self, bench_dir: Path, item_id: str) -> dict[str, Any] | None:
        from duplexeval.benchmarks.mtr.report import item_view

        return item_view(bench_dir, item_id)

    def report_sections(self, inputs):
        from duplexeval.benchmarks.mtr.report import sections

        return sections(inputs)

    def data_importers(self) -> dict[str, DataImporter]:
        return {"mtr-duplexbench": DataImporter(_import_published)}

    def recording_exporters(self) -> dict[str, RecordingExporter]:
        return {"mtr-authors": RecordingExporter(
            _export_authors, "the MTR-DuplexBench authors' file names, left = user, right = model, round_start.json.")}

    def recording_importers(self) -> dict[str, RecordingImporter]:
        """`import-recordings mtr-... DIR --layout mtr-authors|duplexeval` (benchmarks/mtr/recordings.py)."""
        from duplexeval.benchmarks.mtr.authors_layout import LayoutError
        from duplexeval.benchmarks.mtr.datasets import DatasetUnavailable

        errors = (LayoutError, DatasetUnavailable, FileNotFoundError)
        return {"mtr-authors": RecordingImporter(_import_recordings, "the MTR-DuplexBench authors' file names, "
                                                 "left = user, right = model", errors),
                "duplexeval": RecordingImporter(_import_recordings, "<item>.wav, channel 0 heard, channel 1 said "
                                                "(docs/data.md)", errors)}

    def commands(self) -> list:
        from duplexeval.benchmarks.mtr.commands import COMMANDS

        return COMMANDS


def _import_published(src: Path, out: Path) -> None:
    """The hub copy of MTR-DuplexBench -> <group>/<id>.json sidecars (duplexeval.benchmarks.mtr.published)."""
    from duplexeval.benchmarks.mtr.published import check_written, convert

    check_written(convert(src, out))


def _export_authors(bench_dir: Path, out: Path, spec: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
    """One MTR folder in the authors' layout; a folder the layout cannot express is skipped by name."""
    from duplexeval.benchmarks.mtr.authors_layout import LayoutError
    from duplexeval.benchmarks.mtr.recordings import export_bench_dir

    try:
        return export_bench_dir(bench_dir, out, spec)
    except LayoutError as exc:
        raise SkipFolder(str(exc)) from None


def _import_recordings(bench: dict[str, Any], src: Path, request: ImportRequest) -> ImportedRun:
    from duplexeval.benchmarks.mtr.recordings import import_recordings

    bench_dir, results = import_recordings(bench, src, layout=request.layout, model=request.model,
                                           runs_dir=request.runs_dir, run_id=request.run_id, suite=request.suite,
                                           bench_sha256=request.bench_sha256, cache_mode=request.cache_mode,
                                           log=request.log)
    return ImportedRun(bench_dir, results, {})
