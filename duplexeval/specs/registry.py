"""All specs of the spec trees (the bundle's and `$DUPLEXEVAL_SPECS`), by kind and id, references checked.

A reference to a spec that does not exist is an error at the line that makes it, with
a close-name suggestion (lm-evaluation-harness style "did you mean").
"""

from __future__ import annotations

import copy
import hashlib
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from duplexeval.resources import project_dir
from duplexeval.specs.errors import SpecError, SpecErrors, UnknownSpecError
from duplexeval.specs.loader import FOLDER_OF_KIND, KINDS, Spec, load_spec, repo_root, resolve_includes

# Extra spec folders (a model author's own repository), os.pathsep-separated, searched
# together with the bundle's. Ids are global: a clash between two folders is an error
# naming both files, never a silent override (a stale copy must not change a number).
SPECS_ENV = "DUPLEXEVAL_SPECS"


def specs_root() -> Path:
    """The bundle's own specs/ folder (a checkout's or an installed wheel's).

    Lookups that must also see the folders of `$DUPLEXEVAL_SPECS` use `spec_roots()`
    or `find_spec_file()`.
    """
    return repo_root() / "specs"


def spec_roots() -> tuple[Path, ...]:
    """Every spec tree in search order: each folder of `$DUPLEXEVAL_SPECS`, then the bundle's."""
    roots: list[Path] = []
    for part in os.environ.get(SPECS_ENV, "").split(os.pathsep):
        if not part.strip():
            continue
        folder = Path(part).expanduser().resolve()
        if not folder.is_dir():
            raise SpecErrors([SpecError(folder, 1, SPECS_ENV, f"{part!r} is not a folder (a spec folder holds models/, "
                                        f"benchmarks/, judges/ or suites/; separate several with {os.pathsep!r})")])
        roots.append(folder)
    bundle = specs_root().resolve()
    return tuple(dict.fromkeys([*roots, bundle]))  # the bundle named twice is searched once


def find_spec_file(folder: str, spec_id: str, roots: Iterable[Path] | None = None) -> Path | None:
    """`<root>/<folder>/<spec_id>.yaml` in the one spec tree that has it; None if none does.

    Two trees with the file is the same clash `Registry.load` reports: an error at the file of
    the folder listed first, naming the other.
    """
    hits = [p for p in ((Path(r) / folder / f"{spec_id}.yaml") for r in (roots or spec_roots())) if p.is_file()]
    if len(hits) > 1:
        kind = folder.split("/")[0].removesuffix("s")
        raise SpecErrors([SpecError(hits[0], 1, "id", _clash_message(kind, spec_id, hits[1]))])
    return hits[0] if hits else None


def known_spec_ids(folder: str, roots: Iterable[Path] | None = None) -> list[str]:
    """Ids of the spec files directly in `<root>/<folder>/` of every tree (for "did you mean")."""
    return sorted({p.stem for r in (roots or spec_roots()) for p in (Path(r) / folder).glob("*.yaml")
                   if not p.name.startswith("_")})


# The spec folders whose specs may pin hub weights (`duplexeval weights`): the models, and
# the local ASR/TTS/aligner models the judges run (duplexeval.judges.local_models).
WEIGHTS_SPEC_FOLDERS = ("models", "judges/perception")


def load_weights_spec(spec_id: str, roots: Iterable[Path] | None = None) -> Spec:
    """The spec `spec_id` of `WEIGHTS_SPEC_FOLDERS` (a model first), one file, not the Registry.

    One file, so fetching a model's weights does not fail on an unrelated spec being edited.
    Raises UnknownSpecError with a "did you mean" over every id of those folders, or the
    SpecErrors of the file (or of a clash between two spec trees).
    """
    roots = tuple(roots) if roots is not None else None
    for folder in WEIGHTS_SPEC_FOLDERS:
        path = find_spec_file(folder, spec_id, roots)
        if path is not None:
            return load_spec(path)
    raise UnknownSpecError("model", spec_id, sorted({i for f in WEIGHTS_SPEC_FOLDERS for i in known_spec_ids(f, roots)}))


