"""Model weights: fetched once at a pinned revision, hashed, verified before every use.

Why this exists: a shim must never reach a hub at run time (its container has no
network), and an unpinned or silently changed checkpoint changes scores. So a model
spec pins its weights (`weights.repo`, `weights.revision` = a 40-hex commit, `weights.files`
with optional `sha256` / `size_bytes`); `duplexeval weights fetch MODEL` downloads exactly
those files at that commit into

    $DUPLEXEVAL_WEIGHTS_CACHE/<model-id>/<revision>/     (default ~/.cache/duplexeval/weights)

and writes a sha256 manifest there (`duplexeval-manifest.json`, atomically, last: a folder
without a manifest is never taken for a complete one). `verified_weights_dir()` is what
the docker backend calls before it mounts that folder read-only at /weights.

Downloads go through `huggingface_hub.hf_hub_download(local_dir=...)`, which resumes an
interrupted file from its `.incomplete` part. The token comes from `HF_TOKEN` in the
environment only (never the hub's stored token file) and is never written anywhere.

Failures a user can act on are `WeightsError`s with a 1-3 line message naming the repo,
the revision, the files and the folder to place them in by hand; the CLI prints the
message and exits with `exit_code` (2: unavailable or misconfigured, 1: a file changed).

The fetching, hashing and manifest are `duplexeval.data.snapshot`, shared with
`duplexeval data` (published data sets): one pinned-snapshot mechanism. This module
only reads a model spec's `weights` block into a pin and keeps the weights names.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from duplexeval.data import snapshot as snap
from duplexeval.data.snapshot import (  # noqa: F401  (the weights API keeps these names)
    COMMIT_RE as _COMMIT_RE,
    DEFAULT_ENDPOINT,
    MANIFEST_NAME,
    MANIFEST_VERSION,
    PROBE_TIMEOUT_S,
    SHA256_RE as _SHA256_RE,
    PinnedFile,
    hub_endpoint,
    hub_offline,
)
from duplexeval.resources import weights_root

WeightsError = snap.SnapshotError
WeightsSpecError = snap.SnapshotSpecError
WeightsUnavailableError = snap.SnapshotUnavailableError
WeightsVerificationError = snap.SnapshotVerificationError


@dataclass(frozen=True)
class WeightsPin:
    """The `weights` section of one model spec, checked."""

    model_id: str
    spec_file: str
    repo: str
    revision: str
    files: tuple[PinnedFile, ...]

    def folder(self, root: Path | None = None) -> Path:
        return (root if root is not None else weights_root()) / self.model_id / self.revision

    def hub_url(self, endpoint: str | None = None) -> str:
        return f"{(endpoint or hub_endpoint()).rstrip('/')}/{self.repo}/tree/{self.revision}"

    def snapshot(self) -> snap.Pin:
        """The generic pin `duplexeval.data.snapshot` fetches and checks."""
        return snap.Pin(what=f"weights of {self.model_id}", name=self.model_id, command="weights", repo=self.repo,
                        revision=self.revision, repo_type="model", files=self.files)

    def file_list(self, only: list[str] | None = None) -> str:
        names = only if only is not None else [f.path for f in self.files]
        return ", ".join(names)


def _spec_parts(spec: Any) -> tuple[dict, str, str]:
    """(data, model id, spec file for messages) from a Registry Spec or a plain dict."""
    data = getattr(spec, "data", spec)
    if not isinstance(data, dict):
        raise TypeError(f"model spec must be a dict or a duplexeval.specs.Spec, got {type(spec).__name__}")
    model_id = getattr(spec, "id", None) or data.get("id") or "<no id>"
    path = getattr(spec, "path", None)
    if path is not None:
        from duplexeval.specs.errors import display_path

        spec_file = display_path(path)
    else:
        spec_file = f"specs/models/{model_id}.yaml"
    return data, model_id, spec_file


def is_hub_backed(weights: dict) -> bool:
    """Hub weights: a `repo` field, or a source written `hf:<repo>`."""
    return bool(weights.get("repo")) or str(weights.get("source", "")).startswith("hf:")


def weights_pin(spec: Any) -> WeightsPin | None:
    """The checked pin of a model spec; None when its weights do not come from a hub.

    Raises WeightsSpecError when the weights come from a hub but the spec does not pin
    repo, revision and files: fetching "whatever main is today" is what this avoids.
    """
    data, model_id, spec_file = _spec_parts(spec)
    weights = data.get("weights") or {}
    if not is_hub_backed(weights):
        return None

    def at(*field: Any) -> str:
        """`file:LINE` of a field, as every spec error in this project reads."""
        where = getattr(spec, "where", None)
        if where is None:
            return spec_file
        from duplexeval.specs.errors import display_path

        file, line = where("weights", *field)
        return f"{display_path(file)}:{line}"

    missing = [k for k in ("repo", "revision", "files") if not weights.get(k)]
    if missing:
        raise WeightsSpecError(
            f"{at()}: weights: {', '.join(missing)} not pinned (source {weights.get('source')!r}); "
            "add weights.repo, weights.revision (a 40-hex commit) and weights.files to fetch or mount its weights"
        )
    revision = str(weights["revision"])
    if not _COMMIT_RE.match(revision):
        raise WeightsSpecError(f"{at('revision')}: weights.revision: {revision!r} is not a 40-hex commit hash")
    files: list[PinnedFile] = []
    for i, entry in enumerate(weights["files"]):
        entry = {"path": entry} if isinstance(entry, str) else entry
        path = str(entry.get("path", ""))
        if not snap.check_relative(path):
            raise WeightsSpecError(f"{at('files', i)}: weights.files[{i}].path: {path!r} is not a relative file path in the repo")
        sha = entry.get("sha256")
        if sha is not None and not _SHA256_RE.match(str(sha)):
            raise WeightsSpecError(f"{at('files', i, 'sha256')}: weights.files[{i}].sha256: {sha!r} is not 64 lowercase hex digits")
        files.append(PinnedFile(path=path, sha256=sha, size_bytes=entry.get("size_bytes")))
    return WeightsPin(model_id=model_id, spec_file=spec_file, repo=str(weights["repo"]), revision=revision,
                      files=tuple(files))


# --- manifest, verification, fetching: duplexeval.data.snapshot -------------------------

def read_manifest(folder: Path) -> dict | None:
    return snap.read_manifest(folder)


def check_folder(pin: WeightsPin, folder: Path, *, rehash: bool = True, memo: bool = True) -> list[str]:
    """Every problem of `folder` against its manifest and the spec's pins (empty: verified).

    rehash=False trusts a file whose size and mtime match the manifest (seconds instead of
    minutes for 15 GB); memo=True hashes an unchanged file once per process; `weights
    verify` re-hashes every byte (rehash=True, memo=False).
    """
    return snap.check_folder(pin.snapshot(), folder, rehash=rehash, memo=memo)


def verification_error(pin: WeightsPin, folder: Path, problems: list[str]) -> WeightsError:
    """Missing files: where to put them (exit 2); changed files: which ones (exit 1)."""
    return snap.verification_error(pin.snapshot(), folder, problems)


def _no_hub_weights(spec: Any, verb: str) -> WeightsSpecError:
    data, model_id, spec_file = _spec_parts(spec)
    return WeightsSpecError(f"{spec_file}: model {model_id} has no hub weights to {verb} "
                            f"(weights.source {(data.get('weights') or {}).get('source')!r})")


def verify(spec: Any, root: Path | None = None, *, rehash: bool = True) -> tuple[WeightsPin, Path, list[str]]:
    """(pin, folder, problems) for `weights verify`; raises WeightsSpecError for an unpinned spec."""
    pin = weights_pin(spec)
    if pin is None:
        raise _no_hub_weights(spec, "verify")
    folder = pin.folder(root)
    return pin, folder, check_folder(pin, folder, rehash=rehash, memo=False)


def verified_weights_dir(model_spec_data: Any, root: Path | None = None, *, rehash: bool = True) -> Path | None:
    """The verified weights folder of a model, to mount read-only at /weights.

    None when the model's weights do not come from a hub (`source: none`, a PyPI
    package, Debian flite): there is nothing to mount. Raises (all `WeightsError`s, with
    the same 1-3 line message `duplexeval weights` prints) WeightsSpecError when a hub
    model's spec does not pin its files, WeightsUnavailableError when files are missing
    or were never verified (no manifest), WeightsVerificationError when a file differs
    from the manifest or the spec's sha256.
    """
    pin = weights_pin(model_spec_data)
    if pin is None:
        return None
    return snap.verified_folder(pin.snapshot(), pin.folder(root), rehash=rehash)


def fetch(spec: Any, root: Path | None = None, *, log: Callable[[str], None] = lambda s: None) -> Path:
    """Download the pinned files (resuming partial ones), hash them, write the manifest.

    Files already in the folder are not downloaded again (so files placed by hand work
    offline); every file is then hashed and checked against the spec's sha256/size pins
    and, where the hub gave one, its LFS sha256 (the ETag of a large file). Nothing is
    written to the manifest unless every file passes. Returns the folder.
    """
    pin = weights_pin(spec)
    if pin is None:
        raise _no_hub_weights(spec, "fetch")
    return snap.fetch(pin.snapshot(), pin.folder(root), log=log, manifest_extra={"model": pin.model_id})
