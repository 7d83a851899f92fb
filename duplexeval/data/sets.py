"""The data sets `duplexeval data fetch|verify|path NAME` knows, and where each one's pin lives.

| name            | kind | source                                | pinned in (benchmark spec `data:`) |
|-----------------|------|---------------------------------------|------------------------------------|
| mtr-duplexbench | hub  | dataset Jeff0918/MTR-DuplexBench      | mtr-smooth-turn-taking (`_mtr-features-base.yaml`) |
| duplex-mpe      | hub  | dataset ChengqianMa/Duplex-MPE        | mpe-explicit (`_mpe-base.yaml`)    |
| advbench        | url  | llm-attacks harmful_behaviors.csv     | mtr-safety                         |
| llama-questions | url  | google-research-datasets/LLAMA1-Test-Set | mtr-instruction                 |

A hub set is a whole repository at a 40-hex commit (`data.repo`, `data.revision` of the
spec), fetched by `duplexeval.data.snapshot` (the mechanism model weights use) into
`<data cache>/<name>/<revision>/`. Why the revision may be given on the command line: no
machine of this project can reach the hub, so the specs cannot pin a commit nobody here
has seen; `--revision` names the one a user means to reproduce, and the manifest records
it. A spec that pins one refuses a different `--revision`.
URL sets are the MTR family's on-demand files (`duplexeval.benchmarks.mtr.datasets`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from duplexeval.data import snapshot as snap
from duplexeval.resources import data_root


@dataclass(frozen=True)
class DataSet:
    name: str
    kind: str                  # "hub" or "url"
    spec: str                  # the benchmark spec whose `data:` block pins it
    repo_type: str = "dataset"
    licence: str = ""


DATASETS: dict[str, DataSet] = {
    "mtr-duplexbench": DataSet("mtr-duplexbench", "hub", "mtr-smooth-turn-taking",
                               licence="not stated on the repository (the authors' code is Apache-2.0)"),
    "duplex-mpe": DataSet("duplex-mpe", "hub", "mpe-explicit", licence="CC-BY-4.0 (the dataset card)"),
    "advbench": DataSet("advbench", "url", "mtr-safety", licence="MIT"),
    "llama-questions": DataSet("llama-questions", "url", "mtr-instruction", licence="CC BY 4.0 (per the repository)"),
}


class DataSetError(snap.SnapshotSpecError):
    """An unknown name, an unpinned revision or a conflicting one: exit 2 with what to do."""


def data_set(name: str) -> DataSet:
    if name not in DATASETS:
        import difflib

        close = difflib.get_close_matches(name, DATASETS, n=1)
        raise DataSetError(f"unknown data set {name!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
                           + f"; known: {', '.join(sorted(DATASETS))}")
    return DATASETS[name]


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


def hub_pin(name: str, revision: str | None = None) -> snap.Pin:
    """The pin of a hub data set: repo from its spec, revision from the spec or `revision`."""
    ds = data_set(name)
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
