"""CLI command modules; each exports COMMANDS (a list of click commands)."""

# CommandError lives in duplexeval.cli_errors; this name stays for branches written before the move.
from duplexeval.cli_errors import CommandError  # noqa: F401
