"""`duplexeval weights fetch|verify|path MODEL`: a model's pinned weights, hashed.

`fetch` is the only command that talks to a hub; the docker backend mounts the folder
that `path` prints (read-only, at /weights) and the shim never reaches a hub at run time.
Errors are the 1-3 line messages of `duplexeval.weights` (what is missing, from which repo
and revision, where to place it by hand), never a traceback: exit 2 when weights are
missing or cannot be fetched, 1 when a file changed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from duplexeval import weights as w

_cache_option = click.option(
    "--cache", "root", type=click.Path(file_okay=False, path_type=Path), default=None,
    help="Weights cache root (default: $DUPLEXEVAL_WEIGHTS_CACHE or ~/.cache/duplexeval/weights).")


def _load(model_id: str) -> Any:
    """The spec of MODEL (a model, or a local ASR/TTS judge model), or exit 2 with the spec error."""
    from duplexeval.specs import SpecErrors, UnknownSpecError
    from duplexeval.specs.registry import load_weights_spec

    try:
        return load_weights_spec(model_id)
    except (SpecErrors, UnknownSpecError) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)


def _fail(exc: w.WeightsError) -> None:
    click.echo(f"error: {exc}", err=True)
    sys.exit(exc.exit_code)


@click.group("weights")
def weights_group() -> None:
    """Fetch, verify and locate the pinned weights of a model spec."""


@weights_group.command("fetch")
@click.argument("model_id")
@_cache_option
def fetch_command(model_id: str, root: Path | None) -> None:
    """Download MODEL's pinned files (resumable), hash them, write the manifest.

    Files already in the folder (e.g. placed by hand) are hashed, not downloaded.
    The token, for a gated repo, is read from HF_TOKEN only.
    """
    spec = _load(model_id)
    try:
        folder = w.fetch(spec, root, log=lambda s: click.echo(s, err=True))
    except w.WeightsError as exc:
        _fail(exc)
    click.echo(f"verified {model_id} weights in {folder}")


@weights_group.command("verify")
@click.argument("model_id")
@_cache_option
def verify_command(model_id: str, root: Path | None) -> None:
    """Re-hash every file of MODEL's weights folder; name each missing or changed file."""
    spec = _load(model_id)
    try:
        pin, folder, problems = w.verify(spec, root, rehash=True)
    except w.WeightsError as exc:
        _fail(exc)
    for problem in problems:
        click.echo(f"BAD {folder}/{problem}")
    click.echo(f"verified {len(pin.files)} files of {model_id} ({pin.repo}@{pin.revision}) in {folder}: "
               f"{len(problems)} problem(s)")
    if problems:
        sys.exit(w.verification_error(pin, folder, problems).exit_code)


@weights_group.command("path")
@click.argument("model_id")
@_cache_option
@click.option("--quick", is_flag=True, help="Trust files whose size and mtime match the manifest (no re-hash).")
def path_command(model_id: str, root: Path | None, quick: bool) -> None:
    """Print MODEL's verified weights folder (nothing for models without hub weights)."""
    spec = _load(model_id)
    try:
        folder = w.verified_weights_dir(spec, root, rehash=not quick)
    except w.WeightsError as exc:
        _fail(exc)
    if folder is None:
        click.echo(f"model {model_id} has no hub weights (weights.source "
                   f"{spec.data.get('weights', {}).get('source')!r})", err=True)
        return
    click.echo(str(folder))


COMMANDS = [weights_group]
