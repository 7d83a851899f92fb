"""`duplexeval run`: a suite end to end (runner -> scoring), resumable by run id."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from duplexeval.cli_params import child_folder
from duplexeval.commands.bounds import check_backend, check_executor, finite, run_id_name
from duplexeval.commands.preflight import no_preflight_option
from duplexeval.commands.runner import backend_options
from duplexeval.executors.core import UnitFailed
from duplexeval.io import atomic_write_json
from duplexeval.runner.errors import ModelStartError, RunConfigMismatch
from duplexeval.runs.run_name import default_run_id, fresh_run_id
from duplexeval.specs import Registry, SpecErrors, UnknownSpecError


class PreflightError(ValueError):
    """The plan needs an API key (or data) this environment lacks; nothing was started."""


# What stops a run before or between items (not an item's own fault): printed, exit 2.
RUN_ERRORS = (SpecErrors, UnknownSpecError, FileNotFoundError, RunConfigMismatch, ModelStartError, ValueError,
              UnitFailed)


def executor_options(fn):
    """`--executor`, `--jobs`, `--ray-address`, `--max-sessions`: how many model servers play the units, where,
    and how many sessions each holds."""
    fn = click.option("--max-sessions", type=click.IntRange(min=1), default=None, metavar="N",
                      help="At most N sessions at once per model server (default: each spec's launch.max_sessions; "
                           "docs/runner.md, Batched sessions in runs).")(fn)
    fn = click.option("--ray-address", metavar="ADDR",
                      help="Join this Ray cluster (host:port); default: start a local one. Needs --executor ray.")(fn)
    fn = click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True,
                      help="Model servers at once (local: worker processes; ray: actors per model).")(fn)
    return click.option("--executor", type=click.Choice(["serial", "local", "ray"]), default="serial",
                        show_default=True, help="Who plays the work units (docs/runner.md, Executors).")(fn)


def _split(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def run_suite(suite_id: str, *, models: list[str] | None, benchmarks: list[str] | None, run_id: str | None,
              runs_dir: Path, limit: int | None, clock: str | None, backend: str | None = None,
              endpoint: str | None = None, executor: str = "serial", jobs: int = 1, ray_address: str | None = None,
              max_sessions: int | None = None, price_per_minute: float | None = None, max_cost: float | None = None,
              preflight: bool = True):
    """Plan, write the manifest, execute on `executor` (serial | local | ray). Returns (run_dir, outcomes).

    With `preflight`, a plan whose models or judges name an unset API key variable is
    refused (PreflightError) before anything is written or started."""
    from duplexeval.executors import make_pool
    from duplexeval.runfolder.manifest import build_manifest
    from duplexeval.runfolder.plan import plan_suite
    from duplexeval.runs.execute import execute, run_context, sessions_record, with_runner

    registry = Registry.load()
    suite = registry.get("suite", suite_id).data
    clock = clock or suite["clock"]
    planned = plan_suite(registry, suite_id, models, benchmarks, clock=clock)
    from duplexeval.data.imported import missing_data

    missing = missing_data([j.bench for j in planned], f"suite {suite_id}")
    if missing:  # before any job starts: the exact fetch and import commands (docs/data.md)
        raise FileNotFoundError(missing)
    seed = int(suite.get("seed", 0))
    limit = limit or suite.get("limit")
    run_id = run_id or default_run_id(suite_id, models, benchmarks)
    run_dir = child_folder(runs_dir, run_id, "run id")
    planned = with_runner(planned, run_id, backend, endpoint, max_sessions)
    if price_per_minute is not None or max_cost is not None:
        from duplexeval.runs.cost_estimate import apply_budget

        apply_budget(planned, run_dir, clock, limit, price_per_minute, max_cost)  # read by the realtime bridges
    if preflight:
        from duplexeval.commands.preflight import missing_keys, preflight_message

        keys = missing_keys(planned, registry)
        if keys:
            raise PreflightError(preflight_message(keys))
    manifest = build_manifest(run_id, suite_id, planned, registry, clock, seed, suite["cache_mode"])
    manifest["limit"] = limit
    manifest["max_sessions"] = sessions_record(planned, max_sessions)
    for entry, job in zip(manifest["jobs"], planned):  # how the items reach the model, where a family has a choice
        context = run_context(job, entry["clock"])
        if context is not None:
            entry["context"] = context
    printer = ProgressPrinter()
    pool = make_pool(executor, run_dir, jobs=jobs, ray_address=ray_address,
                     scoring_progress=printer.scoring if executor == "serial" else None)
    try:
        manifest["executor"] = pool.describe()  # which executor, how many servers, the Ray cluster's shape
        atomic_write_json(run_dir / "manifest.json", manifest)
        click.echo(f"run {run_id}: {len(planned)} job(s) on the {executor} executor -> {run_dir}")
        outcomes = execute(planned, run_dir, clock=clock, seed=seed, cache_mode=suite["cache_mode"], limit=limit,
                           progress=printer, pool=pool)
    except BaseException:
        pool.close()
        raise
    finally:
        printer.close()
    return run_dir, outcomes


_ITEM_LINE = re.compile(r"^\s+(\d+)/(\d+) (\S+) (.*?)(?: \[\d+ s\])?$")


def _advance(bar, stream, desc: str | None, done: int, total: int, item: str):
    """The tqdm bar for `desc`/`total` (a new one when the old is for another), moved to `done`."""
    if bar is not None and (bar.desc != (desc or "") or bar.total != total):
        bar.close()
        bar = None
    if bar is None:
        from tqdm import tqdm

        bar = tqdm(total=total, desc=desc, unit="item", file=stream, leave=False, dynamic_ncols=True)
    bar.n = done
    bar.set_postfix_str(item, refresh=False)
    bar.refresh()
    return bar


class ProgressPrinter:
    """execute()'s progress lines as a tqdm bar per job (count, rate, ETA) on a terminal.

    Not on a terminal (CI logs, pipes): no bar and no line per finished item; job
    headers and items that did not finish ok are still printed.
    """

    def __init__(self, stream=None) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.bar = None

    def __call__(self, line: str) -> None:
        m = _ITEM_LINE.match(line)
        if m is None:
            self._write(line)
            return
        done, total, item, state = int(m.group(1)), int(m.group(2)), m.group(3), m.group(4)
        ok = state == "ok" or state.startswith("skipped")
        if not self.tty:
            if not ok:
                self._write(line)
            return
        self.bar = _advance(self.bar, self.stream, None, done, total, item)
        if not ok:
            self._write(line)

    def _write(self, line: str) -> None:
        if self.bar is not None and not line.startswith("  "):
            self.close()  # a new job (or stage): the previous bar is done
        if self.bar is not None:
            self.bar.write(line, file=self.stream)
        else:
            click.echo(line, err=True)

    def scoring(self, done: int, total: int, item: str) -> None:
        """score_bench_dir's `progress` (scoring and ASR, per item): a 'scoring' bar, quiet off a TTY.

        execute() passes it on as `progress=getattr(progress, "scoring", None)`."""
        if self.tty:
            self.bar = _advance(self.bar, self.stream, "scoring", done, total, item)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class ItemBar:
    """A `progress(done, total, item)` callback for score_bench_dir: a tqdm bar (count, rate,
    ETA) on a terminal, nothing at all when stderr is not a TTY. Only reports: no file changes."""

    def __init__(self, desc: str, stream=None) -> None:
        self.desc = desc
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.bar = None

    def __call__(self, done: int, total: int, item: str) -> None:
        if self.tty:
            self.bar = _advance(self.bar, self.stream, self.desc, done, total, item)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


@click.command("run")
@click.option("--suite", "suite_id", default="embedded", show_default=True, help="Suite spec id.")
@click.option("--models", help="Comma-separated model ids (default: all of the suite's).")
@click.option("--benchmarks", help="Comma-separated benchmark ids (default: all of the suite's).")
@click.option("--run-id", callback=run_id_name,
              help="Resume or name a run (a name, not a path); finished items of the same run are reused.")
@click.option("--new", "fresh", is_flag=True,
              help="A fresh run: the default run id with the time appended (the default id resumes).")
@click.option("--report/--no-report", "with_report", default=True, show_default=True,
              envvar="DUPLEXEVAL_RUN_REPORT",
              help="Write report.html and report.tex into the run folder at the end.")
@click.option("--runs-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("runs"), show_default=True)
@click.option("--limit", type=click.IntRange(min=1), help="At most this many items per benchmark (smoke runs).")
@click.option("--clock", type=click.Choice(["lockstep", "realtime", "per-model"]),
              help="Override the suite's clock (per-model: each model's latency_clock).")
@click.option("--dry-run", is_flag=True, help="Print the audio minutes each job would stream and, for paid "
              "realtime APIs, the cost; start nothing.")
@click.option("--price-per-minute", type=finite(0.0), help="Bill realtime-API models per streamed "
              "audio minute at this price (default: each spec's launch.realtime.token_prices, or its price_per_minute).")
@click.option("--max-cost", type=finite(0.0), help="Never spend more than this on paid realtime-API "
              "sessions: each reserves its estimate before it starts and more as it grows; sessions that do not fit "
              "are not run (redone by a resume with a higher limit), and the run exits non-zero.")
@no_preflight_option
@backend_options
@executor_options
def run(suite_id, models, benchmarks, run_id, fresh, with_report, runs_dir, limit, clock, dry_run, price_per_minute,
        max_cost, skip_preflight, backend, endpoint, executor, jobs, ray_address, max_sessions) -> None:
    """Run a suite: every (model x benchmark) job through the runner, then score it.

    Results land in RUNS_DIR/RUN_ID/<model>/<benchmark>/ (records.jsonl, results.json), and
    the report in RUNS_DIR/RUN_ID/report.html and report.tex. The default RUN_ID is derived
    from the suite and the --models/--benchmarks selection, so repeating a command resumes it,
    redoing only unfinished items; --new starts a fresh run. Exit 4 when
    any item errored (after writing everything; one line per job with its error codes),
    5 when the results are written but the report could not be.
    """
    check_options(backend, endpoint, executor, jobs, ray_address)
    if fresh and run_id:
        raise click.UsageError("--new and --run-id both name the run: give one")
    if fresh:
        run_id = fresh_run_id(suite_id, _split(models), _split(benchmarks))
    if dry_run:
        from duplexeval.runs.cost_estimate import dry_run_lines

        try:
            lines = dry_run_lines(suite_id, _split(models), _split(benchmarks), clock, limit, price_per_minute)
        except RUN_ERRORS as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
        click.echo("\n".join(lines))
        return
    run_id = run_id or default_run_id(suite_id, _split(models), _split(benchmarks))
    try:
        run_dir, outcomes = run_suite(suite_id, models=_split(models), benchmarks=_split(benchmarks), run_id=run_id,
                                      runs_dir=runs_dir, limit=limit, clock=clock, backend=backend, endpoint=endpoint,
                                      executor=executor, jobs=jobs, ray_address=ray_address, max_sessions=max_sessions,
                                      price_per_minute=price_per_minute, max_cost=max_cost,
                                      preflight=not skip_preflight)
    except RUN_ERRORS as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        interrupted(run_id, runs_dir)
    _print_results(outcomes)
    print_unfilled(outcomes, limit)
    click.echo(f"results: {run_dir}")
    reported = write_run_report(run_dir) if with_report else True
    exit_if_nothing_ran(outcomes)
    exit_if_items_errored(outcomes)
    if not reported:
        sys.exit(REPORT_FAILED)


def exit_if_nothing_ran(outcomes) -> None:
    """No job of the plan produced results (data missing for every one, say): that is no run (exit 2)."""
    if outcomes and all(o.results is None for o in outcomes):
        click.echo(f"error: nothing ran: none of the {len(outcomes)} job(s) could run (each one's reason is above: "
                   "place or import the data it names, or narrow the run with --models/--benchmarks)", err=True)
        sys.exit(2)


REPORT_FAILED = 5  # the run is written and scored; only its report is not (see write_run_report)


INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command Ctrl-C stopped


def resume_command(run_id: str, argv: list[str] | None = None) -> str:
    """The command line that resumes run `run_id`: this one, with --new replaced by --run-id."""
    import shlex

    args = list(sys.argv[1:] if argv is None else argv)
    args = [a for a in args if a != "--new"]
    if not any(a == "--run-id" or a.startswith("--run-id=") for a in args):
        args += ["--run-id", run_id]
    return "duplexeval " + " ".join(shlex.quote(a) for a in args)


def interrupted(run_id: str, runs_dir: Path) -> None:
    """Ctrl-C: what is kept and the command that goes on from there (click alone prints only 'Aborted!')."""
    click.echo(f"\ninterrupted: the finished items of run {run_id} are kept in {runs_dir / run_id}; "
               f"resume with:\n  {resume_command(run_id)}", err=True)
    sys.exit(INTERRUPTED)


def write_run_report(run_dir: Path) -> bool:
    """report.html and report.tex of the finished run, compared with its suite's golden files.

    A report that fails to render says so and leaves the run's results alone; a report of
    an earlier pass of the same run (a resume) is moved aside to report.stale.<ext>, so
    nobody reads it as this run's (issue 39). Returns whether the report was written."""
    from duplexeval.benchmarks import plugins
    from duplexeval.reports.golden import suite_golden_paths
    from duplexeval.reports.render import write_report
    from duplexeval.runfolder.run_dir import load_run

    try:
        written = write_report(run_dir, families=plugins(), golden_paths=suite_golden_paths(load_run(run_dir).manifest))
    except Exception as exc:  # noqa: BLE001 - the run is written; the report is a view of it
        stale = [p for p in (run_dir / "report.html", run_dir / "report.tex") if p.is_file()]
        for path in stale:
            path.replace(path.with_name(f"report.stale{path.suffix}"))
        moved = f"; the earlier report is now {', '.join(p.stem + '.stale' + p.suffix for p in stale)}" if stale else ""
        click.echo(f"report not written ({type(exc).__name__}: {exc}){moved}; try `duplexeval report {run_dir}`",
                   err=True)
        return False
    click.echo(f"report: {written['html']} (LaTeX: {written['latex']}; PDF: duplexeval report {run_dir} --pdf)")
    return True


