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
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Callable

from duplexeval.io import atomic_write_bytes, sha256_file

MANIFEST_NAME = "duplexeval-manifest.json"
MANIFEST_VERSION = 1
DEFAULT_ENDPOINT = "https://huggingface.co"
_COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
# How long the reachability probe waits: a closed port answers at once, a black-holed
# network must not hang `weights fetch` for minutes.
PROBE_TIMEOUT_S = 10.0


class WeightsError(Exception):
    """A weights problem a user can fix; `str()` is the whole (1-3 line) message."""

    exit_code = 2

    def __init__(self, message: str, problems: list[str] | None = None):
        super().__init__(message)
        self.problems = problems or []


class WeightsSpecError(WeightsError):
    """The model spec does not pin what fetching or verifying needs."""


class WeightsUnavailableError(WeightsError):
    """The files are not on disk and cannot be downloaded (offline, gated, not found)."""


class WeightsVerificationError(WeightsError):
    """Files are present but missing from, or different to, the manifest or the spec's pins."""

    exit_code = 1


@dataclass(frozen=True)
class PinnedFile:
    path: str
    sha256: str | None = None
    size_bytes: int | None = None


@dataclass(frozen=True)
class WeightsPin:
    """The `weights` section of one model spec, checked."""

    model_id: str
    spec_file: str
    repo: str
    revision: str
    files: tuple[PinnedFile, ...]

    def folder(self, root: Path | None = None) -> Path:
        return (root if root is not None else cache_root()) / self.model_id / self.revision

    def hub_url(self, endpoint: str | None = None) -> str:
        return f"{(endpoint or hub_endpoint()).rstrip('/')}/{self.repo}/tree/{self.revision}"

    def file_list(self, only: list[str] | None = None) -> str:
        names = only if only is not None else [f.path for f in self.files]
        return ", ".join(names)


