"""`duplexeval score RUN_DIR`: re-score every <model>/<benchmark> folder of a run, each by its family's plug-in."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from duplexeval.cli_errors import CommandError
from duplexeval.judges.cache import MODES as CACHE_MODES


@click.command("score")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--cache-mode", default="readwrite", show_default=True,
              type=click.Choice(CACHE_MODES), help="Judge cache mode.")
def score(run_dir: Path, cache_mode: str) -> None:
    """Re-score a run from its recordings, every benchmark of every installed family.

    RUN_DIR is a run folder (every <model>/<benchmark>/ inside is re-scored) or one
    <model>/<benchmark> folder. Writes records.jsonl + results.json per folder.
    """
    from duplexeval.benchmarks import benchmark_for
    from duplexeval.commands.run import ItemBar
    from duplexeval.runfolder.bench_folders import SPEC_SNAPSHOTS, bench_dirs, bench_spec_for
    from duplexeval.runfolder.verify import seal_enclosing_manifest

    folders = bench_dirs(run_dir)
    if not folders:
        raise CommandError(f"{run_dir}: no <model>/<benchmark>/items folders to score")
    lines: list[str] = []
    for folder in _progress(folders, "scoring"):
        spec = bench_spec_for(folder)
        rel = str(folder.relative_to(run_dir)) if folder != run_dir else folder.name
        snapshot = next((folder / n for n in SPEC_SNAPSHOTS if (folder / n).is_file()), None)
        family = benchmark_for(spec, snapshot or folder)
        bar = ItemBar(rel)
        try:
            res = family.score_dir(folder, spec, cache_mode, progress=bar)
        finally:
            bar.close()
        if res is None:
            click.echo(f"{rel}: skipped ({family.family}: nothing to score)", err=True)
        else:
            lines += family.result_lines(rel, res)
    seal_enclosing_manifest(run_dir)  # rescored results: the manifest records their new hashes
    for line in lines:
        click.echo(line)
    _exit_if_items_lost(run_dir, folders)


def _exit_if_items_lost(run_dir: Path, folders: list[Path]) -> None:
    """Every DAMAGED item by name, a line per folder with items not ok, then exit 4 (docs/reliability.md)."""
    import json

    from duplexeval.runs.outcomes import ITEMS_ERRORED, damaged_items, error_codes, error_line

    lost = 0
    for folder in folders:
        for reason in damaged_items(folder):
            click.echo(f"DAMAGED {reason}", err=True)
        try:
            results = json.loads((folder / "results.json").read_text("utf-8"))
        except (OSError, ValueError):
            results = None
        codes = error_codes(folder, results if isinstance(results, dict) else None)
        if codes:
            rel = str(folder.relative_to(run_dir)) if folder != run_dir else folder.name
            click.echo("errors: " + error_line(rel, codes), err=True)
            lost += sum(codes.values())
    if lost:
        click.echo(f"score: {lost} item(s) not ok: scored as errors, never as passes (exit {ITEMS_ERRORED})", err=True)
        sys.exit(ITEMS_ERRORED)


def _progress(items, desc: str):
    """A tqdm bar on a terminal; the plain list (no output) when stderr is not a TTY."""
    import sys

    if not sys.stderr.isatty():
        return items
    from tqdm import tqdm

    return tqdm(items, desc=desc, unit="folder", leave=False)


COMMANDS = [score]