def print_unfilled(outcomes, limit: int | None) -> None:
    """One line naming the benchmarks --limit (or the data) left empty; each job's reason is on its line above."""
    benches = sorted({o.job.benchmark.id for o in outcomes if o.results is None})
    if benches:
        head = f"with --limit {limit}, " if limit else ""
        click.echo(f"{head}{len(benches)} benchmark(s) not filled (reasons above): {', '.join(benches)}")


def check_options(backend: str | None, endpoint: str | None, executor: str, jobs: int, ray_address: str | None) -> None:
    """Conflicting or absurd options are refused, naming both, before anything is planned or written."""
    check_backend(backend, endpoint)
    check_executor(executor, jobs, ray_address)


def print_item_errors(outcomes) -> int:
    """One line per job that lost items, with its error counts by code; returns how many items."""
    from duplexeval.runs.outcomes import error_line, job_errors

    errored = job_errors(outcomes)
    for key, codes in errored:
        click.echo("errors: " + error_line(key, codes), err=True)
    total = sum(sum(c.values()) for _, c in errored)
    if total:
        click.echo(f"{total} item(s) errored in {len(errored)} job(s): their cells are marked incomplete", err=True)
    return total


def exit_if_items_errored(outcomes) -> None:
    """After everything is written: the error lines, and exit 4 when any item errored."""
    from duplexeval.runs.outcomes import ITEMS_ERRORED

    if print_item_errors(outcomes):
        sys.exit(ITEMS_ERRORED)


