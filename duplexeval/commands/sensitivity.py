"""`duplexeval sensitivity RUN_DIR`: what each documented reading would move in a run's numbers."""

from __future__ import annotations

from pathlib import Path

import click

from duplexeval.cli_errors import CommandError
from duplexeval.commands.integrity_gate import allow_damaged_option, verified


@click.command("sensitivity")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--switch", "switches", multiple=True, metavar="FIELD=VALUE",
              help="Only this alternative reading (repeatable), e.g. metrics.answer.response_end=episode. "
                   "Default: every other named value of every reading the run's benchmarks have.")
@click.option("--all", "show_all", is_flag=True, help="Print every metric, also those an alternative does not move.")
@allow_damaged_option
def sensitivity(run_dir: Path, switches: tuple[str, ...], show_all: bool, allow_damaged: bool) -> None:
    """Re-score RUN_DIR under each alternative reading and print what moves.

    Per model x benchmark x metric: the value under the run's readings, under the
    alternative, and the difference; per switch and model, the units whose outcome moves
    (from -> to, with counts). Readings that change what the model hears are listed as not
    re-scorable. Works from the recordings and caches only (judge
    cache in replay mode: no model runs, no judge call is paid for). Writes
    RUN_DIR/sensitivity.json, which `duplexeval report` shows. The run is verified
    first: a damaged run is refused (exit 2) unless --allow-damaged.
    """
    from duplexeval.reports.sensitivity import moved, switch_summary
    from duplexeval.runs.sensitivity import Switch, format_moves, sensitivity as run_sensitivity

    try:
        parsed = [Switch.parse(s) for s in switches]
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--switch") from None
    verified(run_dir, allow_damaged)
    try:
        out = run_sensitivity(run_dir, parsed, progress=lambda m: click.echo(f"sensitivity {m}", err=True))
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    rows = out["rows"]
    fixed = out.get("not_rescorable") or []
    if not rows and not fixed:
        click.echo(f"{run_dir}: no reading to switch (the run's benchmarks mark none, or --switch matched none)")
        return
    if rows:
        click.echo("reading switches (run's value -> alternative): metrics moved / compared, largest change; "
                   "then per model the units whose outcome moves (record metric: from -> to count)")
    moves = _moves_by_switch(rows)
    for s in switch_summary(rows):
        largest = "" if s["largest"] is None else f", largest {s['largest']:+.4f}"
        err = f", {s['errors']} folder(s) not re-scorable (uncached judge calls)" if s["errors"] else ""
        click.echo(f"  {s['benchmark']:<24} {s['reading']} = {s['run_value']} -> {s['alternative']}: "
                   f"{s['moved']}/{s['metrics']} moved{largest}{err}  [{', '.join(s['models'])}]")
        moving = [(m, moves[k]) for m in s["models"]
                  if (k := (s["benchmark"], s["reading"], str(s["run_value"]), str(s["alternative"]), m)) in moves
                  and moves[k]]
        for model, unit_moves in moving:
            click.echo(f"      {model}: {format_moves(unit_moves)}")
        if not moving and s["metrics"]:
            click.echo("      no unit moves")
    for f in fixed:
        click.echo(f"  {f['benchmark']:<24} {f['reading']} = {f['run_value']} (not re-scorable: {f['why']}; "
                   f"other values: {', '.join(map(str, f['alternatives']))})  [{', '.join(f['models'])}]")
    shown = rows if show_all else moved(rows)
    if shown:
        click.echo("")
        click.echo(f"{'model':<10} {'benchmark':<24} {'metric':<30} {'reading -> alternative':<52} "
                   f"{'run':>16} {'alternative':>16} {'delta':>8}")
    for r in shown:
        if r.get("error"):
            click.echo(f"{r['model']:<10} {r['benchmark']:<24} {'-':<30} {r['reading'] + ' -> ' + str(r['alternative']):<52} "
                       f"{r['error']}")
            continue
        click.echo(f"{r['model']:<10} {r['benchmark']:<24} {r['metric']:<30} "
                   f"{r['reading'] + ' -> ' + str(r['alternative']):<52} "
                   f"{_cell(r['value'], r['numerator'], r['denominator']):>16} "
                   f"{_cell(r['alt_value'], r['alt_numerator'], r['alt_denominator']):>16} "
                   f"{'' if r['delta'] is None else format(r['delta'], '+.4f'):>8}")
    click.echo(f"\nwritten: {run_dir / 'sensitivity.json'}")


def _moves_by_switch(rows: list[dict]) -> dict[tuple, list[dict]]:
    """(benchmark, reading, run value, alternative, model) -> that switch's unit moves."""
    out: dict[tuple, list[dict]] = {}
    for r in rows:
        if "moves" in r:
            out.setdefault((r["benchmark"], r["reading"], str(r["run_value"]), str(r["alternative"]), r["model"]),
                           r["moves"])
    return out


def _cell(value, num, den) -> str:
    v = "–" if value is None else (f"{value:.4f}" if isinstance(value, float) else str(value))
    if num is None and den is None:
        return v
    return f"{v} ({_n(num)}/{_n(den)})"


def _n(x) -> str:
    return "–" if x is None else (str(int(x)) if isinstance(x, float) and x.is_integer() else str(x))


COMMANDS = [sensitivity]
