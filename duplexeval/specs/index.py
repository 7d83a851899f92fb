"""Where spec files are and each parsed once: the one index of the spec trees.

The spec trees are the bundle's specs/ and the folders of `$DUPLEXEVAL_SPECS`. Every
lookup of spec files (the Registry, one model's file, the weights specs, the local
perception models) goes through here, so the search order, the clash rule and the parse
memo are written once.
"""

from __future__ import annotations

import copy
import hashlib
import os
import threading
from pathlib import Path
from typing import Iterable

from duplexeval.specs.errors import SpecError, SpecErrors, UnknownSpecError
from duplexeval.specs.loader import Spec, load_spec, repo_root

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


def spec_files(folder: str, roots: Iterable[Path] | None = None) -> list[Path]:
    """Every spec file under `<root>/<folder>/` of each tree, in search order: base files
    (`_*.yaml`) and prompt folders left out."""
    out = []
    for root in (roots or spec_roots()):
        base = Path(root) / folder
        for path in sorted(base.rglob("*.yaml")):
            if not path.name.startswith("_") and "prompts" not in path.relative_to(base).parts:
                out.append(path)
    return out
