"""The data sets `duplexeval data fetch|verify|path NAME` knows, and where each one's pin lives.

The core lists none: each benchmark family declares its published sets through its
`data_sets()` hook (the `Data` group, duplexeval/benchmarks/hooks.py) as `DataSet` entries
(name, kind, the benchmark spec whose `data:` block pins it, licence, the words `data import`
counts with), and `duplexeval data` asks every installed family.

A hub set is a whole repository at a 40-hex commit (`data.repo`, `data.revision` of the
spec), fetched by `duplexeval.data.snapshot` (the mechanism model weights use) into
`<data cache>/<name>/<revision>/`. Why the revision may be given on the command line: no
machine of this project can reach the hub, so the specs cannot pin a commit nobody here
has seen; `--revision` names the one a user means to reproduce, and the manifest records
it. A spec that pins one refuses a different `--revision`.
A URL set is one file a family downloads on demand: its entry carries a `UrlFile`, the
family's own download and check (the core only prints what they return or raise).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from duplexeval.data import snapshot as snap
from duplexeval.resources import data_root


@dataclass(frozen=True)
class UrlFile:
    """A URL set's file, as the family that downloads it reaches it.

    `fetch()` downloads the file when it is absent, checks it and returns its path; `local()`
    returns the already fetched file after checking it against the sha256 its first download
    recorded. Both raise UrlSetError (message and exit code) for a file that is missing,
    unreachable or changed, so `data fetch|verify|path` print one line, never a traceback."""

    fetch: Callable[[], Path]
    local: Callable[[], Path]


@dataclass(frozen=True)
class DataSet:
    """One published data set a family declares (its `data_sets()` hook)."""

    name: str
    kind: str                  # "hub" or "url"
    spec: str                  # the benchmark spec whose `data:` block pins it
    repo_type: str = "dataset"
    licence: str = ""
    unit: str = "samples"      # what `data import` counts in each imported group ("scenes", "dialogues")
    per: str = "set"           # what the paper's `data.count` is counted per ("condition", "set")
    url_file: UrlFile | None = None   # a URL set's download and check (kind "url")


class DataSetError(snap.SnapshotSpecError):
    """An unknown name, an unpinned revision or a conflicting one: exit 2 with what to do."""


class UrlSetError(snap.SnapshotError):
    """A URL set's file that is not fetched or cannot be (exit 2), or that changed since (exit 1)."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def data_set(name: str, known: Mapping[str, DataSet]) -> DataSet:
    """`known[name]`, else a DataSetError naming the closest known name and all of them."""
    if name not in known:
        import difflib

        close = difflib.get_close_matches(name, known, n=1)
        raise DataSetError(f"unknown data set {name!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
                           + f"; known: {', '.join(sorted(known))}")
    return known[name]


def spec_data(ds: DataSet) -> tuple[dict, str]:
    """(the `data:` block after includes, 'file:line' of it) of the spec that pins `ds`."""
    from duplexeval.specs import Registry
    from duplexeval.specs.errors import display_path

    spec = Registry.load().get("benchmark", ds.spec)
    where = display_path(spec.path)
    try:
        file, line = spec.where("data")
        where = f"{display_path(file)}:{line}"
    except Exception:  # noqa: BLE001 - a location is a courtesy in a message, never a failure
        pass
    return dict(spec.data.get("data") or {}), where


def is_hub_read(data: Mapping[str, Any]) -> bool:
    """Whether a benchmark's `data:` block reads a hub snapshot by default: a public set
    (`source: public`, `dataset: NAME`) pinned by repository (`repo:`), with no local `path`.
    A URL set's block names a `url:` instead, so this needs no list of sets."""
    return (data.get("source") == "public" and bool(data.get("dataset")) and not data.get("path")
            and bool(data.get("repo")))


def pinned_revision(name: str) -> str | None:
    """The revision a benchmark spec reading hub set NAME pins (`data.revision`), else None."""
    from duplexeval.specs import Registry

    for spec in Registry.load().all("benchmark"):
        data = spec.data.get("data") or {}
        if data.get("dataset") == name and data.get("repo") and data.get("revision"):
            return str(data["revision"])
    return None


def hub_pin(ds: DataSet, revision: str | None = None) -> snap.Pin:
    """The pin of a hub data set: repo from its spec, revision from the spec or `revision`."""
    name = ds.name
    if ds.kind != "hub":
        raise DataSetError(f"{name} is a file downloaded from a URL, not a hub snapshot")
    data, where = spec_data(ds)
    repo = data.get("repo")
    if not repo:
        raise DataSetError(f"{where}: data.repo is not set for {name}")
    pinned = data.get("revision")
    if revision is not None and not snap.COMMIT_RE.match(revision):
        raise DataSetError(f"--revision {revision!r} is not a 40-hex commit hash (a branch or tag can move)")
    if pinned and revision and revision != pinned:
        raise DataSetError(f"{where}: data.revision pins {repo}@{pinned}; --revision {revision} differs "
                           "(edit the spec to move the pin)")
    rev = pinned or revision
    if not rev:
        raise DataSetError(
            f"data set {name}: repo {repo} has no pinned revision ({where}: data.revision not set)\n"
            f"pass --revision COMMIT (40 hex, from {snap.hub_endpoint()}/datasets/{repo}/commits/main), "
            f"or pin data.revision in the spec; files placed by hand go in {data_root() / name}/<COMMIT>/")
    return snap.Pin(what=f"data set {name}", name=name + ("" if pinned else f" --revision {rev}"), command="data",
                    repo=str(repo), revision=rev, repo_type=ds.repo_type, files=None)


def folder(pin: snap.Pin, root: Path | None = None) -> Path:
    return (root if root is not None else data_root()) / pin.name.split()[0] / pin.revision
