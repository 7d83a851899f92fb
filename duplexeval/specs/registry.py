"""All specs of the spec trees (the bundle's and `$DUPLEXEVAL_SPECS`), by kind and id, references checked.

A reference to a spec that does not exist is an error at the line that makes it, with
a close-name suggestion (lm-evaluation-harness style "did you mean").
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from duplexeval.resources import bundle_root, project_dir
from duplexeval.specs.errors import SpecError, SpecErrors, UnknownSpecError
from duplexeval.specs.index import (  # noqa: F401  (the registry's public names, kept here)
    SPECS_ENV,
    WEIGHTS_SPEC_FOLDERS,
    _clash_message,
    find_spec_file,
    known_spec_ids,
    load_spec_cached,
    load_weights_spec,
    spec_files,
    spec_roots,
    specs_root,
)
from duplexeval.specs.loader import FOLDER_OF_KIND, KINDS, Spec, resolve_includes
from duplexeval.specs.local_models import reference_problems


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
        for path, expected in files:
            try:
                spec = load_spec_cached(path, expected_kind=expected)
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

    def _suite_override_problems(self, suite: Spec, benches: list[dict]) -> list[SpecError]:
        """Every benchmark of the suite as the suite runs it, checked by the benchmark schema
        (duplexeval.specs.overrides); one problem reported once however many benchmarks show it."""
        from duplexeval.specs.overrides import override_problems, unused_override_problems

        seen: dict[str, SpecError] = {}
        for bench in benches:
            for problem in override_problems(suite, bench):
                seen.setdefault(f"{problem.field}: {problem.message.split(' (as benchmark ')[0]}", problem)
        known = {role for b in self.all("benchmark") for role in b.data.get("judges", {})}
        errors, warnings = unused_override_problems(suite, benches, known)
        self.warnings.extend(w for w in warnings if w not in self.warnings)
        return [*seen.values(), *errors]

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
            for dim, block in (spec.data.get("overrides", {}).get("data") or {}).items():
                if isinstance(block, dict) and block.get("source") == "embedded" and isinstance(block.get("path"), str):
                    # as a run reads it: relative to the bundle (duplexeval.benchmarks.*: repo_root() / path)
                    exists(spec, ("overrides", "data", dim, "path"), bundle_root() / block["path"], "embedded data path")
            for i, golden in enumerate(spec.data.get("golden", [])):
                exists(spec, ("golden", i), home(spec) / golden, "golden file")
            benches = [self.specs["benchmark"][b].data for b in dict.fromkeys(
                b for run in spec.data.get("runs", []) for b in run.get("benchmarks", []))
                if b in self.specs["benchmark"]]
            errors.extend(self._suite_override_problems(spec, benches))
            chosen = spec.data.get("overrides", {}).get("readings")
            if chosen:
                from duplexeval.specs.readings import suite_reading_problems

                errors.extend(spec.error(("overrides", "readings", field), why)
                              for field, why in suite_reading_problems(chosen, benches))
        # ASR/TTS selections name models whose weights a spec pins (duplexeval.specs.local_models).
        errors.extend(spec.error(at, message) for spec, at, message in reference_problems(self))
        return errors


_DEFAULT: Registry | None = None


def default_registry() -> Registry:
    """The registry of every spec tree (`spec_roots()`), loaded once per process."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Registry.load()
    return _DEFAULT
