"""A registry of named backends, each a `module:Class` string imported only when chosen.

Why: the ASR, TTS and judge backends each pull in a heavy optional library (torch,
transformers, an SDK); naming them as strings keeps `import duplexeval` cheap, lets a
backend whose extra is not installed fail only when someone selects it, and keeps the
package that lists them from importing the modules that import it back (no circle through
an `__init__`). A third party adds a backend by adding one line, not a loader function.
"""

from __future__ import annotations

import difflib
import importlib
from typing import Any, Generic, Iterator, Mapping, TypeVar

T = TypeVar("T")


class BackendLoadError(ImportError):
    """A registered `module:Class` that does not import or has no such attribute: a packaging bug, named."""


class LazyRegistry(Mapping[str, Any], Generic[T]):
    """name -> the class (or factory) `module:Class` names, imported on first lookup.

    A Mapping, so `registry[name]()` builds one and `sorted(registry)` lists the names without
    importing anything; `create(name, ...)` does both and names the choices on an unknown name."""

    def __init__(self, kind: str, targets: Mapping[str, str]) -> None:
        for name, target in targets.items():
            if target.count(":") != 1 or not all(target.split(":")):
                raise ValueError(f"{kind} {name!r}: {target!r} is not 'module:Class'")
        self.kind = kind
        self.targets = dict(targets)
        self._loaded: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self.targets:
            raise KeyError(name)
        if name not in self._loaded:
            module, attr = self.targets[name].split(":")
            try:
                target: Any = importlib.import_module(module)
                for part in attr.split("."):   # `module:Class.factory` names a classmethod
                    target = getattr(target, part)
                self._loaded[name] = target
            except AttributeError as exc:
                raise BackendLoadError(f"{self.kind} {name!r}: {self.targets[name]} has no {attr!r}") from exc
        return self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.targets)

    def __len__(self) -> int:
        return len(self.targets)

    def unknown(self, name: object) -> ValueError:
        """The error for a name nobody registered: the choices, and the nearest one."""
        hint = difflib.get_close_matches(str(name), list(self.targets), n=1)
        return ValueError(f"unknown {self.kind} {name!r}; choose one of {', '.join(sorted(self.targets))}"
                          + (f" (did you mean {hint[0]!r}?)" if hint else ""))

    def create(self, name: str, *args: Any, **kwargs: Any) -> T:
        """An instance of the backend `name`; a ValueError naming the choices when there is none."""
        if name not in self.targets:
            raise self.unknown(name)
        return self[name](*args, **kwargs)
