"""Spec errors that always name the file, the line and the field.

lm-evaluation-harness skipped malformed YAML silently and users saw "task not found";
here every problem becomes one of these and is printed as `file:LINE: field: message`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


def format_field(path: tuple) -> str:
    """('runs', 0, 'models') -> 'runs[0].models'; the root is '<root>'."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "<root>"


def display_path(path: Path | str) -> str:
    """Relative to the working directory when under it: what a user can click on."""
    path = Path(path)
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


# Not frozen: a frozen dataclass exception cannot take a __traceback__, so re-raising one
# crashed with FrozenInstanceError (found by tests/test_fuzz_parsers.py on an empty scene file).
@dataclass(unsafe_hash=True)
class SpecError(Exception):
    file: Path
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"{display_path(self.file)}:{self.line}: {self.field}: {self.message}"


class SpecErrors(Exception):
    """Every error found in one load, so a user fixes them all in one pass."""

    def __init__(self, errors: list[SpecError]):
        # A base file's error reaches every spec that includes it: report it once.
        self.errors = sorted(set(errors), key=lambda e: (str(e.file), e.line, e.field, e.message))
        super().__init__("\n".join(str(e) for e in self.errors))


class UnknownSpecError(LookupError):
    def __init__(self, kind: str, spec_id: str, known: list[str]):
        import difflib

        self.kind, self.spec_id = kind, spec_id
        close = difflib.get_close_matches(spec_id, known, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        listing = f" (known: {', '.join(sorted(known))})" if known and not close else ""
        super().__init__(f"no {kind} spec named {spec_id!r}{hint}{listing}")