def cache_root() -> Path:
    """`$DUPLEXEVAL_WEIGHTS_CACHE` or ~/.cache/duplexeval/weights."""
    env = os.environ.get("DUPLEXEVAL_WEIGHTS_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "duplexeval" / "weights"


def hub_endpoint() -> str:
    """Read at call time (huggingface_hub reads HF_ENDPOINT once, at import)."""
    return os.environ.get("HF_ENDPOINT", DEFAULT_ENDPOINT).rstrip("/")


def hub_offline() -> bool:
    """HF_HUB_OFFLINE as huggingface_hub reads it (1/ON/YES/TRUE)."""
    return os.environ.get("HF_HUB_OFFLINE", "").upper() in {"1", "ON", "YES", "TRUE"}


def _token() -> str | bool:
    """HF_TOKEN from the environment, or False: never the hub's stored token file."""
    return os.environ.get("HF_TOKEN") or False


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
        parts = PurePosixPath(path).parts
        if not path or path.startswith("/") or ".." in parts or path == MANIFEST_NAME:
            raise WeightsSpecError(f"{at('files', i)}: weights.files[{i}].path: {path!r} is not a relative file path in the repo")
        sha = entry.get("sha256")
        if sha is not None and not _SHA256_RE.match(str(sha)):
            raise WeightsSpecError(f"{at('files', i, 'sha256')}: weights.files[{i}].sha256: {sha!r} is not 64 lowercase hex digits")
        files.append(PinnedFile(path=path, sha256=sha, size_bytes=entry.get("size_bytes")))
    return WeightsPin(model_id=model_id, spec_file=spec_file, repo=str(weights["repo"]), revision=revision,
                      files=tuple(files))


# --- manifest -------------------------------------------------------------------------

def read_manifest(folder: Path) -> dict | None:
    path = folder / MANIFEST_NAME
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise WeightsVerificationError(f"{path}: unreadable manifest ({exc}); run `duplexeval weights fetch` again",
                                       [f"{MANIFEST_NAME}: unreadable"]) from None


def _write_manifest(pin: WeightsPin, folder: Path, hashes: dict[str, str], origin: str) -> None:
    entries = []
    for f in pin.files:
        st = (folder / f.path).stat()
        entries.append({"path": f.path, "sha256": hashes[f.path], "size_bytes": st.st_size,
                        "mtime_ns": st.st_mtime_ns})
    manifest = {
        "manifest_version": MANIFEST_VERSION,
        "model": pin.model_id,
        "repo": pin.repo,
        "revision": pin.revision,
        "origin": origin,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "files": entries,
    }
    atomic_write_bytes(folder / MANIFEST_NAME, (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode())


# --- verification ----------------------------------------------------------------------

# (path, size, mtime_ns, inode) -> sha256: a suite starts a model many times, hash 15 GB once.
_HASH_MEMO: dict[tuple[str, int, int, int], str] = {}


def _hash(path: Path, memo: bool = True) -> str:
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino)
    if not memo or key not in _HASH_MEMO:
        _HASH_MEMO[key] = sha256_file(path)
    return _HASH_MEMO[key]


def check_folder(pin: WeightsPin, folder: Path, *, rehash: bool = True, memo: bool = True) -> list[str]:
    """Every problem of `folder` against its manifest and the spec's pins (empty: verified).

    rehash=False trusts a file whose size and mtime match the manifest (seconds instead of
    minutes for 15 GB); memo=True hashes an unchanged file once per process; `weights
    verify` re-hashes every byte (rehash=True, memo=False).
    """
    if not folder.is_dir():
        return [f"{f.path}: missing" for f in pin.files]
    manifest = read_manifest(folder)
    if manifest is None:
        present = [f.path for f in pin.files if (folder / f.path).is_file()]
        return [f"{MANIFEST_NAME}: missing (never fetched, or fetch did not finish)"] + [
            f"{f.path}: missing" for f in pin.files if f.path not in present]
    problems: list[str] = []
    if manifest.get("repo") != pin.repo or manifest.get("revision") != pin.revision:
        problems.append(f"{MANIFEST_NAME}: written for {manifest.get('repo')}@{manifest.get('revision')}, "
                        f"the spec pins {pin.repo}@{pin.revision}")
    listed = {e.get("path"): e for e in manifest.get("files", []) if isinstance(e, dict)}
    for f in pin.files:
        path = folder / f.path
        entry = listed.get(f.path)
        if not path.is_file():
            problems.append(f"{f.path}: missing")
            continue
        if entry is None:
            problems.append(f"{f.path}: not in the manifest")
            continue
        st = path.stat()
        if st.st_size != entry.get("size_bytes"):
            problems.append(f"{f.path}: changed (size {st.st_size}, manifest says {entry.get('size_bytes')})")
            continue
        if f.size_bytes is not None and st.st_size != f.size_bytes:
            problems.append(f"{f.path}: size {st.st_size}, the spec pins {f.size_bytes}")
            continue
        if not rehash and st.st_mtime_ns == entry.get("mtime_ns") and (f.sha256 is None or f.sha256 == entry.get("sha256")):
            continue
        digest = _hash(path, memo)
        if digest != entry.get("sha256"):
            problems.append(f"{f.path}: changed (sha256 {digest[:12]}..., manifest says {str(entry.get('sha256'))[:12]}...)")
        elif f.sha256 is not None and digest != f.sha256:
            problems.append(f"{f.path}: sha256 {digest[:12]}... differs from the spec's pin {f.sha256[:12]}...")
    return problems


def verification_error(pin: WeightsPin, folder: Path, problems: list[str]) -> WeightsError:
    """Missing files: where to put them (exit 2); changed files: which ones (exit 1)."""
    missing = [p.split(": ")[0] for p in problems if p.endswith(": missing")]
    no_manifest = any(p.startswith(f"{MANIFEST_NAME}: missing") for p in problems)
    if missing and len(missing) + no_manifest == len(problems):
        return WeightsUnavailableError(_unavailable_message(pin, folder, "weights not fetched", missing), problems)
    if no_manifest and len(problems) == 1:
        return WeightsUnavailableError(
            f"weights of {pin.model_id} ({pin.repo}@{pin.revision}): files are in {folder}/ but have no manifest "
            f"(never verified)\nrun `duplexeval weights fetch {pin.model_id}` to hash them and write it", problems)
    return WeightsVerificationError(
        f"weights of {pin.model_id} ({pin.repo}@{pin.revision}) in {folder} fail verification: "
        + "; ".join(problems)
        + f"\nrun `duplexeval weights fetch {pin.model_id}` to repair (changed files are downloaded again only after you delete them)",
        problems)


def _unavailable_message(pin: WeightsPin, folder: Path, reason: str, only: list[str] | None = None) -> str:
    files = only if only is not None else [f.path for f in pin.files]
    return (f"weights of {pin.model_id}: {reason}: repo {pin.repo} at revision {pin.revision}\n"
            f"place {', '.join(files)} (from {pin.hub_url()}) in {folder}/ by hand,\n"
            f"then run `duplexeval weights fetch {pin.model_id}` to hash them and write the manifest")


def verify(spec: Any, root: Path | None = None, *, rehash: bool = True) -> tuple[WeightsPin, Path, list[str]]:
    """(pin, folder, problems) for `weights verify`; raises WeightsSpecError for an unpinned spec."""
    pin = weights_pin(spec)
    if pin is None:
        _, model_id, spec_file = _spec_parts(spec)
        raise WeightsSpecError(f"{spec_file}: model {model_id} has no hub weights to verify "
                               f"(weights.source {(_spec_parts(spec)[0].get('weights') or {}).get('source')!r})")
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
    folder = pin.folder(root)
    problems = check_folder(pin, folder, rehash=rehash)
    if problems:
        raise verification_error(pin, folder, problems)
    return folder


# --- fetching --------------------------------------------------------------------------

def _hub_error(pin: WeightsPin, folder: Path, exc: BaseException, missing: list[str], endpoint: str) -> WeightsUnavailableError:
    """One clear error for every way the hub can refuse; never a traceback."""
    from huggingface_hub import errors as hf_errors

    name = type(exc).__name__
    if isinstance(exc, hf_errors.OfflineModeIsEnabled) or hub_offline():
        reason = "HF_HUB_OFFLINE is set, so the hub is not asked"
    elif isinstance(exc, hf_errors.GatedRepoError):
        reason = (f"{pin.repo} is gated: accept its terms at {endpoint}/{pin.repo} and export HF_TOKEN"
                  if not os.environ.get("HF_TOKEN") else
                  f"{pin.repo} is gated and HF_TOKEN has no access: accept its terms at {endpoint}/{pin.repo}")
    elif isinstance(exc, hf_errors.RevisionNotFoundError):
        reason = f"the hub at {endpoint} has no revision {pin.revision} of {pin.repo}"
    elif isinstance(exc, hf_errors.RemoteEntryNotFoundError):
        reason = f"the hub at {endpoint} has no such file at this revision ({_short(exc)})"
    elif isinstance(exc, hf_errors.RepositoryNotFoundError):
        reason = (f"the hub at {endpoint} has no repo {pin.repo}, or it is private"
                  + ("" if os.environ.get("HF_TOKEN") else " (HF_TOKEN is not set)"))
    elif isinstance(exc, hf_errors.HfHubHTTPError):
        status = getattr(getattr(exc, "response", None), "status_code", "?")
        reason = f"the hub at {endpoint} answered HTTP {status}"
    else:
        reason = f"cannot reach the hub at {endpoint} ({name}: {_short(exc)})"
    return WeightsUnavailableError(_unavailable_message(pin, folder, reason, missing))


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:160]


