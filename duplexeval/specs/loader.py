"""Load one spec file: resolve `include:`, validate against its kind's JSON Schema.

`include:` follows lm-evaluation-harness: a relative path to a base file (or a list of
them), merged so that the including file wins; lists are replaced, not concatenated;
cycles are an error. Every location survives the merge, so a schema error in a value
that came from a base file points at the base file's line.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema.exceptions import ValidationError, best_match

from duplexeval.io import sha256_json
from duplexeval.resources import bundle_root
from duplexeval.specs.errors import SpecError, SpecErrors, format_field
from duplexeval.specs.yaml_source import load_yaml

KINDS = ("model", "benchmark", "judge", "suite")
FOLDER_OF_KIND = {"model": "models", "benchmark": "benchmarks", "judge": "judges", "suite": "suites"}

# field path -> (file, line): where each value of a merged spec was written.
Origins = dict[tuple, tuple[Path, int]]


def repo_root() -> Path:
    """The bundle's folder (a checkout or an installed wheel's copy): see duplexeval.resources."""
    return bundle_root()


def schema_dir() -> Path:
    return repo_root() / "specs" / "schema"


@lru_cache(maxsize=None)
def schema_for(kind: str) -> dict[str, Any]:
    path = schema_dir() / f"{kind}.schema.json"
    schema = json.loads(path.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


# Fields only people read: they never change a recording or a score (resume ignores them).
DISPLAY_FIELDS = ("name", "title", "description", "notes", "homepage", "status_note")


def identity_sha256(data: dict[str, Any]) -> str:
    return sha256_json({k: v for k, v in data.items() if k not in DISPLAY_FIELDS})


@dataclass(frozen=True)
class Spec:
    kind: str
    id: str
    data: dict[str, Any]
    path: Path
    sources: tuple[Path, ...] = ()
    origins: Origins = field(default_factory=dict, compare=False, repr=False)

    @property
    def sha256(self) -> str:
        """Hash of the resolved content: what run manifests and records carry."""
        return sha256_json(self.data)

    @property
    def identity_sha256(self) -> str:
        """Hash of what can change a result: the content less its display fields.

        Renaming a model for the report (`name`, `description`) must not block a resume
        ("model_sha256 changed"); everything that reaches the model or the scoring does.
        """
        return identity_sha256(self.data)

    def where(self, *field_path: Any) -> tuple[Path, int]:
        """(file, line) where a field was written, falling back to its nearest parent."""
        at = tuple(field_path)
        while at not in self.origins and at:
            at = at[:-1]
        return self.origins.get(at, (self.path, 1))

    def error(self, field_path: tuple, message: str) -> SpecError:
        file, line = self.where(*field_path)
        return SpecError(file, line, format_field(field_path), message)


def resolve_includes(path: Path, _stack: tuple[Path, ...] = ()) -> tuple[dict[str, Any], Origins, tuple[Path, ...]]:
    """(merged data, origins, files read) for `path` with all includes applied."""
    path = path.resolve()
    data, lines = load_yaml(path)
    if not isinstance(data, dict):
        raise SpecError(path, 1, "<root>", f"a spec must be a mapping, not a {type(data).__name__}")
    origins: Origins = {k: (path, v) for k, v in lines.items()}
    includes = data.pop("include", None)
    if includes is None:
        return data, origins, (path,)
    include_line = lines.get(("include",), 1)
    if isinstance(includes, str):
        includes = [includes]
    if not isinstance(includes, list) or not all(isinstance(i, str) for i in includes):
        raise SpecError(path, include_line, "include", "must be a relative path or a list of them")
    merged: dict[str, Any] = {}
    merged_origins: Origins = {}
    files: tuple[Path, ...] = ()
    for rel in includes:
        if Path(rel).is_absolute():
            raise SpecError(path, include_line, "include", f"{rel!r}: include paths must be relative to the including file")
        target = (path.parent / rel).resolve()
        if target in _stack or target == path:
            chain = " -> ".join(p.name for p in (*_stack, path, target))
            raise SpecError(path, include_line, "include", f"include cycle: {chain}")
        if not target.is_file():
            raise SpecError(path, include_line, "include", f"{rel!r} not found (looked for {target})")
        base, base_origins, base_files = resolve_includes(target, (*_stack, path))
        merged = deep_merge(merged, base)
        merged_origins.update(base_origins)
        files += base_files
    merged = deep_merge(merged, data)
    merged_origins.update(origins)
    return merged, merged_origins, (path, *files)


def deep_merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """Mappings merge key by key; any other value in `top` replaces the base's."""
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def load_spec(path: Path, expected_kind: str | None = None) -> Spec:
    """Load, merge and validate one spec file; raises SpecErrors listing every problem."""
    try:
        data, origins, files = resolve_includes(Path(path))
    except SpecError as exc:
        raise SpecErrors([exc]) from None
    path = Path(path).resolve()

    def at(field_path: tuple, message: str) -> SpecError:
        file, line = origins.get(field_path, (path, 1))
        return SpecError(file, line, format_field(field_path), message)

    kind = data.get("kind")
    if kind not in KINDS:
        found = "missing" if kind is None else f"{kind!r}"
        raise SpecErrors([at(("kind",), f"{found}; must be one of {', '.join(KINDS)}")])
    if expected_kind and kind != expected_kind:
        raise SpecErrors([at(("kind",), f"{kind!r} spec in the {FOLDER_OF_KIND[expected_kind]}/ folder (expected {expected_kind!r})")])
    errors = [schema_error(e, data, origins, path) for e in schema_errors(kind, data)]
    errors += [at(field_path, f"{value} is not a finite number (.nan and .inf are refused everywhere)")
               for field_path, value in non_finite(data)]
    spec_id = data.get("id")
    if isinstance(spec_id, str) and spec_id != path.stem:
        errors.append(at(("id",), f"{spec_id!r} must equal the file name {path.stem!r}"))
    if errors:
        raise SpecErrors(errors)
    return Spec(kind=kind, id=str(spec_id), data=data, path=path, sources=files, origins=origins)


