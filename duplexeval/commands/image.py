"""`duplexeval image base|build|ls`: model images, built hermetically (docs/containers.md)."""

from __future__ import annotations

import click

from duplexeval.cli_errors import CommandError
from duplexeval.commands.runner import model_spec_or_exit


def _client():
    from duplexeval.containers import EngineUnavailable, docker_client

    try:
        return docker_client()
    except EngineUnavailable as exc:
        raise CommandError(str(exc)) from None


@click.group("image")
def image() -> None:
    """Model images: the local base, and each model's image from images/<id>/."""


@image.command("base")
@click.option("--mirror", help="Debian mirror for debootstrap (default: the one apt uses on this machine).")
@click.option("--force", is_flag=True, help="Rebuild even when an image of the same recipe exists.")
def base(mirror: str | None, force: bool) -> None:
    """Build the local base image (images/base/base.yaml) from debootstrap; no registry needed.

    Idempotent: skipped when the image exists with the same recipe.
    """
    from duplexeval.containers.base_image import BaseImageError, ensure_base_image

    client = _client()
    try:
        ensure_base_image(client, mirror=mirror, force=force, progress=click.echo)
    except BaseImageError as exc:
        raise CommandError(str(exc)) from None


@image.command("build")
@click.argument("model_id")
@click.option("--base", "base_image", help="FROM image (Dockerfile ARG BASE); default: the spec's launch.base_image.")
@click.option("--force", is_flag=True, help="Rebuild even when the image's context is unchanged.")
def build(model_id: str, base_image: str | None, force: bool) -> None:
    """Build MODEL's image from its spec's launch.build folder, with the build's network disabled."""
    from duplexeval.containers.build import ImageBuildError, build_image
    from duplexeval.containers.wheelhouse import WheelhouseError

    spec = model_spec_or_exit(model_id)
    if not spec.image:
        raise CommandError(f"model {model_id} has no launch.image in its spec: nothing to build")
    client = _client()
    try:
        built = build_image(client, spec, base=base_image, force=force, progress=click.echo)
    except (ImageBuildError, WheelhouseError) as exc:
        raise CommandError(str(exc)) from None
    click.echo(f"{built.tag} {built.id}")


@image.command("ls")
def ls() -> None:
    """The images of every model spec that names one, and whether this engine has them."""
    from duplexeval.containers.build import image_record
    from duplexeval.specs import Registry
    from duplexeval.specs.modelspec import model_spec_from

    client = _client()
    seen: set[str] = set()
    for spec in Registry.load().all("model"):
        ms = model_spec_from(spec)
        if not ms.image or ms.image in seen:
            continue
        seen.add(ms.image)
        rec = image_record(client, ms)
        state = f"{rec['id'][:19]} on {rec['base']}" if rec["present"] else "not built"
        click.echo(f"{ms.image:32} {state}   (duplexeval image build {ms.id})")


COMMANDS = [image]
