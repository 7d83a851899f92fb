"""MTR-DuplexBench (docs/mtr.md): dual-channel dialogues, turn segmentation by votes,
teacher-forced context per round, and the four dimensions scored per round.

    load_dialogue, write_dialogue, Dialogue, DialogueFormatError   duplexeval.benchmarks.mtr.format
    cluster_votes, overlap_share, response_windows, Turn           duplexeval.benchmarks.mtr.clustering
    segment_dialogue, segment_turns, dialogue_segments             duplexeval.benchmarks.mtr.segmentation
    RoundStimulus, RoundWindow                                     duplexeval.benchmarks.mtr.context
    feature_outcome, speaks, speech_units                          duplexeval.benchmarks.mtr.features
    score_bench_dir                                                duplexeval.benchmarks.mtr.score
    render_script, render_script_file, write_script, judge_writer  duplexeval.benchmarks.mtr.generate
    fetch, DatasetUnavailable                                      duplexeval.benchmarks.mtr.datasets
    MtrPlan (a job's work units)                                   duplexeval.benchmarks.mtr.plan
    MtrDuplexBench (the family's plug-in, entry point mtr-duplexbench) duplexeval.benchmarks.mtr.plugin
    `segment`, `mtr render|score|fetch` commands                   duplexeval.benchmarks.mtr.commands

Names load on first use (PEP 562), so importing the package costs nothing.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "load_dialogue": "format", "write_dialogue": "format", "Dialogue": "format", "DialogueFormatError": "format",
    "cluster_votes": "clustering", "overlap_share": "clustering", "response_windows": "clustering", "Turn": "clustering",
    "segment_dialogue": "segmentation", "segment_turns": "segmentation", "dialogue_segments": "segmentation",
    "RoundStimulus": "context", "RoundWindow": "context",
    "feature_outcome": "features", "speaks": "features", "speech_units": "features",
    "score_bench_dir": "score",
    "render_script": "generate", "render_script_file": "generate", "write_script": "generate", "judge_writer": "generate",
    "fetch": "datasets", "DatasetUnavailable": "datasets",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
