"""`duplexeval validate` and `duplexeval ls`: the spec tree as a user sees it."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from duplexeval.specs import KINDS, Registry, SpecErrors, spec_roots

PLURAL = {"models": "model", "benchmarks": "benchmark", "judges": "judge", "suites": "suite"}


@click.command("validate")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Spec tree to check references against (default: the bundle's specs/ and $DUPLEXEVAL_SPECS).")
def validate(paths: tuple[Path, ...], root: Path | None) -> None:
    """Validate specs against their JSON Schemas and cross-references.

    With no PATH, every spec under specs/ is checked. A PATH may be a spec file or a
    folder; files outside the tree are checked against the tree's specs. Exits 1 on any
    invalid spec, printing `file:LINE: field: message` for each problem.
    """
    try:
        roots = (root.resolve(),) if root else spec_roots()
    except SpecErrors as exc:
        click.echo(str(exc), err=True)
        sys.exit(1)
    extra: list[Path] = []
    for path in paths:
        resolved = path.resolve()
        if resolved.is_dir():
            if any(resolved == r or r in resolved.parents for r in roots):
                continue  # part of a tree: loaded anyway
            extra += sorted(p for p in resolved.rglob("*.yaml") if not p.name.startswith("_"))
        elif not any(r in resolved.parents for r in roots):
            extra.append(resolved)
    try:
        registry = Registry.load(root, extra_files=extra)
    except SpecErrors as exc:
        for error in exc.errors:
            click.echo(str(error), err=True)
        click.echo(f"{len(exc.errors)} error(s)", err=True)
        sys.exit(1)
    for warning in registry.warnings:
        click.echo(f"warning: {warning}", err=True)
    counts = ", ".join(f"{len(registry.specs[k])} {k}s" for k in KINDS)
    click.echo(f"ok: {counts}")
    # Where the local ASR/TTS models' weights stand here (never an error: a machine without
    # them still validates; the run that needs them says what to fetch).
    from duplexeval.judges.local_models import LOCAL_TASKS, weights_status

    for spec in registry.all("judge"):
        if spec.data.get("task") in LOCAL_TASKS:
            status = weights_status(spec.data)
            hint = {"not fetched": f": duplexeval weights fetch {spec.id}",
                    "not placed": f": place its files by hand (docs/judges.md; spec {spec.id})"}.get(status, "")
            click.echo(f"weights {status:<11} {spec.id} ({spec.data['task']}, "
                       f"{spec.data['provider']} {spec.data['model']}){hint}")


@click.command("ls")
@click.argument("what", type=click.Choice(sorted(PLURAL)))
def ls(what: str) -> None:
    """List the models, benchmarks, judges or suites with their status."""
    try:
        registry = Registry.load()
    except SpecErrors as exc:
        click.echo(str(exc), err=True)
        sys.exit(1)
    import pandas as pd  # here, not at start-up: every other command would pay its import (~0.5 s)

    rows = [_row(spec.kind, spec.id, spec.data) for spec in registry.all(PLURAL[what])]
    table = pd.DataFrame(rows)
    click.echo(table.to_string(index=False) if not table.empty else f"no {what}")


def _row(kind: str, spec_id: str, d: dict) -> dict:
    if kind == "model":
        audio = d["audio"]
        return {"id": spec_id, "name": d["name"], "status": d["status"], "duplex": d["duplex"],
                "backend": d["launch"]["backend"], "rate in/out": f"{audio['in_rate']}/{audio['out_rate']}",
                "frame ms": audio["frame_ms"], "clocks": ",".join(d["clocks"]),
                "capabilities": ",".join(d["capabilities"]) or "-"}
    if kind == "benchmark":
        return {"id": spec_id, "benchmark": d["benchmark"], "dimension": d["dimension"],
                "status": d.get("status", "runnable"), "data": d["data"]["source"], "title": d["title"]}
    if kind == "judge":
        from duplexeval.judges.local_models import weights_status

        return {"id": spec_id, "task": d["task"], "provider": d["provider"],
                "model": d.get("model", "-"), "weights": weights_status(d), "label": d["label"]}
    runs = sum(len(r["models"]) * len(r["benchmarks"]) for r in d["runs"])
    return {"id": spec_id, "runs": runs, "clock": d["clock"], "cache": d["cache_mode"], "description": d["description"]}


COMMANDS = [validate, ls]