def outcome_counts(metric: dict) -> str:
    """Every outcome behind a metric, e.g. ' [already_speaking 9, no_response 1, success 0]': a
    rate alone hides why the units failed (issue 28: 'success 0/10' hid 9 already_speaking)."""
    counts = metric.get("outcomes")
    if not isinstance(counts, dict) or not counts:
        return ""
    return " [" + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + "]"


def _print_results(outcomes) -> None:
    for o in outcomes:
        if o.results is None:
            click.echo(f"{o.job.key}: not run ({o.reason})")
            continue
        items = o.results.get("items", {})
        parts = []
        for name, m in o.results.get("metrics", {}).items():
            if not isinstance(m, dict) or "denominator" not in m:
                continue
            value = "n/r" if m.get("value") is None else f"{m['value']:.3f}"
            lost = (m.get("outcomes") or {}).get("error") if isinstance(m.get("outcomes"), dict) else None
            parts.append(f"{name} {value} ({m.get('numerator')}/{m.get('denominator')})"
                         + outcome_counts(m) + (f" INCOMPLETE: {lost} error" if lost else ""))
        not_ok = sum(v for k, v in items.items() if k not in ("ok", "total") and isinstance(v, int))
        ok = items.get("ok", items["total"] - not_ok if isinstance(items.get("total"), int) else "?")
        click.echo(f"{o.job.key}: items {ok} ok, {not_ok} error; " + "; ".join(parts))


COMMANDS = [run]
