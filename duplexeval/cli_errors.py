"""The CLI's error boundary: what a user sees when a command fails.

Expected errors (bad paths, unreadable or wrong-format audio, corrupt run files,
unreachable engines or endpoints, missing weights, spec errors) are the user's to fix:
one or two lines naming the file, line or field, exit status 2, no traceback. Anything
else is a bug in duplexeval: one line saying so and where the traceback was written
(exit status 3). `duplexeval --debug` (or DUPLEXEVAL_DEBUG=1) lets every exception
through with its traceback. docs/reliability.md lists the cases.
"""

from __future__ import annotations

import errno
import os
import tempfile
import time
import traceback
from pathlib import Path

import click

from duplexeval.secrets import redact  # noqa: F401  (re-exported: the CLI redacts every message)

EXPECTED_EXIT = 2
BUG_EXIT = 3
MAX_LINES = 2
# By qualified name, so the boundary imports nothing heavy (docker, torch) to classify.
EXPECTED = frozenset({
    "duplexeval.specs.errors.SpecError", "duplexeval.specs.errors.SpecErrors",
    "duplexeval.specs.errors.UnknownSpecError",
    "duplexeval.runner.errors.ModelFault", "duplexeval.runner.errors.ModelStartError",
    "duplexeval.runner.errors.RunConfigMismatch", "duplexeval.benchmarks.registry.PluginError",
    "duplexeval.containers.engine.EngineUnavailable", "duplexeval.containers.build.ImageBuildError",
    "duplexeval.containers.base_image.BaseImageError", "duplexeval.containers.wheelhouse.WheelhouseError",
    "duplexeval.weights.WeightsError",
    "duplexeval.judges.cache.CacheMiss", "duplexeval.judges.retry.JudgeCallError",
    "duplexeval.judges.providers.MissingApiKeyError", "duplexeval.judges.local_models.MissingExtraError",
    "duplexeval.judges.local_models.MissingWeightsError",
    "duplexeval.judges.asr_backends.faster_whisper_backend.WeightsMismatchError",
    "duplexeval.upstream.UpstreamError",
    "duplexeval.agents.cascaded_baseline.ConfigError",
    "soundfile.LibsndfileError", "soundfile.SoundFileError", "yaml.error.YAMLError",
    "docker.errors.DockerException", "jsonschema.exceptions.ValidationError",
})


class ExpectedError(Exception):
    """Mark of an error that is the user's to fix (data not on this machine, a bad option).

    A benchmark family's own exceptions subclass it (a data set not fetched, say), so this
    boundary names no family: the core lists only its own exception classes above."""


# Builtins that mean bad input (OSError: paths, permissions, full disks, refused sockets).
# KeyError, IndexError, TypeError and AssertionError are bugs however they arise.
EXPECTED_BUILTINS = (OSError, ValueError, UnicodeError, EOFError)
BUG_BUILTINS = (KeyError, IndexError, TypeError, AttributeError, AssertionError, NameError)
OS_HINTS = {
    errno.ENOSPC: "the disk is full: free space and run again (finished items are kept)",
    errno.EROFS: "the folder is read-only: choose a writable --out/--runs-dir",
    errno.EACCES: "permission denied: choose a folder you can write, or fix its permissions",
    errno.ECONNREFUSED: "nothing listens there: start the server or check --endpoint",
}


def _names(exc: BaseException) -> set[str]:
    return {f"{c.__module__}.{c.__qualname__}" for c in type(exc).__mro__}


def is_expected(exc: BaseException) -> bool:
    if isinstance(exc, ExpectedError) or _names(exc) & EXPECTED:
        return True
    return isinstance(exc, EXPECTED_BUILTINS) and not isinstance(exc, BUG_BUILTINS)


def user_message(exc: BaseException) -> str:
    """The one or two lines an expected error prints."""
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        text = f"{exc.filename}: {exc.strerror}"
        hint = OS_HINTS.get(exc.errno or 0)
        text += f" ({hint})" if hint else ""
    else:
        text = str(exc) or type(exc).__name__
        if isinstance(exc, OSError) and exc.errno in OS_HINTS:
            text += f" ({OS_HINTS[exc.errno]})"
    lines = [line for line in redact(text).splitlines() if line.strip()] or [type(exc).__name__]
    if type(exc).__name__ == "SpecErrors":  # every spec error, each file:line: field: message
        return "\n".join(lines)
    if len(lines) > MAX_LINES:
        lines = lines[:MAX_LINES - 1] + [lines[MAX_LINES - 1] + f" (and {len(lines) - MAX_LINES} more lines)"]
    return "\n".join(lines)


def traceback_dir() -> Path:
    return Path(os.environ.get("DUPLEXEVAL_TRACEBACK_DIR") or Path(tempfile.gettempdir()) / "duplexeval-tracebacks")


def write_traceback(exc: BaseException, argv: list[str]) -> Path | None:
    """The traceback of a bug, to a file the report can attach; None when even that fails."""
    folder = traceback_dir()
    path = folder / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.txt"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        text = "duplexeval " + " ".join(argv) + "\n\n" + "".join(traceback.format_exception(exc))
        path.write_text(redact(text), encoding="utf-8")
    except OSError:
        return None
    return path


def bug_message(exc: BaseException, path: Path | None) -> str:
    where = f"the traceback is in {path}" if path else "the traceback could not be written (run with --debug)"
    first = (redact(str(exc)).splitlines() or [""])[0][:200]
    return (f"internal error: {type(exc).__name__}: {first}\n"
            f"this is a bug in duplexeval; {where} - please attach it to a report")


def yaml_problem(path: object, exc: Exception) -> str:
    """One line for a YAML syntax error in `path`: file:line: what is wrong."""
    mark = getattr(exc, "problem_mark", None)
    line = f":{mark.line + 1}" if mark is not None else ""
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return f"{path}{line}: invalid YAML: {problem}"


def undecodable(exc: UnicodeDecodeError, args: list[str]) -> str:
    """A text file that is not text (a WAV given where a dialogue file goes): Python's message
    names no file, so name the files among the command's arguments."""
    files = [a for a in args if not a.startswith("-") and os.path.isfile(a)]
    what = f"not UTF-8 text ({exc.reason} at byte {exc.start}): is it the right kind of file?"
    if len(files) == 1:
        return f"{files[0]}: {what}"
    return f"{' or '.join(files) if files else 'an input file'}: {what}"


class CommandError(click.ClickException):
    """An expected error (bad input, no engine, missing image): one line, exit status 2, no traceback.

    Here, below every command and benchmark family, so a family's commands raise it without
    importing `duplexeval.commands`."""

    exit_code = EXPECTED_EXIT
