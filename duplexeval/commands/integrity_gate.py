"""Commands that read a run's numbers (`report`, `compare`) verify it first (issue 25).

A report or a golden diff of a damaged run would present altered or half-written
numbers as results. The gate refuses such a run (exit 2, naming the damaged files);
`--allow-damaged` renders it anyway, with the damage stated on every page.
"""

from __future__ import annotations

from pathlib import Path

import click

from duplexeval.cli_errors import CommandError

SHOWN = 2  # the error stays short (docs/reliability.md); `duplexeval verify` lists every finding

allow_damaged_option = click.option(
    "--allow-damaged", is_flag=True,
    help="Go on when `duplexeval verify` finds the run damaged (the damage is stated in the output).")


def verified(run_dir: Path, allow_damaged: bool) -> list[str]:
    """verify's damage findings of run_dir: refused unless allow_damaged; [] when intact."""
    from duplexeval.runfolder.verify import verify_run

    damaged = [f.line(run_dir) for f in verify_run(run_dir) if f.damaged]
    if not damaged:
        return []
    more = f" (and {len(damaged) - SHOWN} more)" if len(damaged) > SHOWN else ""
    if not allow_damaged:
        raise CommandError(f"{run_dir}: the run is damaged, refusing to read its numbers (`duplexeval verify` "
                           f"lists every finding; --allow-damaged goes on, marked):\n  "
                           + "\n  ".join(damaged[:SHOWN]) + more)
    for line in damaged[:SHOWN]:
        click.echo(f"warning: {line}", err=True)
    click.echo(f"warning: {run_dir} is damaged ({len(damaged)} finding(s)); going on because of --allow-damaged",
               err=True)
    return damaged
