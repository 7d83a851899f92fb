"""CLI command modules; each exports COMMANDS (a list of click commands)."""

import click


class CommandError(click.ClickException):
    """An expected error (bad input, no engine, missing image): one line, exit status 2, no traceback."""

    exit_code = 2
