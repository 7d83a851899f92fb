"""`duplexeval import-recordings` and `export-recordings`: recordings across the benchmarks' own conventions.

`import-recordings BENCH DIR --model NAME --layout L` scores recordings made by another
pipeline (a family's authors' layout, or ours: docs/data.md "Submission format") after
checking each one against the benchmark's stimulus; `export-recordings RUN --layout L OUT`
writes a run's recordings so that the authors' scripts read them unchanged. Both go through
the families' hooks (Benchmark.recording_importers / recording_exporters): this module
names no family.
"""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path

import click

from duplexeval.cli_errors import CommandError
from duplexeval.cli_params import name_option
from duplexeval.judges.cache import MODES as CACHE_MODES

# A partial import (some files refused, the rest imported and scored): the exit code of a run
# whose items did not all finish ok (README, "Exit codes").
EXIT_PARTIAL = 4


def _bench(benchmark: str, suite: str | None) -> tuple[dict, str]:
    """The benchmark spec (with the suite's overrides when --suite is given) and its sha256."""
    from duplexeval.runfolder.plan import apply_overrides
    from duplexeval.specs import Registry

    registry = Registry.load()
    spec = registry.get("benchmark", benchmark)
    overrides: dict = {}
    if suite:
        s = registry.get("suite", suite).data
        overrides = dict(s.get("overrides", {}))
        if "tts" in s:
            overrides["tts"] = s["tts"]
    return apply_overrides(spec.data, overrides), spec.sha256


def _importer(benchmark: str, bench: dict, layout: str | None):
    """(layout, the family's importer of it); a CommandError naming the layouts it has (or why it has none)."""
    from duplexeval.benchmarks import benchmark_for

    plugin = benchmark_for(bench)
    importers = plugin.recording_importers()
    if not importers:
        refusal = plugin.recording_import_refusal()
        raise CommandError(f"{benchmark}: " + (f"{plugin.family} recordings cannot be imported: {refusal}" if refusal
                                               else f"family {plugin.family!r} has no recording importer"))
    if layout is None:
        layout = "duplexeval" if "duplexeval" in importers or len(importers) != 1 else next(iter(importers))
    if layout not in importers:
        raise CommandError(f"--layout {layout}: not a layout of {plugin.family} recordings (it imports "
                           f"{', '.join(sorted(importers))})")
    return layout, importers[layout]


def _all_layouts() -> list[str]:
    from duplexeval.benchmarks import plugins

    return sorted({name for p in plugins().values() for name in p.recording_importers()})


class _ImportLayoutChoice(click.Choice):
    """The layouts the installed families import from, read when the option is parsed."""

    def __init__(self) -> None:
        super().__init__([])

    def convert(self, value, param, ctx):
        self.choices = _all_layouts()
        return super().convert(value, param, ctx)


@click.command("import-recordings")
@click.argument("benchmark")
@click.argument("src", metavar="DIR", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--model", "model", required=True, callback=name_option("model name"),
              help="The name results are filed under (a name, not a path; no model spec is read).")
@click.option("--layout", type=_ImportLayoutChoice(), default=None, metavar="LAYOUT",
              help="A layout the benchmark's family imports (each family's are listed in docs/data.md, "
                   "\"Submission format\"); duplexeval: <item>.wav, channel 0 heard, channel 1 said. Default: "
                   "duplexeval where the family reads it, else the family's only layout.")
@click.option("--suite", default=None,
              help="Read the benchmark's data as this suite does (its overrides), e.g. embedded; default: the spec's own.")
@click.option("--run-id", callback=name_option("run id"),
              help="Name of the run folder to create (a name, not a path; default: import-<benchmark>-<UTC time>).")
