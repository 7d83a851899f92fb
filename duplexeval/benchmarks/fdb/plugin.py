"""The Full-Duplex-Bench family as a plug-in (entry point `full-duplex-bench`): plan, re-score, report, commands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from duplexeval.benchmarks.base import Benchmark, DataImporter, ItemProgress, RecordingExporter, RecordingImporter


class FullDuplexBench(Benchmark):
    family = "full-duplex-bench"
    # A record is one sample scored (`ok`) or not (`error`); its numbers are continuous, no pass/fail.
    outcomes = frozenset({"ok", "error"})
    # published.NOTE: lower is better for the pause and backchannel TOR, JSD and latencies;
    # higher for the smooth turn-taking and interruption TOR, Freq and the GPT-4o rating.
    higher_is_better = {"fdb-pause-synthetic/tor": False, "fdb-pause-candor/tor": False,
                        "fdb-backchannel/tor": False, "fdb-smooth-turn-taking/tor": True,
                        "fdb-user-interruption/tor": True, "jsd": False, "latency_s": False,
                        "frequency": True, "relevance": True}
    # No `paper_golden_files`: the published v1.0 table prints no counts to re-derive, so the
    # family has no paper arithmetic; golden/full-duplex-bench.yaml still gives the report its rows.

    def plan(self, job, bench_dir: Path, *, clock: str, seed: int, cache_mode: str, limit: int | None):
        from duplexeval.benchmarks.fdb.plan import FdbPlan

        return FdbPlan(job, bench_dir, clock=clock, seed=seed, cache_mode=cache_mode, limit=limit)

    def unit_audio_s(self, bench: dict[str, Any], *, capabilities: tuple[str, ...] = (),
                     clock: str = "realtime") -> float | None:
        """One sample's input.wav: their mean length when the data is placed (`data.path`),
        else the spec's `unit_audio` (the dry run prints the seconds it used)."""
        import soundfile as sf

        from duplexeval.resources import bundle_root

        path = bench.get("data", {}).get("path")
        where = (Path(path) if Path(path).is_absolute() else bundle_root() / path) if path else None
        wavs = sorted(where.rglob("input.wav"))[:2000] if where is not None and where.is_dir() else []
        lengths = []
        for wav in wavs:
            try:
                lengths.append(sf.info(str(wav)).duration)
            except RuntimeError:
                continue
        if lengths:
            return sum(lengths) / len(lengths)
        return super().unit_audio_s(bench, capabilities=capabilities, clock=clock)

    def score_dir(self, bench_dir: Path, spec: dict[str, Any], cache_mode: str,
                  progress: ItemProgress | None = None) -> dict[str, Any] | None:
        """None for a folder without samples.json: its job never got planned."""
        from duplexeval.benchmarks.fdb.samples import SAMPLES_FILE

        if not (bench_dir / SAMPLES_FILE).is_file():
            return None
        from duplexeval.benchmarks.fdb.score import score_bench_dir

        return score_bench_dir(bench_dir, spec, cache_mode, progress=progress)

    def result_lines(self, rel: str, results: dict[str, Any]) -> list[str]:
        cells = ", ".join(f"{k}={v['value']} ({v['numerator']}/{v['denominator']})"
                          for k, v in results.get("metrics", {}).items() if isinstance(v, dict))
        return [f"{rel}: {cells} [ASR {results.get('asr_engine', '?')}]"]

    def report_item(self, bench_dir: Path, item_id: str) -> dict[str, Any] | None:
        from duplexeval.benchmarks.fdb.report import item_view

        return item_view(bench_dir, item_id)

    def report_sections(self, inputs):
        from duplexeval.benchmarks.fdb.report import sections

        return sections(inputs)

    def data_importers(self) -> dict[str, DataImporter]:
        """`duplexeval data import fdb PATH`: a copy placed by hand (the data is a cloud-drive folder)."""
        from duplexeval.benchmarks.fdb import layout, layout_import

        return {layout_import.DATA_SET: DataImporter(layout_import.convert, fetch_hint=layout_import.FETCH_HINT,
                                                     errors=(layout.FdbLayoutError,))}

    def recording_exporters(self) -> dict[str, RecordingExporter]:
        from duplexeval.benchmarks.fdb.export import export
        from duplexeval.benchmarks.fdb.layout_export import LAYOUT

        return {LAYOUT: RecordingExporter(export, "Full-Duplex-Bench's per-sample folders: output.wav (the model's "
                                                  "channel) and output.json (its words), beside the sample's annotations")}

    def recording_importers(self) -> dict[str, RecordingImporter]:
        """`import-recordings fdb-... DIR --layout fdb-authors`: the authors' own model outputs (benchmarks/fdb/authors_import.py)."""
        from duplexeval.benchmarks.fdb.authors_import import LAYOUT, import_authors_outputs
        from duplexeval.benchmarks.fdb.layout import FdbLayoutError

        return {LAYOUT: RecordingImporter(import_authors_outputs, "Full-Duplex-Bench's <ID>/output.wav (mono, any "
                                                                  "rate and length) beside the imported data",
                                          (FdbLayoutError,))}

    def commands(self) -> list:
        from duplexeval.benchmarks.fdb.commands import COMMANDS

        return COMMANDS
