"""The Duplex-MPE family as a plug-in (entry point `duplex-mpe`): plan, re-score, text-only reference, commands."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from duplexeval.benchmarks.base import Benchmark, DataImporter, ImportReport, ItemProgress

if TYPE_CHECKING:
    from duplexeval.data.sets import DataSet


class DuplexMpe(Benchmark):
    family = "duplex-mpe"
    # metrics.py's outcome words (Start, Answer, Shush, Stop and its eligibility) and `error`.
    outcomes = frozenset({"fresh", "already_speaking", "miss", "correct", "incorrect", "unreadable_speech",
                          "silent", "backchannel", "intrusion", "yielded", "did_not_yield",
                          "excluded_already_talking", "excluded_finished_early", "excluded_no_onset_in_gap",
                          "excluded_talked_over_question", "responded", "error"})
    higher_is_better = {"start": True, "presence": True, "answer": True, "shush": True, "stop": True,
                        "response": True, "silence": True}
    turn_roles = {"T": "target", "N4Q": "interrupt", "N4R": "interrupt"}

    def plan(self, job, bench_dir: Path, *, clock: str, seed: int, cache_mode: str, limit: int | None):
        from duplexeval.benchmarks.mpe.plan import MpePlan

        return MpePlan(job, bench_dir, clock=clock, seed=seed, cache_mode=cache_mode, limit=limit)

    def planned_units(self, bench: dict[str, Any]) -> int | None:
        """`data.count`, else one unit per scene file of a local scene folder."""
        from duplexeval.resources import bundle_root

        path = bench.get("data", {}).get("path")
        if not path:
            return super().planned_units(bench)
        where = Path(path) if Path(path).is_absolute() else bundle_root() / path
        return len(list(where.glob("*.yaml"))) if where.is_dir() else super().planned_units(bench)

    def score_dir(self, bench_dir: Path, spec: dict[str, Any], cache_mode: str,
                  progress: ItemProgress | None = None) -> dict[str, Any] | None:
        from duplexeval.benchmarks.mpe.results import judges_from_spec, score_bench_dir

        return score_bench_dir(bench_dir, spec, judges_from_spec(spec, cache_mode), progress=progress)

    def result_lines(self, rel: str, results: dict[str, Any]) -> list[str]:
        m = results["metrics"]
        parts = [f"{k}={m[k]['value']} ({m[k]['numerator']}/{m[k]['denominator']})"
                 for k in ("start", "presence", "answer", "shush")]
        stop = m["stop"]
        parts.append(f"stop={stop['value']} ({stop['numerator']}/{stop['eligible']} eligible, "
                     f"yield over all N4 {stop['yield_rate_all_n4']['numerator']}/{stop['n4_events']})")
        return [f"{rel}: " + ", ".join(parts)]

    def after_run(self, run_dir: Path, jobs: list, *, cache_mode: str, limit: int | None,
                  progress: Callable[[str], None]) -> None:
        """The text-only reference row (§4.2): once per benchmark whose spec names its judge."""
        from duplexeval.benchmarks.mpe.scenes.loader import load_bench_scenes
        from duplexeval.benchmarks.mpe.text_reference import write_text_reference
        from duplexeval.judges.cache import JudgeCache
        from duplexeval.judges.llm import load_judge

        benches: dict[str, dict[str, Any]] = {}
        for job in jobs:
            if "text_reference" in job.bench["judges"]:
                benches.setdefault(job.bench["id"], job.bench)
        for bench in benches.values():
            judge_id = bench["judges"]["text_reference"]
            progress(f"text-only reference on {bench['id']} ({judge_id})")
            judge = load_judge(judge_id, JudgeCache(mode=cache_mode))
            write_text_reference(run_dir, bench, load_bench_scenes(bench, limit), judge, judge_id)

    def statistics(self, run_dir: Path) -> dict[str, Any] | None:
        """McNemar (explicit vs implicit), Spearman (presence vs Start) and the condition shifts."""
        from duplexeval.benchmarks.mpe.statistics import run_statistics

        return run_statistics(run_dir)

    paper_golden_files = ("duplex-mpe.yaml",)   # golden/ file of the paper this family reproduces

    def record_span(self, record: dict[str, Any]) -> tuple[float, float] | None:
        from duplexeval.benchmarks.mpe.report_charts import record_span
        return record_span(record)

    def record_speech(self, record: dict[str, Any]) -> list[tuple[float, float]]:
        from duplexeval.benchmarks.mpe.report_charts import judged_speech
        return judged_speech(record)

    def paper_arithmetic(self, papers):
        from duplexeval.benchmarks.mpe.paper_arithmetic import CHECKS

        golden = papers.get("duplex-mpe")
        return [row for check in CHECKS for row in check(golden)] if golden is not None else []

    def report_sections(self, inputs):
        from duplexeval.benchmarks.mpe.report import sections

        return sections(inputs)

    def data_sets(self) -> dict[str, DataSet]:
        """The published scenes, a hub snapshot pinned by `mpe-explicit` (`_mpe-base.yaml`)."""
        from duplexeval.data.sets import DataSet

        return {"duplex-mpe": DataSet("duplex-mpe", "hub", "mpe-explicit", licence="CC-BY-4.0 (the dataset card)",
                                      unit="scenes", per="condition")}

    def data_importers(self) -> dict[str, DataImporter]:
        from duplexeval.benchmarks.mpe.published import PublishedFormatError

        return {"duplex-mpe": DataImporter(_import_published, errors=(PublishedFormatError,))}

    def recording_import_refusal(self) -> str | None:
        return ("its stimulus depends on the model (playback waits for 2 s of Aria's silence, N4R follows N4Q "
                "after exactly 3 s), so the heard channel of a recording made elsewhere has no fixed stimulus to "
                "be checked against; run the model through duplexeval instead")

    def commands(self) -> list:
        from duplexeval.benchmarks.mpe.commands import COMMANDS

        return COMMANDS


def _import_published(src: Path, out: Path) -> ImportReport:
    """The hub copy of Duplex-MPE -> scenes/*.yaml + turn audio (duplexeval.benchmarks.mpe.published);
    a scene that does not fit is skipped and listed, the rest imported."""
    from duplexeval.benchmarks.mpe.published import convert

    return convert(src, out)
