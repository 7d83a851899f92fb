"""`duplexeval data fetch|verify|path NAME`: a published data set at its pinned revision, hashed.

The sets are the families' own (each family's `data_sets()` hook, duplexeval.data.sets).
Hub sets go through `duplexeval.data.snapshot`, the mechanism `duplexeval weights` uses:
the whole repository at one commit, a sha256 manifest written last, `verify` re-hashing
every byte. URL sets are one file each, downloaded and checked by the family that reads
it. Errors are 1-3 lines, never a traceback: exit 2 when the data is missing, unpinned or
cannot be fetched (naming the repository, the revision and where to place a copy by
hand), 1 when a file changed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from duplexeval.data import sets, snapshot as snap

_cache_option = click.option(
    "--cache", "root", type=click.Path(file_okay=False, path_type=Path), default=None,
    help="Data cache root (default: $DUPLEXEVAL_DATA_CACHE, else $DUPLEXEVAL_CACHE/datasets).")
_revision_option = click.option(
    "--revision", default=None, metavar="COMMIT",
    help="The 40-hex commit to use when the benchmark spec pins none (a pinned spec refuses another).")


def _fail(exc: snap.SnapshotError) -> None:
    click.echo(f"error: {exc}", err=True)
    sys.exit(exc.exit_code)


def _known() -> dict[str, sets.DataSet]:
    """Every data set an installed family declares (its `data_sets()` hook), by name."""
    from duplexeval.benchmarks.registry import data_sets

    return {name: ds for name, (_, ds) in data_sets().items()}


def _data_set(name: str) -> sets.DataSet:
    return sets.data_set(name, _known())


def _url_set(ds: sets.DataSet, action: str) -> None:
    """fetch / verify / path of a URL data set, through the download and check of the family that reads it."""
    if ds.url_file is None:
        raise sets.DataSetError(f"data set {ds.name}: its family declares it a URL set but gives no way to fetch it")
    try:
        path = ds.url_file.fetch() if action == "fetch" else ds.url_file.local()
    except snap.SnapshotError as exc:
        _fail(exc)
    click.echo(f"verified {ds.name} in {path}" if action == "verify" else str(path))


@click.group("data")
def data_group() -> None:
    """Fetch, verify and locate the benchmarks' published data sets (docs/data.md)."""


@data_group.command("fetch")
@click.argument("name")
@_revision_option
@_cache_option
def fetch_command(name: str, revision: str | None, root: Path | None) -> None:
    """Download NAME at its pinned revision (files placed by hand are hashed, not downloaded).

    The token, for a gated repository, is read from HF_TOKEN only.
    """
    _placed_by_hand(name)
    try:
        ds = _data_set(name)
        if ds.kind == "url":
            return _url_set(ds, "fetch")
        pin = sets.hub_pin(ds, revision)
        folder = snap.fetch(pin, sets.folder(pin, root), log=lambda s: click.echo(s, err=True),
                            manifest_extra={"data_set": name})
    except snap.SnapshotError as exc:
        _fail(exc)
    click.echo(f"verified data set {name} ({pin.repo}@{pin.revision}) in {folder}")


@data_group.command("verify")
@click.argument("name")
@_revision_option
@_cache_option
def verify_command(name: str, revision: str | None, root: Path | None) -> None:
    """Re-hash every file of NAME's folder; name each missing, changed or added file."""
    _placed_by_hand(name)
    try:
        ds = _data_set(name)
        if ds.kind == "url":
            return _url_set(ds, "verify")
        pin = sets.hub_pin(ds, revision)
        folder = sets.folder(pin, root)
        problems = snap.check_folder(pin, folder, rehash=True, memo=False)
    except snap.SnapshotError as exc:
        _fail(exc)
    for problem in problems:
        click.echo(f"BAD {folder}/{problem}")
    click.echo(f"verified data set {name} ({pin.repo}@{pin.revision}) in {folder}: {len(problems)} problem(s)")
    if problems:
        _fail(snap.verification_error(pin, folder, problems))


@data_group.command("path")
@click.argument("name")
@_revision_option
@_cache_option
@click.option("--quick", is_flag=True, help="Trust files whose size and mtime match the manifest (no re-hash).")
def path_command(name: str, revision: str | None, root: Path | None, quick: bool) -> None:
    """Print NAME's verified folder (what `data import` reads)."""
    _placed_by_hand(name)
    try:
        ds = _data_set(name)
        if ds.kind == "url":
            return _url_set(ds, "path")
        pin = sets.hub_pin(ds, revision)
        folder = snap.verified_folder(pin, sets.folder(pin, root), rehash=not quick)
    except snap.SnapshotError as exc:
        _fail(exc)
    click.echo(str(folder))