# Per-process memo of parsed spec files. `Registry.load()` runs once per job and per judge
# in a suite run (about 70 times in `make reproduce`), and each load parses every YAML file
# again (~0.8 s, most of it the line-tracking YAML parser). A file is reused only while
# the bytes of every file it was built from (its includes too) are what they were; the
# reference checks, which look at files outside the specs, still run on every load.
_FILE_MEMO: dict[tuple[Path, str | None], tuple[tuple[tuple[Path, str | None], ...], Spec]] = {}
_FILE_MEMO_LOCK = threading.Lock()


def _content_sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def load_spec_cached(path: Path, expected_kind: str | None = None) -> Spec:
    """`load_spec`, reusing this process's earlier result while no source file's bytes changed.

    Returns a deep copy, so a caller that edits `spec.data` cannot change what a later
    `Registry.load()` returns. Errors are not memoised: a broken file is parsed (and
    reported) every time.
    """
    key = (Path(path).resolve(), expected_kind)
    with _FILE_MEMO_LOCK:
        entry = _FILE_MEMO.get(key)
    if entry is not None:
        digests, spec = entry
        if all(_content_sha256(p) == d for p, d in digests):
            return copy.deepcopy(spec)
    # The file itself is hashed before it is parsed (its includes, known only after, are
    # hashed then): a file edited during the parse misses next time, never pins new bytes
    # to the old parse.
    before = _content_sha256(key[0])
    spec = load_spec(path, expected_kind=expected_kind)
    digests = tuple((p, before if p == key[0] else _content_sha256(p)) for p in spec.sources)
    with _FILE_MEMO_LOCK:
        _FILE_MEMO[key] = (digests, copy.deepcopy(spec))
    return spec


def _clash_message(what: str, spec_id: str, other: Path) -> str:
    return (f"duplicate {what} id {spec_id!r} (also {other}); ids are global across "
            f"${SPECS_ENV} folders and the bundle: give a copy a new id")


