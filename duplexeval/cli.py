"""The `duplexeval` command line.

Each area of the package keeps its commands in its own module under
`duplexeval/commands/` and exports them as `COMMANDS`, and each benchmark family
contributes its own (`Benchmark.commands()`); this file only collects them, so adding a
command never means editing a shared file. It is also the one error
boundary (`duplexeval.cli_errors`): no user error ends in a traceback.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import click

from duplexeval import __version__
from duplexeval.cli_errors import (
    BUG_EXIT,
    CommandError,
    bug_message,
    is_expected,
    undecodable,
    user_message,
    write_traceback,
)
from duplexeval.resources import CACHE_ENV


class InternalError(click.ClickException):
    """An exception duplexeval did not expect: a bug, said as such (the traceback is in a file)."""

    exit_code = BUG_EXIT

    def show(self, file=None) -> None:
        click.echo(self.message, err=True)


class BoundaryGroup(click.Group):
    """Turns every exception a command lets through into a short message (unless --debug)."""

    def invoke(self, ctx: click.Context):
        args = [*getattr(ctx, "_protected_args", []), *ctx.args]  # before the subcommand consumes them
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as exc:
            if ctx.params.get("debug"):
                raise
            if isinstance(exc, UnicodeDecodeError):
                raise CommandError(undecodable(exc, args)) from None
            if is_expected(exc):
                raise CommandError(user_message(exc)) from None
            raise InternalError(bug_message(exc, write_traceback(exc, sys.argv[1:]))) from None


@click.group(cls=BoundaryGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="duplexeval")
@click.option("--debug", is_flag=True, envvar="DUPLEXEVAL_DEBUG",
              help="Show Python tracebacks instead of one-line errors (also DUPLEXEVAL_DEBUG=1).")
def cli(debug: bool) -> None:
    """Benchmark full-duplex speech language models on every installed benchmark family."""
    check_environment()


FOLDER_VARIABLES = (CACHE_ENV,)


def check_environment() -> None:
    """Folder variables that point at a file (or nothing) would scatter caches or fail deep inside a run."""
    import os

    for name in FOLDER_VARIABLES:
        value = os.environ.get(name)
        if value is None:
            continue
        if not value.strip():
            raise click.UsageError(f"{name} is set but empty: unset it (default ./.cache) or name a folder")
        if os.path.exists(value) and not os.path.isdir(value):
            raise click.UsageError(f"{name}={value} is not a folder: unset it (default ./.cache) or name a folder")


def _register_commands() -> None:
    """The shared commands (duplexeval/commands/), then those each benchmark family contributes."""
    import duplexeval.commands as pkg
    from duplexeval.benchmarks import plugins

    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{pkg.__name__}.{info.name}")
        for command in getattr(module, "COMMANDS", []):
            cli.add_command(command)
    for plugin in plugins().values():
        for command in plugin.commands():
            cli.add_command(command)


_register_commands()


def main() -> None:
    cli(prog_name="duplexeval")


if __name__ == "__main__":
    main()
