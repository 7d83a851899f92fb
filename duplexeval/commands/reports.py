"""`duplexeval compare`, `duplexeval paper-check`, `duplexeval report`.

Exit codes are the contract for CI and `make reproduce`: 0 = every golden cell found and
within tolerance, 1 = a cell out of tolerance or missing (missing allowed with
--allow-missing), 2 = bad input (an
invalid golden file, a missing run directory), as click does for usage errors.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from duplexeval.cli_errors import CommandError
from duplexeval.cli_params import Finite, name_option
from duplexeval.commands.integrity_gate import allow_damaged_option, verified
from duplexeval.reports.compare import compare_run, failed, format_diff, summary
from duplexeval.reports.golden import golden_files, load_golden, suite_golden_paths
from duplexeval.runfolder.run_dir import load_run
from duplexeval.specs.errors import SpecErrors


def _aliases(pairs: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        if "=" not in pair:
            raise click.BadParameter(f"{pair!r}: expected OLD=NEW", param_hint="--alias")
        old, new = pair.split("=", 1)
        out[old] = new
    return out


def _load_goldens(paths: tuple[str, ...]):
    try:
        return [load_golden(p) for p in paths]
    except SpecErrors as exc:
        click.echo(str(exc), err=True)
        sys.exit(2)


@click.command("compare")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--golden", "golden_paths", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Golden YAML file (repeatable), e.g. golden/embedded.yaml; default: the run's suite's `golden:`.")
@click.option("--allow-missing", is_flag=True,
              help="List golden cells the run does not contain without failing (a run narrowed on purpose).")
@click.option("--strict", is_flag=True, hidden=True, help="Kept for old scripts: missing cells always fail now.")
@click.option("--tolerance", type=Finite(0.0), default=None,
              help="Absolute tolerance for every cell, replacing the golden file's (e.g. for a re-run of a model).")
@click.option("--alias", "aliases", multiple=True, metavar="OLD=NEW",
              help="Map a model or benchmark id of the golden file to the run's (repeatable).")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the diff rows as JSON.")
@click.option("--allow-incomplete", is_flag=True,
              help="Compare numbers of results that say complete: false (errored items) instead of failing them.")
@allow_damaged_option
def compare_command(run_dir: Path, golden_paths: tuple[str, ...], allow_missing: bool, strict: bool,
                    tolerance: float | None,
                    aliases: tuple[str, ...], json_out: Path | None, allow_incomplete: bool, allow_damaged: bool) -> None:
    """Diff RUN_DIR's results against golden numbers; exit 1 when a cell is out of tolerance or missing.

    The run is verified first: a damaged run is refused (exit 2) unless --allow-damaged."""
    if strict and allow_missing:
        raise click.UsageError("--strict and --allow-missing contradict each other: give one")
    damaged = verified(run_dir, allow_damaged)
    run = load_run(run_dir)
    golden_paths = golden_paths or tuple(str(p) for p in suite_golden_paths(run.manifest))
    if not golden_paths:
        raise click.UsageError("the run names no suite with golden files: pass --golden FILE")
    any_failed = False
    all_rows: dict[str, list[Any]] = {}
    for golden in _load_goldens(golden_paths):
        rows = compare_run(run, golden, tolerance=tolerance, aliases=_aliases(aliases),
                           allow_incomplete=allow_incomplete)
        bad = failed(rows, allow_missing=allow_missing)
        any_failed |= bad
        click.echo(f"== {golden.path.name} vs {run_dir}: " + summary(rows) + (" -> FAIL" if bad else " -> ok"))
        click.echo(format_diff(rows))
        all_rows[golden.path.name] = [r.as_dict() for r in rows]
    if damaged:
        click.echo(f"DAMAGED RUN: {len(damaged)} verify finding(s); these numbers cannot be trusted")
        all_rows["damaged"] = damaged
    if json_out is not None:
        from duplexeval.io import atomic_write_json

        atomic_write_json(json_out, all_rows)
    sys.exit(1 if any_failed else 0)


@click.command("paper-check")
@click.option("--golden", "golden_paths", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="A paper's golden file (repeatable), in place of golden/'s file of the same paper "
                   "(each family names its papers' files: `paper_golden_files`).")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON instead of a table.")
def paper_check_command(golden_paths: tuple[str, ...], as_json: bool) -> None:
    """Re-derive the papers' numbers from their own counts; exit 1 on a cell out of tolerance.

    Known inconsistencies of the papers are printed as 'does not reconcile' with their
    reason and do not fail the check.
    """
    # Imported here: it pulls in scipy.stats (~1.5 s), which no other command needs at start-up.
    from duplexeval.benchmarks import plugins
    from duplexeval.reports.paper_arithmetic import default_golden_paths, format_rows, paper_arithmetic, summary

    papers = {str(g.paper.get("id")) for g in _load_goldens(tuple(str(p) for p in default_golden_paths(plugins())))}
    given = _load_goldens(golden_paths)
    for golden in given:
        if str(golden.paper.get("id")) not in papers:
            raise click.BadParameter(f"{golden.path} is the golden file of paper {golden.paper.get('id')!r}, whose "
                                     f"arithmetic no family re-derives (papers: {', '.join(sorted(papers))})",
                                     param_hint="--golden")
    try:
        rows = paper_arithmetic(plugins(), *given)
    except KeyError as exc:  # a cell the arithmetic re-derives from is not in the given file
        names = " / ".join(str(g.path) for g in given) or "golden/"
        raise CommandError(f"{names}: no golden cell {exc} that the paper arithmetic needs") from None
    if as_json:
        click.echo(json.dumps([r.as_dict() for r in rows], indent=2, ensure_ascii=False))
    else:
        click.echo(format_rows(rows))
        click.echo("paper arithmetic: " + ", ".join(f"{v} {k}" for k, v in summary(rows).items()))
    sys.exit(1 if any(r.failed for r in rows) else 0)


@click.command("report")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--format", "formats", default="html,latex", show_default=True,
              help="Comma-separated: html, latex.")
@click.option("--golden", "golden_paths", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Golden file(s) whose diff goes into the report (repeatable); default: the run's suite's "
                   "`golden:` (the papers' golden files give the published rows of the paper tables either way).")
@click.option("--no-paper-arithmetic", is_flag=True, help="Leave the paper arithmetic table out.")
@click.option("--item", default=None, callback=name_option("item id"),
              help="Item id for the scene timeline (default: the first item with windows).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder for report.html / report.tex (default: RUN_DIR).")
@click.option("--alias", "aliases", multiple=True, metavar="OLD=NEW", help="As for compare.")
@click.option("--pdf", is_flag=True, help="Also compile report.tex to report.pdf (latexmk, else pdflatex rerun "
              "until longtable's column widths settle).")
@allow_damaged_option
def report_command(run_dir: Path, formats: str, golden_paths: tuple[str, ...], no_paper_arithmetic: bool,
                   item: str | None, out_dir: Path | None, aliases: tuple[str, ...], pdf: bool,
                   allow_damaged: bool) -> None:
    """Write report.html (self-contained) and report.tex (booktabs) for RUN_DIR.

    The run is verified first: a damaged run is refused (exit 2) unless --allow-damaged,
    which states the damage at the top of every page."""
    from duplexeval.benchmarks import plugins
    from duplexeval.reports.render import write_report

    damaged = verified(run_dir, allow_damaged)
    golden_paths = golden_paths or tuple(str(p) for p in suite_golden_paths(load_run(run_dir).manifest))
    _load_goldens(golden_paths)  # fail early, with file:line, before rendering anything
    wanted = [f.strip() for f in formats.split(",") if f.strip()]
    if pdf and "latex" not in wanted:
        wanted.append("latex")
    try:
        written = write_report(run_dir, families=plugins(), formats=wanted, golden_paths=golden_paths, with_arithmetic=not no_paper_arithmetic,
                               item=item, out_dir=out_dir, aliases=_aliases(aliases), damaged=damaged)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    if pdf:
        from duplexeval.reports.pdf import PdfError, compile_pdf

        try:
            written["pdf"] = compile_pdf(written["latex"])
        except PdfError as exc:
            raise CommandError(str(exc)) from None
    for fmt, path in written.items():
        click.echo(f"{fmt}: {path}")


@click.command("golden-validate", hidden=True)
def golden_validate_command() -> None:
    """Validate every golden/*.yaml against golden/golden.schema.json."""
    _load_goldens(tuple(str(p) for p in golden_files()))
    click.echo(f"{len(golden_files())} golden files valid")


COMMANDS = [compare_command, paper_check_command, report_command, golden_validate_command]
