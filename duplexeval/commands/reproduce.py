"""`duplexeval reproduce`: what `make reproduce` runs.

run the suite -> re-derive the papers' own arithmetic -> compare the run with the suite's
golden files -> write the HTML and LaTeX report. Exit 1 when any comparison fails,
a golden cell is missing from the run (no data, a job that never ran) included.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from duplexeval.commands.bounds import run_id_name
from duplexeval.commands.preflight import no_preflight_option
from duplexeval.commands.run import (
    RUN_ERRORS,
    _print_results,
    _split,
    check_options,
    executor_options,
    interrupted,
    print_item_errors,
    run_suite,
)
from duplexeval.commands.runner import backend_options
from duplexeval.runs.outcomes import ITEMS_ERRORED
from duplexeval.specs import Registry, repo_root


@click.command("reproduce")
@click.option("--suite", "suite_id", default="embedded", show_default=True, help="Suite spec id.")
@click.option("--models", help="Comma-separated model ids (default: all of the suite's).")
@click.option("--run-id", callback=run_id_name,
              help="Name (or resume) the run (a name, not a path); default: the suite id, so a rerun resumes.")
@click.option("--runs-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("runs"), show_default=True)
@click.option("--limit", type=click.IntRange(min=1), help="At most this many items per benchmark (smoke runs).")
@no_preflight_option
@backend_options
@executor_options
def reproduce(suite_id: str, models: str | None, run_id: str | None, runs_dir: Path, limit: int | None,
              skip_preflight: bool, backend: str | None, endpoint: str | None, executor: str, jobs: int, ray_address: str | None,
              max_sessions: int | None) -> None:
    """Run a suite end to end, check the papers' arithmetic, diff against golden, write the report.

    Exit 1 when a comparison fails, 4 when every comparison passed but an item errored."""
    from duplexeval.benchmarks import plugins
    from duplexeval.reports.compare import compare_run, failed, format_diff, summary as diff_summary
    from duplexeval.reports.golden import load_golden
    from duplexeval.reports.paper_arithmetic import format_rows, paper_arithmetic, summary
    from duplexeval.reports.render import write_report
    from duplexeval.runfolder.run_dir import load_run
    from duplexeval.runs.statistics import write_statistics

    check_options(backend, endpoint, executor, jobs, ray_address)
    try:
        suite = Registry.load().get("suite", suite_id).data
        run_dir, outcomes = run_suite(suite_id, models=_split(models), benchmarks=None, run_id=run_id or suite_id,
                                      runs_dir=runs_dir, limit=limit, clock=None,
                                      backend=backend, endpoint=endpoint, executor=executor, jobs=jobs,
                                      ray_address=ray_address, max_sessions=max_sessions,
                                      preflight=not skip_preflight)
    except RUN_ERRORS as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        interrupted(run_id or suite_id, runs_dir)
    _print_results(outcomes)
    write_statistics(run_dir)
    from duplexeval.runfolder.verify import seal_manifest

    seal_manifest(run_dir)  # statistics.json too

    ok = True
    click.echo("\n== paper arithmetic (published numbers re-derived from the papers' own counts)")
    rows = paper_arithmetic(plugins())
    click.echo(format_rows(rows))
    click.echo("paper arithmetic: " + ", ".join(f"{v} {k}" for k, v in summary(rows).items()))
    ok &= not any(r.failed for r in rows)

    golden_paths = [str(repo_root() / g) for g in suite.get("golden", [])]
    run = load_run(run_dir)
    golden_rows: list = []
    for path in golden_paths:
        click.echo(f"\n== {Path(path).relative_to(repo_root())} vs {run_dir}")
        diff = compare_run(run, load_golden(path))
        click.echo(format_diff(diff))
        click.echo(diff_summary(diff))
        golden_rows += diff
        ok &= not failed(diff)

    margin_ms = suite.get("timing_margin_ms")
    if margin_ms:
        ok &= _timing_margin(run_dir, [Path(p) for p in golden_paths], float(margin_ms), jobs)

    written = write_report(run_dir, families=plugins(), formats=["html", "latex"], golden_paths=golden_paths)
    click.echo("")
    for fmt, report_path in written.items():
        click.echo(f"report ({fmt}): {report_path}")
    lost = print_item_errors(outcomes)
    if not ok:
        what = f" ({diff_summary(golden_rows)} against golden)" if golden_paths else ""
        click.echo(f"reproduce: some comparisons failed{what}; see above", err=True)
        sys.exit(1)
    if lost:  # every comparison passed, but a lost item still fails the command
        click.echo(f"reproduce: every comparison within tolerance, but {lost} item(s) errored", err=True)
        sys.exit(ITEMS_ERRORED)
    click.echo("reproduce: every comparison within tolerance")


def _timing_margin(run_dir: Path, golden_paths: list[Path], margin_ms: float, jobs: int = 1) -> bool:
    """The suite's `timing_margin_ms`: no golden cell may move when every ASR word time and VAD
    edge moves by that much (duplexeval.runs.timing_margin); True when none does. With `--jobs`
    above 1 the two shifts re-score side by side (the run's workers are gone by then)."""
    from duplexeval.commands.timing_margin import print_margin
    from duplexeval.runs.timing_margin import APART, timing_margin

    click.echo(f"\n== timing margin: {run_dir} re-scored with ASR words and VAD edges moved {margin_ms:g} ms apart, "
               "each way")
    try:
        out = timing_margin(run_dir, golden_paths, margin_ms / 1000.0, shifts=APART, jobs=jobs)
    except ValueError as exc:  # a folder the scorers refuse: the check cannot vouch for the margin
        click.echo(f"timing margin: not checked: {exc}")
        return False
    return print_margin(out, margin_ms)


COMMANDS = [reproduce]
