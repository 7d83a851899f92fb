"""`duplexeval verify RUN`: every damaged file of a run folder, named (docs/reliability.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import click


@click.command("verify")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--cache", "cache_root", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Judge cache the run's verdicts are in (default: $DUPLEXEVAL_CACHE/judges).")
@click.option("--no-secrets", is_flag=True, help="Skip the scan for key-like strings in the run's files.")
def verify(run_dir: Path, cache_root: Path | None, no_secrets: bool) -> None:
    """Check a run folder: items against status.json, records and items against results.json, results
    against manifest.json, cited judge cache entries, and no secrets. Exit 1 when anything is damaged."""
    from duplexeval.benchmarks import plugins
    from duplexeval.runfolder.verify import verify_run

    outcomes = {family: plugin.outcomes for family, plugin in plugins().items()}
    findings = verify_run(run_dir, cache_root=cache_root, secrets=not no_secrets, outcomes=outcomes)
    for f in findings:
        click.echo(f.line(run_dir), err=not f.damaged)
    damaged = sum(1 for f in findings if f.damaged)
    warnings = len(findings) - damaged
    click.echo(f"{run_dir}: {'DAMAGED: ' + str(damaged) + ' problem(s)' if damaged else 'intact'}"
               + (f", {warnings} warning(s)" if warnings else ""))
    sys.exit(1 if damaged else 0)


COMMANDS = [verify]
