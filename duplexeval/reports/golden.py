"""Golden files: published numbers (and the reference agents' expected results) as data.

A golden file is YAML validated against golden/golden.schema.json. It is loaded with the
spec loader's line-tracking YAML reader so that every error reads `file:LINE: field:
message` — a mistyped tolerance in a 90-cell file must be findable without bisecting.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema

from duplexeval.io import sha256_file
from duplexeval.specs.errors import SpecError, SpecErrors, format_field
from duplexeval.specs.loader import repo_root, schema_error
from duplexeval.specs.yaml_source import load_yaml


def golden_dir() -> Path:
    return repo_root() / "golden"


GOLDEN_SCHEMA_PATH = golden_dir() / "golden.schema.json"


@lru_cache(maxsize=None)
def golden_schema() -> dict[str, Any]:
    schema = json.loads(GOLDEN_SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


@dataclass(frozen=True)
class GoldenCell:
    """One published cell. Exactly one of value (+tolerance), bounds or text is set."""

    id: str
    paper: str
    table: str
    row: str
    column: str
    source: str
    kind: str = "metric"
    value: float | None = None
    tolerance: float | None = None
    bounds: dict[str, float] | None = None
    text: str | None = None
    unit: str | None = None
    decimals: int | None = None
    numerator: int | None = None
    numerator_range: tuple[int, int] | None = None
    denominator: int | None = None
    note: str | None = None
    run: dict[str, str] | None = None
    line: int = 0

    @property
    def comparable(self) -> bool:
        return self.text is None

    def expected_text(self) -> str:
        """How the cell reads in a table: '0.9500 ± 0.00005' or '[0.95, –]'."""
        if self.value is not None:
            return format_number(self.value, self.decimals)
        if self.bounds is not None:
            lo, hi = self.bounds.get("min"), self.bounds.get("max")
            if lo is not None and hi is not None:
                return f"[{format_number(lo)}, {format_number(hi)}]"
            return f">= {format_number(lo)}" if lo is not None else f"<= {format_number(hi)}"
        return self.text or ""

    def check(self, got: float, tolerance: float | None = None) -> tuple[float | None, bool]:
        """(delta, within) of `got` against this cell; `tolerance` overrides the cell's."""
        if self.value is not None:
            tol = self.tolerance if tolerance is None else tolerance
            delta = got - self.value
            # Round-off in the delta must not turn an exact-boundary value into a failure.
            return delta, abs(delta) <= (tol or 0.0) + 1e-12
        assert self.bounds is not None, f"{self.id} is a text cell"
        slack = tolerance or 0.0
        lo, hi = self.bounds.get("min", -math.inf), self.bounds.get("max", math.inf)
        delta = (got - lo) if got < lo else (got - hi) if got > hi else 0.0
        return delta, lo - slack - 1e-12 <= got <= hi + slack + 1e-12


@dataclass
class Golden:
    path: Path
    paper: dict[str, Any]
    cells: list[GoldenCell]
    by_id: dict[str, GoldenCell] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_id = {c.id: c for c in self.cells}

    def __getitem__(self, cell_id: str) -> GoldenCell:
        return self.by_id[cell_id]

    def value(self, cell_id: str) -> float:
        cell = self.by_id[cell_id]
        if cell.value is None:
            raise KeyError(f"{cell_id} has no value (bounds or text cell)")
        return cell.value

    def bound(self, cell_id: str, side: str) -> float:
        """A bounds cell's `min` or `max` (KeyError naming the cell when it has none)."""
        bounds = self.by_id[cell_id].bounds
        if bounds is None or side not in bounds:
            raise KeyError(f"{cell_id} has no {side} bound")
        return bounds[side]

    def numerators(self, cell_id: str) -> tuple[int, int]:
        """The integer numerators a printed rate allows (`numerator_range`; KeyError when not given)."""
        rng = self.by_id[cell_id].numerator_range
        if rng is None:
            raise KeyError(f"{cell_id} has no numerator_range")
        return rng


