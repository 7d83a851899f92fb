"""Load scene files: YAML -> JSON Schema -> scene rules, every problem named by file:line.

A malformed scene is an error, never skipped (lm-evaluation-harness skipped bad YAML and
users saw "task not found"). All problems of a file are reported together.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema

from duplexeval.benchmarks.mpe.scenes.model import Scene, scene_from_dict
from duplexeval.benchmarks.mpe.scenes.rules import rule_problems
from duplexeval.resources import resource
from duplexeval.specs import repo_root
from duplexeval.specs.errors import SpecError, SpecErrors, format_field
from duplexeval.specs.loader import schema_for
from duplexeval.specs.yaml_source import load_yaml

EMBEDDED_SCENES = resource("data", "embedded", "mpe", "scenes")


def scene_schema() -> dict[str, Any]:
    return schema_for("scene")


def _line(locations: dict[tuple, int], at: tuple) -> int:
    while at not in locations and at:
        at = at[:-1]
    return locations.get(at, 1)


def validate_scene_data(data: Any, path: Path, locations: dict[tuple, int] | None = None) -> Scene:
    """Schema then rules; raises SpecErrors naming file, line and turn index."""
    locations = locations or {}
    validator = jsonschema.Draft202012Validator(scene_schema())
    errors = []
    for err in sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path))):
        at = tuple(err.absolute_path)
        errors.append(SpecError(path, _line(locations, at), format_field(at), err.message))
    if errors:
        raise SpecErrors(errors)
    scene = scene_from_dict(data, path)
    problems = rule_problems(scene)
    if problems:
        raise SpecErrors([
            SpecError(path, _line(locations, ("turns", i) if i is not None else ("turns",)),
                      format_field(("turns", i)) if i is not None else "turns", message)
            for i, message in problems
        ])
    return scene


def load_scene(path: str | Path) -> Scene:
    path = Path(path)
    data, locations = load_yaml(path)
    return validate_scene_data(data, path, locations)


def scene_files(root: str | Path) -> list[Path]:
    root = Path(root)
    if root.is_file():
        return [root]
    return sorted(list(root.glob("*.yaml")) + list(root.glob("*.yml")))


def load_scenes(root: str | Path = EMBEDDED_SCENES) -> list[Scene]:
    """Every scene under `root` (sorted by file name); all errors of all files at once.

    Scene ids must be unique: items, records and McNemar pairs are keyed by them.
    """
    scenes, errors = [], []
    files = scene_files(root)
    if not files:
        raise FileNotFoundError(f"no scene files (*.yaml) under {root}")
    for path in files:
        try:
            scenes.append(load_scene(path))
        except SpecErrors as exc:
            errors.extend(exc.errors)
        except SpecError as exc:
            errors.append(exc)
    seen: dict[str, Path] = {}
    for scene in scenes:
        if scene.id in seen:
            errors.append(SpecError(scene.path or Path(root), 1, "id",
                                    f"duplicate scene id {scene.id!r} (also in {seen[scene.id]})"))
        seen.setdefault(scene.id, scene.path or Path(root))
    if errors:
        raise SpecErrors(errors)
    return scenes


def imported_scenes_dir(bench: dict[str, Any]) -> Path:
    """The scenes folder of `duplexeval data import duplex-mpe`; FileNotFoundError with the
    exact commands when not imported."""
    from duplexeval.data.imported import missing_message, ready

    folder = ready("duplex-mpe")
    if folder is None:
        raise FileNotFoundError(missing_message("duplex-mpe", f"benchmark {bench['id']}"))
    return folder / "scenes"


def load_bench_scenes(bench: dict[str, Any], limit: int | None = None) -> list[Scene]:
    """The scenes a benchmark spec names: the imported published copy, or embedded scene files."""
    data = bench["data"]
    if data.get("source") == "public" and data.get("dataset") == "duplex-mpe" and "path" not in data:
        scenes = load_scenes(imported_scenes_dir(bench))
        return scenes[:limit] if limit else scenes
    if data.get("source") != "embedded" or "path" not in data:
        raise FileNotFoundError(
            f"benchmark {bench['id']}: data source {data.get('source')!r} ({data.get('dataset', '?')}) is not on this "
            "machine; run a suite whose overrides point data.path at scene files (e.g. the embedded suite)")
    scenes = load_scenes(repo_root() / Path(data["path"]))
    return scenes[:limit] if limit else scenes
