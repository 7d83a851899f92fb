"""toybench: a minimal third benchmark family, to show a plug-in needs one package and its specs.

Each item plays a tone (a file stimulus) from the spec's `options.tones`; the score is the
share of 80 ms frames in which the model's channel carries sound. Nothing in duplexeval
names it: the entry point `toybench = toybench:ToyBench` (group duplexeval.benchmarks)
is all the harness sees.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import numpy as np

from duplexeval.benchmarks import Benchmark, CannotRun, ItemProgress, JobPlan
from duplexeval.io import atomic_write_json

FRAME_S = 0.08


def tone(freq_hz: float, seconds: float, rate: int) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.3 * np.sin(2 * np.pi * freq_hz * t)).astype(np.float32)


class TonePlan(JobPlan):
    """One tone per unit; a worker rebuilds the tone from the spec (nothing but the plan is shipped)."""

    def build_groups(self):
        from duplexeval.runner.stimulus import FileStimulus

        tones = self.job.bench.get("options", {}).get("tones", [])
        if not tones:
            raise CannotRun(f"benchmark {self.job.bench['id']}: options.tones is empty")
        tones = tones[: self.limit] if self.limit else tones
        groups = []
        for t in tones:
            item_id = f"tone-{int(t['hz'])}"

            def make(t=t) -> FileStimulus:
                return FileStimulus(tone(t["hz"], t["seconds"], self.rate), self.rate, tail_frames=5)

            groups.append((item_id, [(item_id, make)]))
        return groups

    def write_job_files(self) -> None:
        atomic_write_json(self.bench_dir / "benchmark.json", self.job.bench)

    def score(self, progress: Callable[[int, int, str], None] | None = None) -> dict[str, Any]:
        return score_folder(self.bench_dir, self.job.bench)


def score_folder(bench_dir: Path, bench: dict[str, Any]) -> dict[str, Any]:
    """results.json: model speech frames over all frames, every item's own count in records.jsonl."""
    from duplexeval.audio import read_stereo_recording
    from duplexeval.io import atomic_write_jsonl

    records, spoken, total = [], 0, 0
    for item in sorted((bench_dir / "items").iterdir()):
        status = json.loads((item / "status.json").read_text("utf-8"))["status"]
        if status != "ok":
            records.append({"item": item.name, "outcome": "error"})
            continue
        _, model, rate = read_stereo_recording(item / "recording.wav")
        n = int(FRAME_S * rate)
        frames = [model[i:i + n] for i in range(0, len(model) - n + 1, n)]
        loud = sum(1 for f in frames if float(np.abs(f).max()) > 0.01)
        records.append({"item": item.name, "outcome": "ok", "speech_frames": loud, "frames": len(frames)})
        spoken, total = spoken + loud, total + len(frames)
    atomic_write_jsonl(bench_dir / "records.jsonl", records)
    errors = sum(1 for r in records if r["outcome"] == "error")
    results = {"schema": "toybench.results/1", "benchmark": bench["id"],
               "items": {"total": len(records), "ok": len(records) - errors, "error": errors},
               "metrics": {"speech_frames": {"value": spoken / total if total else None,
                                             "numerator": spoken, "denominator": total}}}
    atomic_write_json(bench_dir / "results.json", results)
    return results


class ToyBench(Benchmark):
    family = "toybench"

    def plan(self, job, bench_dir: Path, *, clock: str, seed: int, cache_mode: str, limit: int | None) -> JobPlan:
        return TonePlan(job, bench_dir, clock=clock, seed=seed, cache_mode=cache_mode, limit=limit)

    def score_dir(self, bench_dir: Path, spec: dict[str, Any], cache_mode: str,
                  progress: ItemProgress | None = None) -> dict[str, Any] | None:
        return score_folder(bench_dir, spec)

    def after_run(self, run_dir: Path, jobs: list, *, cache_mode: str, limit: int | None,
                  progress: Callable[[str], None]) -> None:
        atomic_write_json(run_dir / "toybench-after-run.json", sorted(j.key for j in jobs))

    def data_importers(self):
        from duplexeval.benchmarks import DataImporter

        return {"toy-tones": DataImporter(import_tones, fetch_hint="place tones.json in a folder of your own")}

    def recording_exporters(self):
        from duplexeval.benchmarks import RecordingExporter

        return {"toy-layout": RecordingExporter(export_model_channel, "the model channel alone, <item>.wav")}


def import_tones(src: Path, out: Path) -> list[str]:
    """A placed copy holds tones.json, a list of {hz, seconds}: checked, then written as this project reads it."""
    path = src / "tones.json"
    if not path.is_file():
        raise ValueError(f"{src}: no tones.json")
    tones = json.loads(path.read_text("utf-8"))
    for n, t in enumerate(tones):
        if not isinstance(t.get("hz"), (int, float)):
            raise ValueError(f"{path}: [{n}].hz is not a number")
    atomic_write_json(out / "tones.json", tones)
    return [f"tones: {len(tones)}"]


def export_model_channel(bench_dir: Path, out: Path, spec: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
    """Each finished item's model channel as <item>.wav (mono); an unfinished one is listed, not written."""
    import soundfile as sf

    from duplexeval.audio import read_stereo_recording
    from duplexeval.benchmarks import SkipFolder

    items = sorted((bench_dir / "items").iterdir())
    if not items:
        raise SkipFolder("no items")
    out.mkdir(parents=True)
    names, skipped = [], {}
    for item in items:
        status = json.loads((item / "status.json").read_text("utf-8")).get("status")
        if status != "ok":
            skipped[item.name] = str(status)
            continue
        _, model, rate = read_stereo_recording(item / "recording.wav")
        sf.write(out / f"{item.name}.wav", model, rate)
        names.append(f"{item.name}.wav")
    return names, skipped
