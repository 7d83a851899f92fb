"""Benchmark families found through Python entry points (group `duplexeval.benchmarks`).

The built-in families are registered the same way (pyproject.toml), so a third benchmark
is one package with an entry point and its specs: nothing here or in the executor changes.
"""

from __future__ import annotations

import difflib
import re
from functools import lru_cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

from duplexeval.benchmarks.base import Benchmark, DataImporter, RecordingExporter

if TYPE_CHECKING:
    from duplexeval.data.sets import DataSet

ENTRY_POINT_GROUP = "duplexeval.benchmarks"


class PluginError(RuntimeError):
    """A registered plug-in that cannot be loaded or is not a Benchmark: a packaging bug, said with its name."""


@lru_cache(maxsize=None)
def plugins() -> dict[str, Benchmark]:
    """Every installed family by name, each plug-in loaded once per process."""
    found: dict[str, Benchmark] = {}
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        if ep.name in found:
            continue  # the same distribution seen twice on sys.path: the first wins, as for imports
        try:
            target = ep.load()
        except Exception as exc:
            raise PluginError(f"benchmark plug-in {ep.name!r} ({ep.value}) does not load: {exc}") from exc
        plugin = target() if isinstance(target, type) else target
        if not isinstance(plugin, Benchmark):
            raise PluginError(f"benchmark plug-in {ep.name!r} ({ep.value}) is not a duplexeval.benchmarks.Benchmark")
        if plugin.family != ep.name:
            raise PluginError(f"benchmark plug-in {ep.value} says family {plugin.family!r} "
                              f"but is registered as {ep.name!r}")
        found[ep.name] = plugin
    return found


def benchmark_for(spec: dict[str, Any], where: Path | str | None = None) -> Benchmark:
    """The plug-in of a benchmark spec's family; a SpecErrors naming `where` (the spec file) when none is installed."""
    family = spec.get("benchmark")
    known = plugins()
    if family in known:
        return known[family]
    from duplexeval.specs.errors import SpecError, SpecErrors

    hint = difflib.get_close_matches(str(family), list(known), n=1)
    message = (f"no benchmark plug-in for family {family!r} (installed: {', '.join(sorted(known)) or 'none'}"
               + (f"; did you mean {hint[0]!r}?" if hint else "")
               + f"; a plug-in registers under the entry point group {ENTRY_POINT_GROUP!r})")
    path = Path(where) if where else Path(f"<benchmark {spec.get('id', '?')}>")
    raise SpecErrors([SpecError(path, _field_line(path, "benchmark"), "benchmark", message)])


def _hooks(kind: str) -> dict[str, tuple[str, Any]]:
    """name -> (family, hook) over every plug-in's `kind` hook; one name claimed by two families is a packaging bug."""
    found: dict[str, tuple[str, Any]] = {}
    for family, plugin in plugins().items():
        for name, hook in getattr(plugin, kind)().items():
            if name in found:
                raise PluginError(f"{kind} name {name!r} is claimed by both {found[name][0]!r} and {family!r}")
            found[name] = (family, hook)
    return found


def data_sets() -> dict[str, tuple[str, DataSet]]:
    """Data set name -> (family, DataSet) over every installed family (`duplexeval data fetch|verify|path`)."""
    return _hooks("data_sets")


def data_importers() -> dict[str, tuple[str, DataImporter]]:
    """Data set name -> (family, importer) over every installed family (`duplexeval data import`)."""
    return _hooks("data_importers")


def recording_exporters() -> dict[str, tuple[str, RecordingExporter]]:
    """Layout name -> (family, exporter) over every installed family (`duplexeval export-recordings --layout`)."""
    return _hooks("recording_exporters")


def _field_line(path: Path, key: str) -> int:
    """The line of a top-level `key:` in a YAML file (1 when it is not there or not readable)."""
    try:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.match(rf"{key}\s*:", line):
                return n
    except (OSError, UnicodeDecodeError):
        pass
    return 1