@dataclass
class Registry:
    root: Path  # the last tree searched: the bundle's specs/, or the one `root` given to load()
    specs: dict[str, dict[str, Spec]] = field(default_factory=lambda: {k: {} for k in KINDS})
    warnings: list[str] = field(default_factory=list)
    roots: tuple[Path, ...] = ()

    @classmethod
    def load(cls, root: Path | None = None, extra_files: Iterable[Path] = ()) -> "Registry":
        """Load and check every spec; raises SpecErrors with all problems at once.

        With `root`, exactly that tree; without, every tree of `spec_roots()`.
        """
        roots = (Path(root).resolve(),) if root else spec_roots()
        reg = cls(root=roots[-1], roots=roots)
        errors: list[SpecError] = []
        base_files: set[Path] = set()
        included: set[Path] = set()
        files: list[tuple[Path, str | None]] = []
        # Last tree first: a clash is then reported at the file of the folder listed earlier
        # (the one that would shadow), naming the other; the bundle's file is never the culprit.
        for root, kind in ((r, k) for r in reversed(roots) for k in KINDS):
            folder = root / FOLDER_OF_KIND[kind]
            if not folder.is_dir():
                continue
            for path in sorted(folder.rglob("*")):
                if not path.is_file() or "prompts" in path.relative_to(folder).parts:
                    continue
                if path.suffix == ".yml":
                    errors.append(SpecError(path, 1, "<file>", "spec files end in .yaml, not .yml (this file would be ignored)"))
                elif path.suffix != ".yaml":
                    continue
                elif path.name.startswith("_"):
                    base_files.add(path.resolve())
                else:
                    files.append((path, kind))
        files += [(Path(p), None) for p in extra_files]
        for path, kind in files:
            try:
                spec = load_spec_cached(path, expected_kind=kind)
            except SpecErrors as exc:
                errors.extend(exc.errors)
                continue
            included.update(spec.sources[1:])
            previous = reg.specs[spec.kind].get(spec.id)
            if previous is not None and previous.path != spec.path:
                errors.append(spec.error(("id",), _clash_message(spec.kind, spec.id, previous.path)))
                continue
            reg.specs[spec.kind][spec.id] = spec
        for base in sorted(base_files - included):
            try:
                resolve_includes(base)  # at least it must parse
            except SpecError as exc:
                errors.append(exc)
            reg.warnings.append(f"{os.path.relpath(base)}: base file not included by any spec")
        errors.extend(reg.check_references())
        if errors:
            raise SpecErrors(errors)
        return reg

    def get(self, kind: str, spec_id: str) -> Spec:
        try:
            return self.specs[kind][spec_id]
        except KeyError:
            raise UnknownSpecError(kind, spec_id, list(self.specs.get(kind, {}))) from None

    def all(self, kind: str) -> list[Spec]:
        return [self.specs[kind][k] for k in sorted(self.specs[kind])]

    def check_references(self) -> list[SpecError]:
        errors: list[SpecError] = []

        def home(spec: Spec) -> Path:
            return project_dir(spec.path, FOLDER_OF_KIND[spec.kind])

        def ref(spec: Spec, at: tuple, kind: str, target: object) -> None:
            if isinstance(target, str) and target not in self.specs[kind]:
                errors.append(spec.error(at, str(UnknownSpecError(kind, target, list(self.specs[kind])))))

        def exists(spec: Spec, at: tuple, target: Path, what: str) -> None:
            if not target.exists():
                errors.append(spec.error(at, f"{what} {target} does not exist"))

        for spec in self.all("benchmark"):
            for role, judge_id in spec.data.get("judges", {}).items():
                ref(spec, ("judges", role), "judge", judge_id)
            pair = spec.data.get("metrics", {}).get("statistics", {}).get("mcnemar", {}).get("pair_with")
            ref(spec, ("metrics", "statistics", "mcnemar", "pair_with"), "benchmark", pair)
            data = spec.data.get("data", {})
            if data.get("source") == "embedded" and "path" in data:
                exists(spec, ("data", "path"), home(spec) / data["path"], "embedded data path")
        for spec in self.all("judge"):
            template = spec.data.get("template", {}).get("path")
            if template:
                file, _ = spec.where("template", "path")
                exists(spec, ("template", "path"), file.parent / template, "template")
        for spec in self.all("model"):
            build = spec.data.get("launch", {}).get("build")
            if build:
                exists(spec, ("launch", "build"), home(spec) / build, "build folder")
        for spec in self.all("suite"):
            for i, run in enumerate(spec.data.get("runs", [])):
                for j, model in enumerate(run.get("models", [])):
                    ref(spec, ("runs", i, "models", j), "model", model)
                for j, bench in enumerate(run.get("benchmarks", [])):
                    ref(spec, ("runs", i, "benchmarks", j), "benchmark", bench)
            for role, judge_id in spec.data.get("overrides", {}).get("judges", {}).items():
                ref(spec, ("overrides", "judges", role), "judge", judge_id)
            for i, golden in enumerate(spec.data.get("golden", [])):
                exists(spec, ("golden", i), home(spec) / golden, "golden file")
            chosen = spec.data.get("overrides", {}).get("readings")
            if chosen:
                from duplexeval.specs.readings import suite_reading_problems

                benches = [self.specs["benchmark"][b].data for run in spec.data.get("runs", [])
                           for b in run.get("benchmarks", []) if b in self.specs["benchmark"]]
                errors.extend(spec.error(("overrides", "readings", field), why)
                              for field, why in suite_reading_problems(chosen, benches))
        # ASR/TTS selections name models whose weights a spec pins (duplexeval.judges.local_models).
        from duplexeval.judges.local_models import reference_problems

        errors.extend(spec.error(at, message) for spec, at, message in reference_problems(self))
        return errors


_DEFAULT: Registry | None = None


def default_registry() -> Registry:
    """The registry of every spec tree (`spec_roots()`), loaded once per process."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Registry.load()
    return _DEFAULT
