"""`duplexeval export RUN --format csv|parquet|markdown|json`: the tidy results table.

The run is verified first, like every command that reads a run's numbers (issue 39: an
edited results.json was exported as if measured): a damaged run is refused (exit 2)
unless --allow-damaged, which marks the table (markdown and json say DAMAGED RUN; every
format's findings go to stderr)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from duplexeval.cli_errors import CommandError
from duplexeval.commands.integrity_gate import allow_damaged_option, verified

SUFFIX = {"csv": "csv", "parquet": "parquet", "markdown": "md", "json": "json"}


@click.command("export")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(sorted(SUFFIX)), default="csv", show_default=True)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Output file (default: RUN_DIR/results.<suffix>; '-' prints to stdout).")
@allow_damaged_option
def export(run_dir: Path, fmt: str, out: Path | None, allow_damaged: bool) -> None:
    """One row per model x benchmark x metric x round, with numerator and denominator.

    The run is verified first: a damaged run is refused (exit 2) unless --allow-damaged."""
    from duplexeval.io import atomic_write_text
    from duplexeval.results import load, rows, to_markdown

    damaged = verified(run_dir, allow_damaged)
    table = rows(run_dir)
    if not table:
        raise CommandError(f"{run_dir}: no results.json to export")
    if fmt == "parquet":
        if str(out) == "-":
            raise CommandError("parquet is binary: give --out FILE")
        path = out or run_dir / "results.parquet"
        try:
            load(run_dir).to_parquet(path, index=False)
        except ImportError as exc:
            raise CommandError(f"parquet needs pyarrow or fastparquet ({exc}); use --format csv") from None
        click.echo(str(path))
        return
    if fmt == "csv":
        text = load(run_dir).to_csv(index=False)
    elif fmt == "json":
        text = json.dumps({"damaged": damaged, "rows": table} if damaged else table, indent=1, ensure_ascii=False) + "\n"
    else:
        text = to_markdown(table)
        if damaged:
            text = f"**DAMAGED RUN**: {len(damaged)} verify finding(s); these numbers cannot be trusted.\n\n" + text
    if out is not None and str(out) == "-":
        click.echo(text, nl=False)
        return
    path = out or run_dir / f"results.{SUFFIX[fmt]}"
    atomic_write_text(path, text)
    click.echo(str(path))


COMMANDS = [export]