def non_finite(data: Any, at: tuple = ()) -> list[tuple[tuple, float]]:
    """(field path, value) of every NaN or infinity in a spec: JSON Schema's minimum/maximum
    compare false with NaN, so `max_wait_s: .nan` would pass every bound (issue 39)."""
    if isinstance(data, float) and not math.isfinite(data):
        return [(at, data)]
    if isinstance(data, dict):
        return [found for k, v in data.items() for found in non_finite(v, (*at, k))]
    if isinstance(data, list):
        return [found for i, v in enumerate(data) for found in non_finite(v, (*at, i))]
    return []


@lru_cache(maxsize=None)
def _validator(kind: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema_for(kind))


def schema_errors(kind: str, data: dict[str, Any]) -> list[ValidationError]:
    validator = _validator(kind)
    out = []
    for error in validator.iter_errors(data):
        # oneOf/anyOf wrap the useful error; report the most specific one.
        if error.context:
            error = best_match(error.context) or error
        out.append(error)
    return out


def describe_schema_error(error: ValidationError) -> tuple[tuple, str]:
    """(field path, message) of a jsonschema error, pointed at the key it is about: an unknown
    key gets did-you-mean, a missing required field is named. Shared by spec files and a
    suite's overrides (duplexeval.specs.overrides), so both read the same."""
    at = tuple(error.absolute_path)
    message = error.message
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        extra = sorted(k for k in error.instance if k not in allowed)
        if extra:
            at = at + (extra[0],)
            close = _close(extra[0], allowed)
            message = f"unknown key{close}" if len(extra) == 1 else f"unknown keys {extra}{close}"
    elif error.validator == "required" and isinstance(error.validator_value, list):
        missing = [r for r in error.validator_value if isinstance(error.instance, dict) and r not in error.instance]
        if missing:
            return at + (missing[0],), "required field is missing"
    return at, _without_long_value(message, error.instance)


def schema_error(error: ValidationError, data: Any, origins: Origins, path: Path) -> SpecError:
    """Point a jsonschema error at the key it is about, not only at its parent."""
    at, message = describe_schema_error(error)
    if message == "required field is missing":
        file, line = origins.get(at[:-1], (path, 1))
    else:
        file, line = origins.get(at, None) or _nearest(at, origins, path)
    return SpecError(file, line, format_field(at), message)


SHOWN_VALUE_CHARS = 60


def _without_long_value(message: str, instance: Any) -> str:
    """jsonschema quotes the whole offending value: a file that is not a spec at all (e.g.
    /etc/passwd given as a golden file) would be printed back whole. Long values are named
    by their type and size instead."""
    shown = repr(instance)
    if len(shown) <= SHOWN_VALUE_CHARS or shown not in message:
        return message
    return message.replace(shown, f"<a {type(instance).__name__} of {len(shown)} characters>")


def _nearest(at: tuple, origins: Origins, path: Path) -> tuple[Path, int]:
    while at and at not in origins:
        at = at[:-1]
    return origins.get(at, (path, 1))


def _close(key: str, allowed: set[str]) -> str:
    import difflib

    close = difflib.get_close_matches(key, sorted(allowed), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