def _importer(name: str):
    """(family, DataImporter) of NAME from the family plug-ins' `data_importers()` hook, else None."""
    from duplexeval.benchmarks import data_importers

    return data_importers().get(name)


def _placed_by_hand(name: str) -> None:
    """A set only a plug-in knows and no command can download: say where its copy goes, exit 2."""
    if name in _known():
        return
    found = _importer(name)
    if found is None:
        return
    _, importer = found
    click.echo(f"error: data set {name} cannot be fetched by duplexeval"
               + (f": {importer.fetch_hint}" if importer.fetch_hint else "")
               + f"\nthen run `duplexeval data import {name} PATH` on the placed copy", err=True)
    sys.exit(2)


def _unknown(name: str) -> None:
    """An unknown name: the error lists every set a command or a family's importer knows."""
    import difflib

    from duplexeval.benchmarks import data_importers

    known = sorted(set(_known()) | set(data_importers()))
    close = difflib.get_close_matches(name, known, n=1)
    raise sets.DataSetError(f"unknown data set {name!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
                            + f"; known: {', '.join(known)}")


def importer_errors(found) -> tuple[type[Exception], ...]:
    """The exception types a family's importer declares as format errors (printed, exit 2)."""
    return tuple(found[1].errors) if found is not None else ()


@data_group.command("import")
@click.argument("name")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@_cache_option
def import_command(name: str, path: Path, root: Path | None) -> None:
    """Convert a published copy of NAME (PATH: normally `duplexeval data path NAME`) into this project's formats.

    Every sample is validated on its own: one that is damaged or of a structure the
    importer does not know is skipped and listed (file, field, why), the rest imported, and
    the command exits 4 (partial). A copy of which nothing fits is refused (exit 2) and
    nothing is written. The paper suites then read the result (docs/data.md).
    """
    from duplexeval.benchmarks import ImportReport
    from duplexeval.data import imported
    from duplexeval.specs import SpecErrors

    found = _importer(name)
    known = _known()
    said: list[str] = []
    skipped: dict[str, str] = {}
    try:
        if name in known and known[name].kind != "hub":
            raise sets.DataSetError(f"{name} is read on demand by its benchmark (`duplexeval data fetch {name}`); "
                                    "there is nothing to import")
        if found is None:
            if name not in known:
                _unknown(name)
            raise sets.DataSetError(f"data set {name}: no installed benchmark family imports it")
        importer = found[1]

        def convert(src: Path, out: Path) -> None:
            got = importer.convert(src, out)
            if isinstance(got, ImportReport):
                said.extend(got.lines)
                skipped.update(got.skipped)
            else:
                said.extend(got or [])

        folder = imported.run_import(name, path, convert, root=root)
    except snap.SnapshotError as exc:
        _fail(exc)
    except (ValueError, SpecErrors) + importer_errors(found) as exc:  # the importers' format errors name the file
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    files = imported.read_import_manifest(folder)["files"]
    click.echo(f"imported {name}: {len(files)} files in {folder}")
    for line in said:
        click.echo(f"  {line}")
    _report_skipped(skipped)
    if name not in known:
        _exit_partial(skipped)
        return
    # What the paper suite will plan from it, beside the count the paper states (data.count),
    # in the words its family counts with (DataSet.unit per DataSet.per).
    ds = known[name]
    data, _ = sets.spec_data(ds)
    groups: dict[str, int] = {}
    for rel in files:
        if rel.endswith((".json", ".yaml")) and "/" in rel:
            groups[rel.split("/")[0]] = groups.get(rel.split("/")[0], 0) + 1
    for group, n in sorted(groups.items()):
        click.echo(f"  {group}: {n} {ds.unit} (the paper: {data.get('count', '?')} per {ds.per})")

    _exit_partial(skipped)


# A partial import (some samples skipped, the rest imported): the exit code of a run whose
# items did not all finish ok (README, "Exit codes").
EXIT_PARTIAL = 4
SHOWN_SKIPPED = 20


def _report_skipped(skipped: dict[str, str]) -> None:
    for why in list(skipped.values())[:SHOWN_SKIPPED]:
        click.echo(f"  skipped: {why}", err=True)
    if len(skipped) > SHOWN_SKIPPED:
        click.echo(f"  ... and {len(skipped) - SHOWN_SKIPPED} more (all listed in the import's index)", err=True)


def _exit_partial(skipped: dict[str, str]) -> None:
    if skipped:
        click.echo(f"partial import: {len(skipped)} sample(s) skipped (damaged or of an unknown structure), "
                   "the rest imported", err=True)
        sys.exit(EXIT_PARTIAL)


COMMANDS = [data_group]
