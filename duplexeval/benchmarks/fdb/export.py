"""`export-recordings --layout fdb-authors`: one Full-Duplex-Bench folder of a run in the authors' layout.

The sample folders come from the data the job played (the spec's data root, as the plan
found them), so each exported sample carries its published annotations beside our
output.wav; output.json is word-level ASR of the model's channel by the spec's own ASR
engine (recorded in the export manifest), since the authors' evaluation reads words, not audio.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from duplexeval.benchmarks.base import SkipFolder
from duplexeval.executors.base import CannotRun


def export(bench_dir: Path, out: Path, spec: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
    """What the plug-in's RecordingExporter calls (duplexeval.benchmarks.base.RecordingExporter)."""
    from duplexeval.benchmarks.fdb.layout_export import export_bench_dir
    from duplexeval.benchmarks.fdb.samples import data_root
    from duplexeval.judges.asr import transcribe

    if not (bench_dir / "items").is_dir():
        raise SkipFolder("no items/ folder")
    try:
        subset = data_root(spec) / spec["options"]["subset"]
    except CannotRun as exc:
        raise SkipFolder(f"its samples are not on this machine: {exc}") from None

    def sample_for(item: str) -> Path | None:
        folder = subset / item
        return folder if folder.is_dir() else None

    def words_for(audio: np.ndarray, rate: int) -> list[tuple[str, float, float]]:
        return [(w.text, w.start, w.end) for w in transcribe(audio, rate, spec["asr"]).words]

    v15 = spec["options"].get("v15")
    suffix = v15["clean_suffix"] if v15 else None

    def clean_for(item: str) -> str | None:
        """v1.5: item `<id>`'s clean run is `<id>.clean` (the plan's pairing); v1.0 has none."""
        return None if suffix is None or item.endswith(suffix) else item + suffix

    cut = spec["options"].get("output_length", "cut-to-input") == "cut-to-input"   # the reading, as scoring reads it
    return export_bench_dir(bench_dir, out, sample_for, words_for, asr=dict(spec["asr"]), clean_for=clean_for,
                            cut=cut)
