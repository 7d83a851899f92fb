"""`duplexeval new-model NAME`: scaffold a model folder that validates and passes conformance as written."""

from __future__ import annotations

from pathlib import Path

import click

from duplexeval.cli_errors import CommandError


@click.command("new-model")
@click.argument("name")  # scaffold() checks it: lower-case letters, digits, '.', '-' (a name, never a path)
@click.option("--from", "template", default="silent", show_default=True, type=click.Choice(["silent", "echo"]),
              help="What the shim does until you replace its step(): stay silent, or echo its input 2 s late.")
@click.option("--dir", "dest", default=".", show_default=True,
              type=click.Path(file_okay=False, path_type=Path), help="Folder to write specs/ and images/ into.")
def new_model(name: str, template: str, dest: Path) -> None:
    """Write specs/models/NAME.yaml and images/NAME/ (shim, Dockerfile, requirements) under --dir."""
    from duplexeval.scaffold import ScaffoldError, scaffold

    try:
        written = scaffold(name, dest, template)
    except ScaffoldError as exc:
        raise CommandError(str(exc)) from None
    for path in written:
        click.echo(f"wrote {path}")
    specs = (dest / "specs").resolve()
    click.echo(f"\nnext:\n  export DUPLEXEVAL_SPECS={specs}\n  duplexeval validate\n  duplexeval conformance {name}\n"
               f"  duplexeval run --suite embedded --models {name} --limit 1")


COMMANDS = [new_model]
