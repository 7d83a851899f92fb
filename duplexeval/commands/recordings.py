"""`duplexeval import-recordings` and `export-recordings`: recordings across the benchmarks' own conventions.

`import-recordings BENCH DIR --model NAME` scores stereo WAVs made by another pipeline (the
MTR authors' layout, or ours: docs/data.md "Submission format") after checking each one
against the benchmark's stimulus; `export-recordings RUN --layout mtr-authors OUT` writes a
run's recordings so that the MTR authors' `Eval/` scripts read them unchanged. The
family-specific part lives with the family (`duplexeval.benchmarks.mtr.recordings`).
"""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path

import click

from duplexeval.cli_errors import CommandError
from duplexeval.cli_params import name_option
from duplexeval.judges.cache import MODES as CACHE_MODES

MPE_REFUSAL = ("Duplex-MPE recordings cannot be imported: its stimulus depends on the model (playback waits for "
               "2 s of Aria's silence, N4R follows N4Q after exactly 3 s), so the heard channel of a recording made "
               "elsewhere has no fixed stimulus to be checked against; run the model through duplexeval instead")


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


@click.command("import-recordings")
@click.argument("benchmark")
@click.argument("src", metavar="DIR", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--model", "model", required=True, callback=name_option("model name"),
              help="The name results are filed under (a name, not a path; no model spec is read).")
@click.option("--layout", type=click.Choice(["mtr-authors", "duplexeval"]), default="duplexeval", show_default=True,
              help="mtr-authors: their file names, left = user, right = model; duplexeval: <item>.wav, "
                   "channel 0 heard, channel 1 said (docs/data.md).")
@click.option("--suite", default=None,
              help="Read the benchmark's data as this suite does (its overrides), e.g. embedded; default: the spec's own.")
@click.option("--run-id", callback=name_option("run id"),
              help="Name of the run folder to create (a name, not a path; default: import-<benchmark>-<UTC time>).")
@click.option("--runs-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("runs"), show_default=True)
@click.option("--cache-mode", default="readwrite", show_default=True,
              type=click.Choice(CACHE_MODES), help="Judge cache mode.")
def import_recordings(benchmark: str, src: Path, model: str, layout: str, suite: str | None, run_id: str | None,
                      runs_dir: Path, cache_mode: str) -> None:
    """Score stereo WAVs recorded elsewhere, after checking each against the benchmark's stimulus.

    Every file's user channel must match its round's stimulus (cross-correlation >= 0.9,
    peak within 20 ms of zero lag) and cover the round's response window; a swapped,
    shifted, truncated or wrong-dialogue file is refused by name and nothing is written.
    The run folder is marked as recorded elsewhere; verify, report, compare and
    sensitivity read it like any run.
    """
    from duplexeval.benchmarks.mtr.authors_layout import LayoutError
    from duplexeval.benchmarks.mtr.datasets import DatasetUnavailable
    from duplexeval.recordings.run_folder import ImportRefused

    bench, bench_sha = _bench(benchmark, suite)
    if bench.get("benchmark") == "duplex-mpe":
        raise CommandError(f"{benchmark}: {MPE_REFUSAL}")
    if bench.get("benchmark") != "mtr-duplexbench":
        raise CommandError(f"{benchmark}: family {bench.get('benchmark')!r} has no recording importer")
    from duplexeval.benchmarks.mtr.recordings import import_recordings as run_import

    run_id = run_id or f"import-{benchmark}-{datetime.now(timezone.utc):%Y%m%d-%H%M%S}"
    try:
        bench_dir, results = run_import(bench, src, layout=layout, model=model, runs_dir=runs_dir, run_id=run_id,
                                        suite=suite, bench_sha256=bench_sha, cache_mode=cache_mode,
                                        log=lambda s: click.echo(s, err=True))
    except (ImportRefused, LayoutError, DatasetUnavailable, FileNotFoundError) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    for name, m in results.get("metrics", {}).items():
        if isinstance(m, dict) and "denominator" in m:
            value = "n/r" if m.get("value") is None else f"{m['value']:.3f}"
            click.echo(f"{model}/{benchmark}: {name} {value} ({m.get('numerator')}/{m.get('denominator')})")
    click.echo(f"results: {bench_dir.parent.parent}")


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
              help="Another project's layout, from the families' exporters: mtr-authors (the MTR-DuplexBench "
                   "authors' file names, left = user, right = model, round_start.json), and any a plug-in adds.")
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
