"""`duplexeval fdb render-embedded OUT`: the embedded mini set in the published per-sample layout."""

from __future__ import annotations

from pathlib import Path

import click


@click.group("fdb")
def fdb() -> None:
    """Full-Duplex-Bench (v1.0) tools."""


@fdb.command("render-embedded")
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
@click.option("--source", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Embedded source file (default: data/embedded/fdb/source.yaml).")
def render_embedded(out: Path, source: Path | None) -> None:
    """Speak the embedded samples with flite into OUT/<subset>/<id>/ (input.wav, annotations, oracle.json)."""
    from duplexeval.benchmarks.fdb.embedded import EmbeddedSourceError, render
    from duplexeval.resources import resource

    src = source or resource("data", "embedded", "fdb", "source.yaml")
    try:
        render(src, out)
    except EmbeddedSourceError as exc:
        raise click.ClickException(str(exc)) from None
    samples = sorted(p.parent.relative_to(out) for p in out.glob("*/*/input.wav"))
    click.echo(f"{out}: {len(samples)} samples in {len({s.parts[0] for s in samples})} subsets")


COMMANDS = [fdb]
