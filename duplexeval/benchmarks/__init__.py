"""Benchmarks as plug-ins: each family one package behind one interface (docs/architecture.md).

    Benchmark        the interface a family implements          duplexeval.benchmarks.base
    CannotRun        "this job cannot run here", with a reason  duplexeval.executors.base
    plugins, benchmark_for, ENTRY_POINT_GROUP                   duplexeval.benchmarks.registry

Built-in families: `duplex-mpe` (duplexeval.benchmarks.mpe), `mtr-duplexbench`
(duplexeval.benchmarks.mtr), registered as entry points in pyproject.toml like any plug-in.
"""

from duplexeval.benchmarks.base import Benchmark, ItemProgress
from duplexeval.benchmarks.registry import ENTRY_POINT_GROUP, PluginError, benchmark_for, plugins
from duplexeval.executors.base import CannotRun, JobPlan

__all__ = ["Benchmark", "CannotRun", "ENTRY_POINT_GROUP", "ItemProgress", "JobPlan", "PluginError",
           "benchmark_for", "plugins"]