@click.option("--runs-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("runs"), show_default=True)
@click.option("--cache-mode", default="readwrite", show_default=True,
              type=click.Choice(CACHE_MODES), help="Judge cache mode.")
def import_recordings(benchmark: str, src: Path, model: str, layout: str | None, suite: str | None, run_id: str | None,
                      runs_dir: Path, cache_mode: str) -> None:
    """Score recordings made elsewhere, after checking each against the benchmark's stimulus.

    The benchmark's family reads its layout (docs/data.md, "Submission format"): every
    file must be finite audio at a plausible rate, long enough for what is scored, and
    where the layout carries the heard channel it must match the stimulus
    (cross-correlation >= 0.9 within 20 ms); a file that does not fit is refused by name. The run folder is marked as recorded elsewhere;
    verify, report, compare and sensitivity read it like any run. Exit 4: some files were
    refused (listed) and the rest imported and scored.
    """
    from duplexeval.benchmarks import ImportRequest

    bench, bench_sha = _bench(benchmark, suite)
    layout, importer = _importer(benchmark, bench, layout)
    run_id = run_id or f"import-{benchmark}-{datetime.now(timezone.utc):%Y%m%d-%H%M%S}"
    request = ImportRequest(layout=layout, model=model, runs_dir=runs_dir, run_id=run_id, suite=suite,
                            bench_sha256=bench_sha, cache_mode=cache_mode, log=lambda s: click.echo(s, err=True))
    try:
        done = importer.run(bench, src, request)
    except (ValueError, FileNotFoundError) + tuple(importer.errors) as exc:  # each names its file
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    for name, m in done.results.get("metrics", {}).items():
        if isinstance(m, dict) and "denominator" in m:
            value = "n/r" if m.get("value") is None else f"{m['value']:.3f}"
            click.echo(f"{model}/{benchmark}: {name} {value} ({m.get('numerator')}/{m.get('denominator')})")
    click.echo(f"results: {done.bench_dir.parent.parent}")
    if done.skipped:
        for name, why in sorted(done.skipped.items()):
            click.echo(f"skipped {name}: {why}", err=True)
        click.echo(f"partial import: {len(done.skipped)} file(s) refused, the rest imported and scored", err=True)
        sys.exit(EXIT_PARTIAL)


def _layouts() -> dict:
    from duplexeval.benchmarks import recording_exporters

    return recording_exporters()


class _LayoutChoice(click.Choice):
    """The layouts the installed families export to, read when the option is parsed (plug-ins load lazily)."""

    def __init__(self) -> None:
        super().__init__([])

    def convert(self, value, param, ctx):
        self.choices = sorted(_layouts())
        return super().convert(value, param, ctx)


@click.command("export-recordings")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--layout", type=_LayoutChoice(), required=True, metavar="LAYOUT",
              help="Another project's layout, from the installed families' exporters (docs/data.md).")
@click.argument("out", type=click.Path(file_okay=True, path_type=Path))
def export_recordings(run_dir: Path, layout: str, out: Path) -> None:
    """Write RUN_DIR's recordings into OUT/<model>/<benchmark>/ in another project's layout.

    Only folders of the family that owns the layout are written; other folders are listed
    as skipped. Unfinished or damaged items are not exported (listed in
    duplexeval-export.json). OUT/<model>/<benchmark> must not exist yet.
    """
    from duplexeval.benchmarks import SkipFolder
    from duplexeval.runfolder.bench_folders import bench_dirs, bench_spec_for

    family, exporter = _layouts()[layout]
    folders = bench_dirs(run_dir)
    if not folders:
        raise CommandError(f"{run_dir}: no <model>/<benchmark>/items folders to export")
    exported = 0
    for folder in folders:
        spec = bench_spec_for(folder)
        rel = f"{folder.parent.name}/{folder.name}"
        if spec.get("benchmark") != family:
            click.echo(f"{rel}: skipped (the {layout} layout is {family}'s)", err=True)
            continue
        try:
            names, skipped = exporter.export(folder, out / folder.parent.name / folder.name, spec)
        except SkipFolder as exc:
            click.echo(f"{rel}: skipped ({exc})", err=True)
            continue
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        exported += len(names)
        click.echo(f"{rel}: {len(names)} recordings" + (f", {len(skipped)} not exported (unfinished or damaged)"
                                                        if skipped else ""))
    if not exported:
        raise CommandError(f"{run_dir}: nothing to export in the {layout} layout")
    click.echo(f"exported {exported} recordings -> {out}")


COMMANDS = [import_recordings, export_recordings]
