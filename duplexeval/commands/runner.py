"""Runner commands: `conformance`, `session`, `cleanup` (docs/runner.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import click


def _spec(model_id: str):
    """The model spec, or a one-line error naming the file/field (no traceback for a typo)."""
    from duplexeval.runner.modelspec import load_model_spec
    from duplexeval.specs import SpecErrors, UnknownSpecError

    try:
        return load_model_spec(model_id)
    except (UnknownSpecError, SpecErrors, ValueError) as exc:
        raise click.ClickException(str(exc)) from None


@click.command()
@click.argument("model_id", required=False)
@click.option("--model", "model_opt", help="Model id (same as the argument).")
def conformance(model_id: str | None, model_opt: str | None) -> None:
    """Run the protocol v1 checks against MODEL_ID (started from specs/models/MODEL_ID.yaml)."""
    from duplexeval.runner.conformance import run_conformance

    mid = model_id or model_opt
    if not mid:
        raise click.UsageError("give a model id: duplexeval conformance MODEL_ID")
    spec = _spec(mid)

    def report(r) -> None:
        click.echo(f"{r.status.upper():4} {r.name}: {r.detail}")

    click.echo(f"conformance of {spec.id} (protocol v1)")
    results = run_conformance(spec, report)
    failed = [r.name for r in results if r.status == "fail"]
    click.echo(f"{spec.id}: {'FAILED: ' + ', '.join(failed) if failed else 'all checks passed'}")
    sys.exit(1 if failed else 0)


@click.command()
@click.argument("model_id")
@click.argument("wav", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Session folder to write (recording.wav, events.jsonl, status.json).")
@click.option("--clock", type=click.Choice(["lockstep", "realtime"]), default="lockstep", show_default=True)
@click.option("--rate", type=int, default=16000, show_default=True, help="Harness (recording) rate.")
@click.option("--tail-s", type=float, default=2.0, show_default=True, help="Silence played after the file.")
@click.option("--seed", type=int, default=0, show_default=True)
def session(model_id: str, wav: Path, out_dir: Path, clock: str, rate: int, tail_s: float, seed: int) -> None:
    """Play WAV (mono) to MODEL_ID once and write a session folder: for debugging a model."""
    from duplexeval.runner import FileStimulus, run_item

    spec = _spec(model_id)
    frame_s = float(spec.audio.get("frame_ms", 80)) / 1000.0
    stim = FileStimulus(wav, tail_frames=int(round(tail_s / frame_s)))
    result = run_item(spec, stim, out_dir, clock, rate=rate, seed=seed)
    click.echo(f"{result.status}: {out_dir}" + (f" ({result.reason})" if result.reason else ""))
    sys.exit(0 if result.status == "ok" else 1)


@click.command()
def cleanup() -> None:
    """Remove leftover model containers of killed runs (by the duplexeval.managed label)."""
    from duplexeval.runner.backends.docker import cleanup_leftovers

    try:
        removed = cleanup_leftovers()
    except Exception as exc:  # docker.errors.DockerException: no engine, no socket, no permission
        click.echo(f"no Docker engine reachable ({type(exc).__name__}): nothing to clean up")
        return
    click.echo("\n".join(f"removed {name}" for name in removed) if removed else "no leftover containers: nothing to clean up")


COMMANDS = [conformance, session, cleanup]
