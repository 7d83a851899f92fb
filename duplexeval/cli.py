"""The `duplexeval` command line.

Each area of the package keeps its commands in its own module under
`duplexeval/commands/` and exports them as `COMMANDS`; this file only collects them,
so adding a command never means editing a shared file.
"""

from __future__ import annotations

import importlib
import pkgutil

import click

from duplexeval import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="duplexeval")
def cli() -> None:
    """Benchmark full-duplex speech language models on Duplex-MPE and MTR-DuplexBench."""


def _register_commands() -> None:
    import duplexeval.commands as pkg

    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{pkg.__name__}.{info.name}")
        for command in getattr(module, "COMMANDS", []):
            cli.add_command(command)


_register_commands()


def main() -> None:
    cli(prog_name="duplexeval")


if __name__ == "__main__":
    main()
