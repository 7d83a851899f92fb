"""`duplexeval image build MODEL`: build a model's image exactly as the docker backend does."""

from __future__ import annotations

import sys
import tempfile

import click


@click.group("image")
def image() -> None:
    """Model images (images/<id>/ + the protocol package), built through the Docker SDK."""


@image.command("build")
@click.argument("model_id")
def build(model_id: str) -> None:
    """Build MODEL's image from its spec's launch.build folder (needs a Docker engine)."""
    from duplexeval.runner import load_model_spec
    from duplexeval.runner.backends.docker import build_kwargs, stage_build_context

    spec = load_model_spec(model_id)
    if not spec.image:
        click.echo(f"error: model {model_id} has no image (launch.backend is {spec.backend!r})", err=True)
        sys.exit(2)
    try:
        import docker

        client = docker.from_env()
        client.ping()
    except Exception as exc:  # no engine on this machine: say so, do not trace back
        click.echo(f"error: no Docker engine reachable ({type(exc).__name__}: {exc})", err=True)
        sys.exit(2)
    with tempfile.TemporaryDirectory(prefix="dxe-build-") as ctx:
        try:
            kwargs = build_kwargs(spec, stage_build_context(spec, ctx))
        except FileNotFoundError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
        click.echo(f"building {spec.image} from {spec.build}")
        client.images.build(**kwargs)
    click.echo(f"built {spec.image}")


COMMANDS = [image]
