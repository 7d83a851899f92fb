"""Published data converted into this project's formats: where it lives, whether it is complete, how to get it.

`duplexeval data import NAME PATH` converts a copy (normally the verified snapshot that
`data path NAME` prints) with the family's importer into

    <data cache>/<name>/imported/        (whatever files the family's importer writes, e.g. one
                                          sidecar per sample, or sample files with their audio)

built in a sibling `.partial` folder and renamed into place only after every file passed
and `duplexeval-import.json` (the source, its snapshot revision, the sha256 of every file
written) was written last: a half-written import is never read as complete.
The paper suites read it by default (`data.source: public`, `dataset: NAME`), and a run
without it stops before its first job with the exact fetch and import commands
(`missing_data`).
"""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from duplexeval.data import sets, snapshot as snap
from duplexeval.io import atomic_write_json, sha256_file
from duplexeval.resources import data_root

IMPORT_MANIFEST = "duplexeval-import.json"
IMPORT_VERSION = 1


class ImportError_(snap.SnapshotError):
    """An import that cannot proceed (exit 2) with the reason; nothing is left half-written."""


def imported_root(name: str, root: Path | None = None) -> Path:
    return (root if root is not None else data_root()) / name / "imported"


def ready(name: str, root: Path | None = None) -> Path | None:
    """The imported folder of NAME when an import finished there, else None."""
    folder = imported_root(name, root)
    return folder if (folder / IMPORT_MANIFEST).is_file() else None


def commands_for(name: str) -> list[str]:
    """The exact commands that put NAME where the paper suites read it."""
    try:
        rev = sets.pinned_revision(name)
    except Exception:  # noqa: BLE001 - the advice still names the commands
        rev = None
    flag = "" if rev else " --revision COMMIT"
    return [f"duplexeval data fetch {name}{flag}",
            f"duplexeval data import {name} \"$(duplexeval data path {name}{flag})\""]


def missing_message(name: str, who: str) -> str:
    """Three lines: what is missing and where it would be, then the two commands to run."""
    lines = commands_for(name)
    note = " (COMMIT: the 40-hex revision to reproduce, docs/data.md)" if "COMMIT" in lines[0] else ""
    return (f"{who} reads the published data set {name}, not imported on this machine "
            f"({imported_root(name)} has no {IMPORT_MANIFEST}); run{note}:\n  " + "\n  ".join(lines))


def hub_data_set(bench: dict[str, Any]) -> str | None:
    """The hub data set a benchmark reads by default (public source pinned by repo, no path), else None."""
    data = bench.get("data") or {}
    return str(data["dataset"]) if sets.is_hub_read(data) else None


def missing_data(benches: list[dict[str, Any]], who: str) -> str | None:
    """One message naming every hub data set the benchmarks read that is not imported (None: all here)."""
    names = sorted({n for b in benches if (n := hub_data_set(b)) and ready(n) is None})
    if not names:
        return None
    return "\n".join(missing_message(n, who) for n in names)


def _source_record(src: Path) -> dict[str, Any]:
    """What the import read: the snapshot manifest's repo/revision when the copy has one (verified first)."""
    manifest = snap.read_manifest(src)
    if manifest is None:
        return {"path": str(src.resolve()), "verified": False,
                "note": f"no {snap.MANIFEST_NAME}: not a `duplexeval data fetch` snapshot, its revision is unknown"}
    pin = snap.Pin(what=f"the copy in {src}", name=str(manifest.get("data_set", "?")), command="data",
                   repo=str(manifest.get("repo")), revision=str(manifest.get("revision")),
                   repo_type=str(manifest.get("repo_type", "dataset")), files=None)
    problems = snap.check_folder(pin, src, rehash=False)
    if problems:
        raise snap.verification_error(pin, src, problems)
    return {"path": str(src.resolve()), "verified": True, "repo": pin.repo, "revision": pin.revision}


def run_import(name: str, src: Path, convert: Callable[[Path, Path], Any], *, root: Path | None = None) -> Path:
    """Converts `src` with `convert(src, out)` into the imported folder of NAME; returns it.

    Refuses to replace a finished import (delete it first: the command never deletes what
    it did not make in this call).
    """
    final = imported_root(name, root)
    if final.exists():
        raise ImportError_(f"{final}: an import is already there; remove it first to import again")
    source = _source_record(src)
    partial = final.with_name(f"imported.partial-{os.getpid()}")
    if partial.exists():
        shutil.rmtree(partial)  # our own leftover of this process id: never complete, never read
    partial.mkdir(parents=True)
    try:
        convert(src, partial)
        files = {p.relative_to(partial).as_posix(): sha256_file(p) for p in sorted(partial.rglob("*")) if p.is_file()}
        atomic_write_json(partial / IMPORT_MANIFEST, {
            "import_version": IMPORT_VERSION, "data_set": name, "source": source, "files": files,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds")})
        partial.rename(final)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return final


def read_import_manifest(folder: Path) -> dict[str, Any]:
    return json.loads((folder / IMPORT_MANIFEST).read_text("utf-8"))