def format_number(x: float | int | None, decimals: int | None = None) -> str:
    if x is None:
        return "–"
    if decimals is not None:
        return f"{x:.{decimals}f}"
    if isinstance(x, int) or float(x).is_integer():
        return str(int(x))
    return f"{x:.6g}"


def load_golden(path: str | Path) -> Golden:
    """Load and validate one golden file; raises SpecErrors naming file:line:field.

    Parsed files are cached by (path, content hash): the pure-Python line-tracking YAML
    reader takes ~0.2 s for the largest golden file, and compare, paper-check and report each read
    it. The hash, not the mtime, keys the cache: two edits within one timestamp tick
    must not return the first edit's numbers.
    """
    path = Path(path).resolve()
    if not path.is_file():
        return _load_golden_uncached(path)
    return _load_golden_cached(path, sha256_file(path))


@lru_cache(maxsize=32)
def _load_golden_cached(path: Path, content_sha256: str) -> Golden:
    return _load_golden_uncached(path)


def _load_golden_uncached(path: Path) -> Golden:
    try:
        data, lines = load_yaml(path)
    except SpecError as exc:
        raise SpecErrors([exc]) from None
    origins = {k: (path, v) for k, v in lines.items()}
    validator = jsonschema.Draft202012Validator(golden_schema())
    errors = []
    for error in validator.iter_errors(data):
        if error.context:
            error = jsonschema.exceptions.best_match(error.context) or error
        errors.append(schema_error(error, data, origins, path))
    if not errors:
        errors = _semantic_errors(data, lines, path)
    if errors:
        raise SpecErrors(errors)
    cells = [_cell(c, lines.get(("cells", i), 0)) for i, c in enumerate(data["cells"])]
    return Golden(path=path, paper=data["paper"], cells=cells)


def _semantic_errors(data: dict[str, Any], lines: dict[tuple, int], path: Path) -> list[SpecError]:
    """Rules a JSON Schema cannot state: unique ids, bounds in order, ranges ordered."""
    errors: list[SpecError] = []
    seen: dict[str, int] = {}
    for i, cell in enumerate(data["cells"]):
        at = ("cells", i)
        line = lines.get(at + ("id",), lines.get(at, 1))
        if cell["id"] in seen:
            errors.append(SpecError(path, line, format_field(at + ("id",)),
                                    f"duplicate cell id {cell['id']!r} (first on line {seen[cell['id']]})"))
        seen.setdefault(cell["id"], line)
        bounds = cell.get("bounds") or {}
        if "min" in bounds and "max" in bounds and bounds["min"] > bounds["max"]:
            errors.append(SpecError(path, lines.get(at + ("bounds",), line), format_field(at + ("bounds",)), "min > max"))
        rng = cell.get("numerator_range")
        if rng and rng[0] > rng[1]:
            errors.append(SpecError(path, lines.get(at + ("numerator_range",), line), format_field(at + ("numerator_range",)),
                                    "range must be [low, high]"))
    return errors


def _cell(raw: dict[str, Any], line: int) -> GoldenCell:
    kwargs = dict(raw)
    if "numerator_range" in kwargs:
        kwargs["numerator_range"] = tuple(kwargs["numerator_range"])
    return GoldenCell(line=line, **kwargs)


def golden_files() -> list[Path]:
    """Every golden file shipped in golden/, sorted (the schema itself excluded)."""
    return sorted(golden_dir().glob("*.yaml"))


def suite_golden_paths(manifest: dict[str, Any] | None) -> list[Path]:
    """The golden files of the suite a run was made from (the suite spec's `golden:`, relative
    to the repository root): what `compare` and `report` use when not told. Empty for a run
    without a suite (`--models/--benchmarks` only) or a suite this checkout does not have."""
    suite = ((manifest or {}).get("suite") or {})
    suite_id = suite.get("id") if isinstance(suite, dict) else suite
    if not suite_id:
        return []
    try:
        from duplexeval.specs import default_registry

        names = default_registry().get("suite", str(suite_id)).data.get("golden") or []
    except Exception:  # an unknown suite: nothing to compare by default, never an error
        return []
    return [p for p in (repo_root() / str(n) for n in names) if p.is_file()]
