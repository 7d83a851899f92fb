"""The MTR-DuplexBench family as a plug-in (entry point `mtr-duplexbench`): plan, re-score, commands."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from duplexeval.benchmarks.base import (
    Benchmark,
    DataImporter,
    ImportedRun,
    ImportRequest,
    ItemProgress,
    RecordingExporter,
    RecordingImporter,
    SkipFolder,
    declared_unit_audio,
)

if TYPE_CHECKING:
    from duplexeval.data.sets import DataSet


class MtrDuplexBench(Benchmark):
    family = "mtr-duplexbench"
    # Open: an instruction or safety round's outcome is its judge's verdict, written verbatim.
    outcomes = None
    higher_is_better = {"success": True, "score": True, "spoke_during_turn": False, "no_response": False,
                        "unparseable": False, "error": False, "latency_s": False, "latency_all_rounds_s": False,
                        "latency_successes_s": False}

    def plan(self, job, bench_dir: Path, *, clock: str, seed: int, cache_mode: str, limit: int | None):
        from duplexeval.benchmarks.mtr.plan import MtrPlan

        return MtrPlan(job, bench_dir, clock=clock, seed=seed, cache_mode=cache_mode, limit=limit)

    def unit_audio_s(self, bench: dict[str, Any], *, capabilities: tuple[str, ...] = (),
                     clock: str = "realtime") -> float | None:
        """The spec's `unit_audio`: per unit as it stands (a 120 s Candor clip; one
        spoken query and its response window), per round times the rounds a dialogue of R plays:
        R when it forks or plays history-as-heard one-pass, 1 + 2 + ... + R when round k replays
        rounds 1..k (replay; history-as-heard per-round). None without one."""
        from duplexeval.benchmarks.mtr.items import context_mode, plays_dialogue_once

        declared = declared_unit_audio(bench)
        if not declared:
            return None
        seconds = float(declared["seconds"])
        if declared["per"] == "unit":
            return seconds
        rounds = int(bench.get("rounds", 10))
        once = plays_dialogue_once(bench, context_mode(bench, list(capabilities), clock))
        return (rounds if once else rounds * (rounds + 1) / 2) * seconds

    def run_context(self, bench: dict[str, Any], *, capabilities: tuple[str, ...] = (),
                    clock: str = "realtime") -> dict[str, Any] | None:
        """context.json's record for the job (plan.py `context_record`): fork, replay or
        history-as-heard, and for history-as-heard one-pass or per-round."""
        from duplexeval.benchmarks.mtr.items import context_mode, history_as_heard
        from duplexeval.benchmarks.mtr.plan import context_record

        return context_record(context_mode(bench, list(capabilities), clock), history_as_heard(bench))

    def planned_units(self, bench: dict[str, Any]) -> int | None:
        """`data.count`, else from a local dialogue file: one unit per dialogue, or per query
        (instruction, safety), as `data.count` counts them (every dialogue of a feature file:
        an upper bound)."""
        from duplexeval.resources import bundle_root

        path = bench.get("data", {}).get("path")
        if bench.get("data", {}).get("count") or not path:
            return super().planned_units(bench)
        import yaml

        where = Path(path) if Path(path).is_absolute() else bundle_root() / path
        try:
            dialogues = yaml.safe_load(where.read_text("utf-8")).get("dialogues", [])
        except (OSError, ValueError, AttributeError):
            return None
        if bench.get("dimension") in ("mtr-instruction", "mtr-safety"):
            return sum(len(d.get("rounds", [])) for d in dialogues)
        return len(dialogues)

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

    def record_span(self, record: dict[str, Any]) -> tuple[float, float] | None:
        """A feature round's reason names the window it judged ("spoke in the pause window [a, b]",
        "no one segment covers [a, b]"): the item view marks that window."""
        import re

        m = re.search(r"\[(-?\d+(?:\.\d+)?),\s*(-?\d+(?:\.\d+)?)\]", str(record.get("reason") or ""))
        return (float(m.group(1)), float(m.group(2))) if m else None

    def report_sections(self, inputs):
        from duplexeval.benchmarks.mtr.report import sections

        return sections(inputs)

    def data_sets(self) -> dict[str, DataSet]:
        """The published dialogues (a hub snapshot) and the two text sets downloaded on demand
        (duplexeval.benchmarks.mtr.datasets); Candor is licensed, so no command fetches it."""
        from functools import partial

        from duplexeval.data.sets import DataSet, UrlFile

        def url_set(name: str, spec: str, licence: str) -> DataSet:
            return DataSet(name, "url", spec, licence=licence,
                           url_file=UrlFile(partial(_fetch_url_set, name), partial(_local_url_set, name)))

        return {
            "mtr-duplexbench": DataSet("mtr-duplexbench", "hub", "mtr-smooth-turn-taking",
                                       licence="not stated on the repository (the authors' code is Apache-2.0)",
                                       unit="dialogues", per="set"),
            "advbench": url_set("advbench", "mtr-safety", "MIT"),
            "llama-questions": url_set("llama-questions", "mtr-instruction", "CC BY 4.0 (per the repository)"),
        }

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


def _url_set_error(exc: Exception) -> Exception:
    """A DatasetUnavailable as `duplexeval data` prints it: exit 1 for a file that changed, else 2."""
    from duplexeval.data.sets import UrlSetError

    return UrlSetError(str(exc), 1 if "differs" in str(exc) else 2)


def _fetch_url_set(name: str) -> Path:
    """`data fetch NAME` of a URL set: the family's download (or the file already there, checked)."""
    from duplexeval.benchmarks.mtr.datasets import DatasetUnavailable, fetch

    try:
        return fetch(name)
    except DatasetUnavailable as exc:
        raise _url_set_error(exc) from None


def _local_url_set(name: str) -> Path:
    """`data verify|path NAME` of a URL set: the fetched file, checked against the sha256 its first
    download recorded beside it; exit 2 naming the URL and the path when it was never fetched."""
    from duplexeval.benchmarks.mtr.datasets import DATASETS, DatasetUnavailable, _check, data_cache
    from duplexeval.data.sets import UrlSetError

    path = data_cache() / name / DATASETS[name]["file"]
    if not path.is_file():
        raise UrlSetError(f"data set {name}: not fetched: {DATASETS[name]['url']}\n"
                          f"run `duplexeval data fetch {name}`, or place the file at {path} by hand")
    try:
        _check(path, None)
    except DatasetUnavailable as exc:
        raise _url_set_error(exc) from None
    return path


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
