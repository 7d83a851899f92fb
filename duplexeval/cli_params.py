"""What every command accepts as a number, a name that becomes a folder, or a folder to replace.

Three classes of bad input (issue 39) are closed here once, for every command and
benchmark family, instead of option by option:

- `Finite`: a click parameter type for every float option. `nan` and `inf` parse as
  floats, and a NaN compares false with every bound, so a range check written as
  `value < low` lets it through (a NaN budget disabled the cost guard). Refused here,
  with the bounds, naming the option.
- `safe_name`: every id that becomes a path component (a run id, a model name results
  are filed under, a new model's folder) is a plain name: letters, digits, '.', '_', '-',
  no '..', at most 128 characters. `child_folder` joins it under its parent and checks
  the result is still inside (a symlinked parent aside), so a traversal is refused even
  where a caller forgot the option callback.
- `replace_guard`: no command deletes a folder that holds files it did not write
  unless the user says `--force`.

Below `commands` and the benchmark families (it imports only click), so both use it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import click

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
NAME_RULE = "letters, digits, '.', '_', '-'; at most 128; no '/' or '..'"


class Finite(click.ParamType):
    """A float that is finite and within [low, high] (low excluded with low_open)."""

    name = "number"

    def __init__(self, low: float | None = None, high: float | None = None, *, low_open: bool = False) -> None:
        self.low, self.high, self.low_open = low, high, low_open

    def bounds(self) -> str:
        lo = "" if self.low is None else (f"> {self.low:g}" if self.low_open else f">= {self.low:g}")
        hi = "" if self.high is None else f"<= {self.high:g}"
        return " and ".join(x for x in (lo, hi) if x)

    def within(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or value <= self.high

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float) and self.within(value):
            return value
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not self.within(number):
            self.fail(f"{value} is not a finite number {self.bounds()}".rstrip(), param, ctx)
        return number

    def __repr__(self) -> str:
        return f"Finite({self.bounds() or 'any'})"


def safe_name(value: str, what: str = "name") -> str:
    """`value` when it is a plain name (never a path); ValueError naming `what` otherwise."""
    if not isinstance(value, str) or not NAME.fullmatch(value) or ".." in value:
        raise ValueError(f"{what} {value!r} is not a name ({NAME_RULE}): it names a folder, never a path")
    return value


def name_option(what: str) -> Callable[[click.Context, click.Parameter, str | None], str | None]:
    """A click callback running `safe_name` on an option or argument (None passes)."""
    def check(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            return safe_name(value, what)
        except ValueError as exc:
            raise click.BadParameter(str(exc), ctx=ctx, param=param) from None
    return check


def child_folder(parent: Path, name: str, what: str = "name") -> Path:
    """parent/name, with `name` checked by `safe_name` and the result inside `parent`."""
    path = Path(parent) / safe_name(name, what)
    if path.parent.resolve() != Path(parent).resolve():
        raise ValueError(f"{what} {name!r}: {path} is not inside {parent}")
    return path


class FolderInUse(FileExistsError):
    """A folder the command would replace holds files it did not write (an expected error: exit 2)."""


def replace_guard(folder: Path, force: bool, ours: Callable[[Path], bool] | None = None,
                  *, option: str = "--force") -> bool:
    """May `folder` be replaced? True when it exists and will be (False: nothing there, or empty).

    Refused (FolderInUse) when it holds anything `ours(folder)` does not recognise as this
    command's own earlier output, unless `force`: a mistyped OUT must not cost a user a folder."""
    folder = Path(folder)
    if not folder.exists():
        return False
    if not folder.is_dir():
        raise FolderInUse(f"{folder}: is a file, not a folder; choose another path")
    if not any(folder.iterdir()):
        return False
    if force or (ours is not None and ours(folder)):
        return True
    first = _first(folder.iterdir(), 4)
    shown = ", ".join(sorted(p.name for p in first[:3])) + (", ..." if len(first) > 3 else "")
    raise FolderInUse(f"{folder}: not empty and not this command's earlier output (holds {shown}): "
                      f"choose an empty or new folder, or pass {option} to replace everything in it")


def _first(items: Iterable[Path], n: int) -> list[Path]:
    out = []
    for item in items:
        out.append(item)
        if len(out) == n:
            break
    return out
