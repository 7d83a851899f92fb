"""Benchmarks as plug-ins: each family one package behind one interface (docs/architecture.md).

    Benchmark        the interface a family implements          duplexeval.benchmarks.base
    CannotRun        "this job cannot run here", with a reason  duplexeval.executors.base
    plugins, benchmark_for, ENTRY_POINT_GROUP                   duplexeval.benchmarks.registry
    data_importers, recording_exporters: every family's `data import` / `export-recordings --layout` hooks

Built-in families: `duplex-mpe` (duplexeval.benchmarks.mpe), `mtr-duplexbench`
(duplexeval.benchmarks.mtr), registered as entry points in pyproject.toml like any plug-in.
"""

from duplexeval.benchmarks.base import (
    Benchmark,
    DataImporter,
    ImportedRun,
    ImportReport,
    ImportRequest,
    ItemProgress,
    RecordingExporter,
    RecordingImporter,
    SkipFolder,
)
from duplexeval.benchmarks.registry import (
    ENTRY_POINT_GROUP,
    PluginError,
    benchmark_for,
    data_importers,
    plugins,
    recording_exporters,
)
from duplexeval.executors.base import CannotRun, JobPlan

__all__ = ["Benchmark", "CannotRun", "DataImporter", "ENTRY_POINT_GROUP", "ItemProgress", "JobPlan", "PluginError",
           "RecordingExporter", "RecordingImporter", "ImportRequest", "ImportedRun", "ImportReport", "SkipFolder",
           "benchmark_for", "data_importers", "plugins", "recording_exporters"]