def _probe(pin: WeightsPin, filename: str, endpoint: str) -> Any:
    """One HEAD of a file, without huggingface_hub's retries: offline fails in milliseconds.

    `hf_hub_download` retries a refused connection with back-off (about 25 s per file);
    a user who is offline learns it at once from this call instead.
    """
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    url = hf_hub_url(pin.repo, filename, revision=pin.revision, endpoint=endpoint)
    return get_hf_file_metadata(url, token=_token(), timeout=PROBE_TIMEOUT_S, endpoint=endpoint)


def fetch(spec: Any, root: Path | None = None, *, log: Callable[[str], None] = lambda s: None) -> Path:
    """Download the pinned files (resuming partial ones), hash them, write the manifest.

    Files already in the folder are not downloaded again (so files placed by hand work
    offline); every file is then hashed and checked against the spec's sha256/size pins
    and, where the hub gave one, its LFS sha256 (the ETag of a large file). Nothing is
    written to the manifest unless every file passes. Returns the folder.
    """
    pin = weights_pin(spec)
    if pin is None:
        _, model_id, spec_file = _spec_parts(spec)
        raise WeightsSpecError(f"{spec_file}: model {model_id} has no hub weights to fetch "
                               f"(weights.source {(_spec_parts(spec)[0].get('weights') or {}).get('source')!r})")
    folder = pin.folder(root)
    endpoint = hub_endpoint()
    missing = [f.path for f in pin.files if not (folder / f.path).is_file()]
    hub_sha: dict[str, str] = {}
    if missing:
        from huggingface_hub import errors as hf_errors
        from huggingface_hub import hf_hub_download

        if hub_offline():
            raise _hub_error(pin, folder, hf_errors.OfflineModeIsEnabled("HF_HUB_OFFLINE"), missing, endpoint)
        folder.mkdir(parents=True, exist_ok=True)
        for name in missing:
            try:
                meta = _probe(pin, name, endpoint)
            except Exception as exc:  # every hub/network failure becomes one clear message
                raise _hub_error(pin, folder, exc, missing, endpoint) from None
            if meta.commit_hash and meta.commit_hash != pin.revision:
                raise WeightsUnavailableError(_unavailable_message(
                    pin, folder, f"the hub resolved {pin.revision} to commit {meta.commit_hash}", missing))
            if meta.etag and _SHA256_RE.match(meta.etag):
                hub_sha[name] = meta.etag
            size = f"{meta.size / 1e9:.2f} GB" if meta.size else "size unknown"
            log(f"downloading {pin.repo}@{pin.revision[:12]} {name} ({size}) -> {folder}/")
            try:
                hf_hub_download(pin.repo, name, revision=pin.revision, local_dir=folder, token=_token(),
                                endpoint=endpoint)
            except Exception as exc:
                raise _hub_error(pin, folder, exc, [n for n in missing if not (folder / n).is_file()],
                                 endpoint) from None
    else:
        log(f"all {len(pin.files)} files present in {folder}/; hashing (no download)")
    # A manifest already written for this revision is a pin too: fetch never blesses a
    # file that changed after it was verified.
    try:
        previous = read_manifest(folder) or {}
    except WeightsVerificationError:
        previous = {}
    recorded = ({e.get("path"): e.get("sha256") for e in previous.get("files", []) if isinstance(e, dict)}
                if previous.get("revision") == pin.revision and previous.get("repo") == pin.repo else {})
    hashes: dict[str, str] = {}
    problems: list[str] = []
    for f in pin.files:
        path = folder / f.path
        size = path.stat().st_size
        if f.size_bytes is not None and size != f.size_bytes:
            problems.append(f"{f.path}: size {size}, the spec pins {f.size_bytes}")
            continue
        log(f"sha256 {f.path} ({size / 1e9:.2f} GB)")
        digest = _hash(path)
        hashes[f.path] = digest
        if f.sha256 is not None and digest != f.sha256:
            problems.append(f"{f.path}: sha256 {digest[:12]}... differs from the spec's pin {f.sha256[:12]}...")
        elif f.path in hub_sha and digest != hub_sha[f.path]:
            problems.append(f"{f.path}: sha256 {digest[:12]}... differs from the hub's {hub_sha[f.path][:12]}...")
        elif recorded.get(f.path) and digest != recorded[f.path]:
            problems.append(f"{f.path}: changed since it was verified (sha256 {digest[:12]}..., "
                            f"manifest says {recorded[f.path][:12]}...)")
    if problems:
        raise WeightsVerificationError(
            f"weights of {pin.model_id} ({pin.repo}@{pin.revision}) in {folder}: " + "; ".join(problems)
            + "\ndelete the named files and run `duplexeval weights fetch` again; no manifest was written",
            problems)
    pinned = all(f.sha256 for f in pin.files)
    origin = "downloaded" if missing and len(missing) == len(pin.files) else ("partly downloaded" if missing else "placed by hand")
    _write_manifest(pin, folder, hashes, origin + ("" if pinned else "; sha256 recorded on first fetch (not all pinned by the spec)"))
    return folder
