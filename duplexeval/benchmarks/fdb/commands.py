"""`duplexeval fdb render-embedded OUT`: the embedded mini set in the published per-sample layout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from duplexeval.cli_errors import CommandError
from duplexeval.cli_params import FolderInUse, replace_guard

REFERENCE_FILE = "reference_distribution.json"


@click.group("fdb")
def fdb() -> None:
    """Full-Duplex-Bench (v1.0) tools."""


def earlier_render(source: dict[str, Any]):
    """Does a folder hold only what a render of `source` writes (subset/sample folders of files)?

    Replacing such a folder loses nothing the render does not write again; anything else in
    it (a mistyped OUT, the user's own data) is kept unless --force."""
    layout = {str(subset): {str(s["id"]) for s in samples or []} for subset, samples in source["subsets"].items()}

    def ours(folder: Path) -> bool:
        for subset in folder.iterdir():
            if not subset.is_dir() or subset.is_symlink() or subset.name not in layout:
                return False
            for entry in subset.iterdir():
                if entry.name == REFERENCE_FILE and entry.is_file():
                    continue
                if not entry.is_dir() or entry.is_symlink() or entry.name not in layout[subset.name]:
                    return False
                if any(not f.is_file() or f.is_symlink() for f in entry.iterdir()):
                    return False
        return True
    return ours


@fdb.command("render-embedded")
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
@click.option("--source", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Embedded source file (default: data/embedded/fdb/source.yaml).")
@click.option("--force", is_flag=True,
              help="Replace OUT even when it holds files an earlier render did not write (they are deleted).")
def render_embedded(out: Path, source: Path | None, force: bool) -> None:
    """Speak the embedded samples with flite into OUT/<subset>/<id>/ (input.wav, annotations, oracle.json).

    OUT is replaced whole; a non-empty OUT that is not an earlier render is refused without --force."""
    from duplexeval.benchmarks.fdb.embedded import EmbeddedSourceError, load_source, render
    from duplexeval.resources import resource

    src = source or resource("data", "embedded", "fdb", "source.yaml")
    try:
        replace_guard(out, force, earlier_render(load_source(src)))
        render(src, out)
    except EmbeddedSourceError as exc:
        raise click.ClickException(str(exc)) from None
    except FolderInUse as exc:
        raise CommandError(str(exc)) from None
    samples = sorted(p.parent.relative_to(out) for p in out.glob("*/*/input.wav"))
    click.echo(f"{out}: {len(samples)} samples in {len({s.parts[0] for s in samples})} subsets")


COMMANDS = [fdb]
