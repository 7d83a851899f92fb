"""`duplexeval timing-margin RUN_DIR`: does any golden cell hinge on tens of ms of ASR / VAD timing?"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from duplexeval.cli_errors import CommandError
from duplexeval.commands.bounds import finite
from duplexeval.commands.integrity_gate import allow_damaged_option, verified


@click.command("timing-margin")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--golden", "golden_paths", multiple=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Golden file(s) to compare with (repeatable). Default: the run's suite's golden files.")
@click.option("--shift-ms", type=finite(1.0, 1000.0), default=50.0, show_default=True,
              help="How far every ASR word time and VAD episode edge is moved, each way.")
@allow_damaged_option
def timing_margin(run_dir: Path, golden_paths: tuple[Path, ...], shift_ms: float, allow_damaged: bool) -> None:
    """Re-score RUN_DIR with every ASR word time and VAD edge moved by +-SHIFT and list the
    golden cells whose comparison changes (they sit within SHIFT of a rule boundary).

    Works from the recordings and caches (no model runs; offline judges are asked again,
    any other judge only replayed from its cache). Exit 1 when a cell moves, 0 when none
    does; the run itself is never written. docs/reports.md, "Timing margin".
    """
    from duplexeval.reports.golden import suite_golden_paths
    from duplexeval.runfolder.run_dir import load_run
    from duplexeval.runs.timing_margin import timing_margin as run_margin

    verified(run_dir, allow_damaged)
    paths = list(golden_paths) or suite_golden_paths(load_run(run_dir).manifest)
    if not paths:
        raise CommandError(f"{run_dir}: its suite names no golden file; pass --golden PATH")
    try:
        out = run_margin(run_dir, paths, shift_ms / 1000.0, progress=lambda m: click.echo(f"timing-margin {m}", err=True))
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    if not print_margin(out, shift_ms):
        sys.exit(1)


def print_margin(out: dict, shift_ms: float) -> bool:
    """Prints a margin check's findings and its summary line (also `reproduce`'s); True when no
    golden cell moved and every folder could be re-scored."""
    for e in out["errors"]:
        click.echo(f"not re-scorable: {e}")
    for m in out["moved"]:
        click.echo(f"moved: {m.line()}")
    cells = len({m.cell_id for m in out["moved"]})
    click.echo(f"timing margin +-{shift_ms:g} ms: {cells} of {out['compared']} located golden cell(s) move")
    return not out["moved"] and not out["errors"]


COMMANDS = [timing_margin]
