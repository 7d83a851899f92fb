"""Runner commands: `conformance`, `session`, `cleanup` (docs/runner.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from duplexeval.cli_errors import CommandError
from duplexeval.commands.bounds import HARNESS_RATES, finite, run_id_name

INPUT_RATES = (1000, 384000)  # Hz a real recording can have


def model_spec_or_exit(model_id: str, backend: str | None = None, endpoint: str | None = None):
    """The model spec with the run's backend applied, or a one-line error naming the file/field."""
    from duplexeval.commands.bounds import check_backend
    from duplexeval.specs import SpecErrors, UnknownSpecError
    from duplexeval.specs.modelspec import load_model_spec

    check_backend(backend, endpoint)
    try:
        return load_model_spec(model_id).with_backend(backend, endpoint)
    except (UnknownSpecError, SpecErrors, ValueError) as exc:
        raise CommandError(str(exc)) from None


def backend_options(fn):
    """`--backend` and `--endpoint`: where the model runs, chosen per run without editing its spec."""
    fn = click.option("--endpoint", metavar="unix:PATH",
                      help="Drive a server that is already running (e.g. a docker-compose service); starts nothing. "
                           "A realtime-api model: the API's ws://HOST:PORT/v1 (its bridge is started).")(fn)
    return click.option("--backend", type=click.Choice(["local", "docker"]),
                        help="Run the model as a local process or in its container (default: the spec's launch.backend).")(fn)


@click.command()
@click.argument("model_id", required=False)
@click.option("--model", "model_opt", help="Model id (same as the argument).")
@click.option("--long-s", type=finite(0.5, 3600.0), default=30.0, show_default=True,
              help="Length of the long lockstep session (late faults; a real item runs this long).")
@click.option("--realtime-s", type=finite(0.5, 3600.0), default=3.0, show_default=True,
              help="Length of the wall-clock session (it takes this long).")
@backend_options
def conformance(model_id: str | None, model_opt: str | None, long_s: float, realtime_s: float, backend: str | None,
                endpoint: str | None) -> None:
    """Run the protocol v1 checks against MODEL_ID (started from specs/models/MODEL_ID.yaml)."""
    from duplexeval.runner.conformance import run_conformance

    mid = model_id or model_opt
    if not mid:
        raise click.UsageError("give a model id: duplexeval conformance MODEL_ID")
    spec = model_spec_or_exit(mid, backend, endpoint)

    def report(r) -> None:
        click.echo(f"{r.status.upper():4} {r.name}: {r.detail}")

    click.echo(f"conformance of {spec.id} (protocol v1, {spec.backend} backend)")
    results = run_conformance(spec, report, long_lockstep_s=long_s, realtime_s=realtime_s)
    failed = [r.name for r in results if r.status == "fail"]
    click.echo(f"{spec.id}: {'FAILED: ' + ', '.join(failed) if failed else 'all checks passed'}")
    sys.exit(1 if failed else 0)


@click.command()
@click.argument("model_id")
@click.argument("wav", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Session folder to write (recording.wav, events.jsonl, status.json).")
@click.option("--clock", type=click.Choice(["lockstep", "realtime"]), default="lockstep", show_default=True)
@click.option("--rate", type=click.IntRange(*HARNESS_RATES), default=16000, show_default=True,
              help="Harness (recording) rate in Hz.")
@click.option("--tail-s", type=finite(0.0, 600.0), default=2.0, show_default=True,
              help="Silence played after the file, in seconds (0-600).")
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True)
@backend_options
def session(model_id: str, wav: Path, out_dir: Path, clock: str, rate: int, tail_s: float, seed: int,
            backend: str | None, endpoint: str | None) -> None:
    """Play WAV (mono) to MODEL_ID once and write a session folder: for debugging a model."""
    from duplexeval.runner import FileStimulus, run_item

    check_input_wav(wav)
    spec = model_spec_or_exit(model_id, backend, endpoint)
    frame_s = float(spec.audio.get("frame_ms", 80)) / 1000.0
    stim = FileStimulus(wav, tail_frames=int(round(tail_s / frame_s)))
    result = run_item(spec, stim, out_dir, clock, rate=rate, seed=seed)
    click.echo(f"{result.status}: {out_dir}" + (f" ({result.reason})" if result.reason else ""))
    sys.exit(0 if result.status == "ok" else 1)


def check_input_wav(wav: Path) -> None:
    """The file's header, before a model starts: a rate no recording has (2^31-1 Hz) would
    resample the whole input to nothing and the session would read as ok with no input."""
    import soundfile as sf

    try:
        info = sf.info(str(wav))
    except (RuntimeError, sf.LibsndfileError) as exc:
        raise CommandError(f"{wav}: not a readable audio file ({str(exc).splitlines()[-1].strip()}); "
                           "give a WAV, FLAC or OGG file") from None
    low, high = INPUT_RATES
    if not low <= info.samplerate <= high:
        raise CommandError(f"{wav}: its header claims {info.samplerate} Hz, outside {low}-{high} Hz: a damaged or "
                           "forged header (resample it, e.g. `sox in.wav -r 16000 out.wav`)")
    if info.frames <= 0:
        raise CommandError(f"{wav}: no audio samples")


@click.command()
@click.option("--run-id", callback=run_id_name, help="Only the containers of this run (default: every duplexeval container).")
def cleanup(run_id: str | None) -> None:
    """Remove what killed runs left: labelled model containers and stale /tmp/dxe-* socket folders."""
    from duplexeval.containers import EngineUnavailable, docker_client
    from duplexeval.containers.cleanup import remove_managed_containers
    from duplexeval.runner.backends.socket_dirs import remove_stale_socket_dirs

    for path in remove_stale_socket_dirs():
        click.echo(f"removed socket folder {path}")
    try:
        client = docker_client()
    except EngineUnavailable as exc:
        click.echo(f"{exc}: no containers to clean up")
        return
    removed = remove_managed_containers(client, run_id)
    click.echo("\n".join(f"removed container {name}" for name in removed) if removed
               else "no leftover containers: nothing to clean up")


COMMANDS = [conformance, session, cleanup]
