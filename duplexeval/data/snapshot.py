"""One pinned-snapshot mechanism for everything fetched from a hub: model weights and data sets.

Why one: weights and published data sets fail the same ways (offline, gated, a revision
the hub does not have, a file changed after it was verified) and must be checked the same
way before use. A `Pin` names a repository (`repo_type` model or dataset), a 40-hex
commit, and either its files (weights: a spec lists them) or None (a data set: every
file of the repository at that commit). `fetch` downloads what is missing with
`huggingface_hub.hf_hub_download(local_dir=...)` (which resumes an interrupted file),
hashes every file and writes `duplexeval-manifest.json` atomically and **last**: a folder
without a manifest is never taken for a complete one. `check_folder` re-hashes against it.

The token comes from `HF_TOKEN` in the environment only (never the hub's stored token
file) and is written nowhere. Failures a user can act on are `SnapshotError`s whose
`str()` is the whole 1-3 line message (repository, revision, the folder to place files in
by hand, the command to run next); `exit_code` is 2 (unavailable or misconfigured) or 1
(a file changed).
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
COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
# How long the reachability probe waits: a closed port answers at once, a black-holed
# network must not hang a fetch for minutes.
PROBE_TIMEOUT_S = 10.0


class SnapshotError(Exception):
    """A snapshot problem a user can fix; `str()` is the whole (1-3 line) message."""

    exit_code = 2

    def __init__(self, message: str, problems: list[str] | None = None):
        super().__init__(message)
        self.problems = problems or []


class SnapshotSpecError(SnapshotError):
    """The spec does not pin what fetching or verifying needs."""


class SnapshotUnavailableError(SnapshotError):
    """The files are not on disk and cannot be downloaded (offline, gated, not found)."""


class SnapshotVerificationError(SnapshotError):
    """Files are present but missing from, or different to, the manifest or the spec's pins."""

    exit_code = 1


@dataclass(frozen=True)
class PinnedFile:
    path: str
    sha256: str | None = None
    size_bytes: int | None = None


@dataclass(frozen=True)
class Pin:
    """What to fetch: a repository at a commit, its files (None: all of them), and how to say so."""

    what: str              # "weights of moshi", "data set <name>": how messages name it
    name: str              # the argument of `duplexeval <command> fetch NAME`
    command: str           # "weights" or "data"
    repo: str
    revision: str
    repo_type: str = "model"
    files: tuple[PinnedFile, ...] | None = None

    def hub_url(self, endpoint: str | None = None) -> str:
        prefix = "" if self.repo_type == "model" else f"{self.repo_type}s/"
        return f"{(endpoint or hub_endpoint()).rstrip('/')}/{prefix}{self.repo}/tree/{self.revision}"


def hub_endpoint() -> str:
    """Read at call time (huggingface_hub reads HF_ENDPOINT once, at import)."""
    return os.environ.get("HF_ENDPOINT", DEFAULT_ENDPOINT).rstrip("/")


def hub_offline() -> bool:
    """HF_HUB_OFFLINE as huggingface_hub reads it (1/ON/YES/TRUE)."""
    return os.environ.get("HF_HUB_OFFLINE", "").upper() in {"1", "ON", "YES", "TRUE"}


def token() -> str | bool:
    """HF_TOKEN from the environment, or False: never the hub's stored token file."""
    return os.environ.get("HF_TOKEN") or False


def check_relative(path: str) -> bool:
    """A relative file path inside a repository (no absolute path, no '..', not our manifest)."""
    parts = PurePosixPath(path).parts
    return bool(path) and not path.startswith("/") and ".." not in parts and path != MANIFEST_NAME


# --- manifest -------------------------------------------------------------------------

def read_manifest(folder: Path) -> dict | None:
    path = folder / MANIFEST_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise SnapshotVerificationError(f"{path}: unreadable manifest ({exc}); run the fetch again",
                                        [f"{MANIFEST_NAME}: unreadable"]) from None
    if not isinstance(data, dict) or not isinstance(data.get("files", []), list):
        raise SnapshotVerificationError(f"{path}: not a duplexeval manifest (keys {sorted(data) if isinstance(data, dict) else type(data).__name__}); "
                                        "run the fetch again", [f"{MANIFEST_NAME}: unreadable"])
    return data


def folder_files(folder: Path) -> list[str]:
    """Every file under folder except huggingface_hub's bookkeeping (dot folders) and the manifest."""
    out = []
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if p.is_file() and not any(part.startswith(".") for part in rel.parts[:-1]) and rel.as_posix() != MANIFEST_NAME \
                and not rel.name.startswith("."):
            out.append(rel.as_posix())
    return out


def pinned_names(pin: Pin, folder: Path, manifest: dict | None) -> list[str]:
    """The files a folder must hold: the pin's, or (a whole repository) the manifest's."""
    if pin.files is not None:
        return [f.path for f in pin.files]
    return [str(e.get("path")) for e in (manifest or {}).get("files", []) if isinstance(e, dict)]


def write_manifest(pin: Pin, folder: Path, hashes: dict[str, str], origin: str, extra: dict[str, Any] | None = None) -> None:
    entries = []
    for path in sorted(hashes):
        st = (folder / path).stat()
        entries.append({"path": path, "sha256": hashes[path], "size_bytes": st.st_size, "mtime_ns": st.st_mtime_ns})
    manifest = {
        "manifest_version": MANIFEST_VERSION,
        **(extra or {}),
        "repo": pin.repo,
        "repo_type": pin.repo_type,
        "revision": pin.revision,
        "origin": origin,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "files": entries,
    }
    atomic_write_bytes(folder / MANIFEST_NAME, (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode())


# --- verification ----------------------------------------------------------------------

# (path, size, mtime_ns, inode) -> sha256: a suite starts a model many times, hash 15 GB once.
_HASH_MEMO: dict[tuple[str, int, int, int], str] = {}


def file_hash(path: Path, memo: bool = True) -> str:
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino)
    if not memo or key not in _HASH_MEMO:
        _HASH_MEMO[key] = sha256_file(path)
    return _HASH_MEMO[key]


def check_folder(pin: Pin, folder: Path, *, rehash: bool = True, memo: bool = True) -> list[str]:
    """Every problem of `folder` against its manifest and the pin (empty: verified).

    rehash=False trusts a file whose size and mtime match the manifest; memo=True hashes an
    unchanged file once per process; `verify` commands re-hash every byte (rehash=True,
    memo=False). A whole-repository pin also reports files added after the fetch.
    """
    pinned = {f.path: f for f in pin.files} if pin.files is not None else {}
    if not folder.is_dir():
        return [f"{p}: missing" for p in pinned] or [f"{MANIFEST_NAME}: missing (never fetched)"]
    manifest = read_manifest(folder)
    if manifest is None:
        return [f"{MANIFEST_NAME}: missing (never fetched, or fetch did not finish)"] + [
            f"{p}: missing" for p in pinned if not (folder / p).is_file()]
    problems: list[str] = []
    if manifest.get("repo") != pin.repo or manifest.get("revision") != pin.revision:
        problems.append(f"{MANIFEST_NAME}: written for {manifest.get('repo')}@{manifest.get('revision')}, "
                        f"the spec pins {pin.repo}@{pin.revision}")
    listed = {e.get("path"): e for e in manifest.get("files", []) if isinstance(e, dict)}
    for name in pinned_names(pin, folder, manifest):
        f = pinned.get(name, PinnedFile(name))
        path = folder / name
        entry = listed.get(name)
        if not path.is_file():
            problems.append(f"{name}: missing")
            continue
        if entry is None:
            problems.append(f"{name}: not in the manifest")
            continue
        st = path.stat()
        if st.st_size != entry.get("size_bytes"):
            problems.append(f"{name}: changed (size {st.st_size}, manifest says {entry.get('size_bytes')})")
            continue
        if f.size_bytes is not None and st.st_size != f.size_bytes:
            problems.append(f"{name}: size {st.st_size}, the spec pins {f.size_bytes}")
            continue
        if not rehash and st.st_mtime_ns == entry.get("mtime_ns") and (f.sha256 is None or f.sha256 == entry.get("sha256")):
            continue
        digest = file_hash(path, memo)
        if digest != entry.get("sha256"):
            problems.append(f"{name}: changed (sha256 {digest[:12]}..., manifest says {str(entry.get('sha256'))[:12]}...)")
        elif f.sha256 is not None and digest != f.sha256:
            problems.append(f"{name}: sha256 {digest[:12]}... differs from the spec's pin {f.sha256[:12]}...")
    if pin.files is None:
        problems += [f"{name}: not in the manifest (added after the fetch)"
                     for name in folder_files(folder) if name not in listed]
    return problems


def unavailable_message(pin: Pin, folder: Path, reason: str, only: list[str] | None = None) -> str:
    if only is not None:
        files = ", ".join(only)
    elif pin.files is not None:
        files = ", ".join(f.path for f in pin.files)
    else:
        files = "every file of the repository (e.g. a `git clone` of it, checked out at that commit)"
    return (f"{pin.what}: {reason}: repo {pin.repo} at revision {pin.revision}\n"
            f"place {files} (from {pin.hub_url()}) in {folder}/ by hand,\n"
            f"then run `duplexeval {pin.command} fetch {pin.name}` to hash them and write the manifest")


def verification_error(pin: Pin, folder: Path, problems: list[str]) -> SnapshotError:
    """Missing files: where to put them (exit 2); changed files: which ones (exit 1)."""
    missing = [p.split(": ")[0] for p in problems if p.endswith(": missing")]
    no_manifest = any(p.startswith(f"{MANIFEST_NAME}: missing") for p in problems)
    if missing and len(missing) + no_manifest == len(problems):
        return SnapshotUnavailableError(unavailable_message(pin, folder, "not fetched", missing), problems)
    if no_manifest and len(problems) == 1:
        if not folder.is_dir() or not folder_files(folder):
            return SnapshotUnavailableError(unavailable_message(pin, folder, "not fetched"), problems)
        return SnapshotUnavailableError(
            f"{pin.what} ({pin.repo}@{pin.revision}): files are in {folder}/ but have no manifest "
            f"(never verified)\nrun `duplexeval {pin.command} fetch {pin.name}` to hash them and write it", problems)
    return SnapshotVerificationError(
        f"{pin.what} ({pin.repo}@{pin.revision}) in {folder} fail verification: "
        + "; ".join(problems)
        + f"\nrun `duplexeval {pin.command} fetch {pin.name}` to repair (changed files are downloaded again only after you delete them)",
        problems)


def verified_folder(pin: Pin, folder: Path, *, rehash: bool = True) -> Path:
    """The folder when it passes `check_folder`, else the error `verification_error` makes."""
    problems = check_folder(pin, folder, rehash=rehash)
    if problems:
        raise verification_error(pin, folder, problems)
    return folder


# --- fetching --------------------------------------------------------------------------

def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:160]


def hub_error(pin: Pin, folder: Path, exc: BaseException, missing: list[str] | None, endpoint: str) -> SnapshotUnavailableError:
    """One clear error for every way the hub can refuse; never a traceback."""
    from huggingface_hub import errors as hf_errors

    name = type(exc).__name__
    page = f"{endpoint}/{'' if pin.repo_type == 'model' else pin.repo_type + 's/'}{pin.repo}"
    if isinstance(exc, hf_errors.OfflineModeIsEnabled) or hub_offline():
        reason = "HF_HUB_OFFLINE is set, so the hub is not asked"
    elif isinstance(exc, hf_errors.GatedRepoError):
        reason = (f"{pin.repo} is gated: accept its terms at {page} and export HF_TOKEN"
                  if not os.environ.get("HF_TOKEN") else
                  f"{pin.repo} is gated and HF_TOKEN has no access: accept its terms at {page}")
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
    return SnapshotUnavailableError(unavailable_message(pin, folder, reason, missing))


def probe(pin: Pin, filename: str, endpoint: str) -> Any:
    """One HEAD of a file, without huggingface_hub's retries: offline fails in milliseconds.

    `hf_hub_download` retries a refused connection with back-off (about 25 s per file);
    a user who is offline learns it at once from this call instead.
    """
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    url = hf_hub_url(pin.repo, filename, repo_type=pin.repo_type, revision=pin.revision, endpoint=endpoint)
    return get_hf_file_metadata(url, token=token(), timeout=PROBE_TIMEOUT_S, endpoint=endpoint)


def list_repository(pin: Pin, endpoint: str) -> dict[str, str | None]:
    """{path: LFS sha256 or None} of every file of a whole-repository pin, as the hub lists it at the commit.

    One `repo_info` GET (with blobs) and no retries, like `probe`: offline fails at once;
    the hub's answer must be the pinned commit itself.
    """
    from huggingface_hub import HfApi

    info = HfApi(endpoint=endpoint).repo_info(pin.repo, repo_type=pin.repo_type, revision=pin.revision,
                                             files_metadata=True, timeout=PROBE_TIMEOUT_S, token=token())
    if getattr(info, "sha", None) and info.sha != pin.revision:
        raise SnapshotUnavailableError(f"{pin.what}: the hub resolved {pin.revision} to commit {info.sha}")
    out: dict[str, str | None] = {}
    for sib in info.siblings or []:
        if check_relative(sib.rfilename):
            lfs = sib.lfs
            out[sib.rfilename] = (lfs.get("sha256") if isinstance(lfs, dict) else getattr(lfs, "sha256", None)) if lfs else None
    return out


def fetch(pin: Pin, folder: Path, *, log: Callable[[str], None] = lambda s: None,
          manifest_extra: dict[str, Any] | None = None) -> Path:
    """Download what is missing (resuming partial files), hash everything, write the manifest last.

    Files already in the folder are not downloaded again (so files placed by hand work
    offline); every file is checked against the pin's sha256/size, the hub's LFS sha256
    where the hub gave one, and an existing manifest of the same revision: a fetch never
    blesses a file that changed after it was verified. A whole-repository pin whose folder
    already holds files and no manifest is taken as placed by hand (nothing is asked of
    the hub). Nothing is written to the manifest unless every file passes.
    """
    from huggingface_hub import errors as hf_errors

    endpoint = hub_endpoint()
    hub_sha: dict[str, str] = {}
    try:
        previous = read_manifest(folder) if folder.is_dir() else None
    except SnapshotVerificationError:
        previous = None
    same = bool(previous) and previous.get("revision") == pin.revision and previous.get("repo") == pin.repo
    if pin.files is not None:
        names = [f.path for f in pin.files]
    elif same:
        names = pinned_names(pin, folder, previous)
    elif folder.is_dir() and folder_files(folder):
        names = folder_files(folder)
        log(f"{len(names)} files present in {folder}/ and no manifest: taken as placed by hand (the hub is not asked)")
    else:
        if hub_offline():
            raise hub_error(pin, folder, hf_errors.OfflineModeIsEnabled("HF_HUB_OFFLINE"), None, endpoint)
        try:
            listing = list_repository(pin, endpoint)
        except SnapshotError:
            raise
        except Exception as exc:  # every hub/network failure becomes one clear message
            raise hub_error(pin, folder, exc, None, endpoint) from None
        if not listing:
            raise SnapshotUnavailableError(unavailable_message(pin, folder, "the hub lists no files at this revision"))
        names = sorted(listing)
        hub_sha = {k: v for k, v in listing.items() if v and SHA256_RE.match(v)}
    missing = [n for n in names if not (folder / n).is_file()]
    if missing:
        from huggingface_hub import hf_hub_download

        if hub_offline():
            raise hub_error(pin, folder, hf_errors.OfflineModeIsEnabled("HF_HUB_OFFLINE"), missing, endpoint)
        folder.mkdir(parents=True, exist_ok=True)
        for name in missing:
            try:
                meta = probe(pin, name, endpoint)
            except Exception as exc:
                raise hub_error(pin, folder, exc, missing, endpoint) from None
            if meta.commit_hash and meta.commit_hash != pin.revision:
                raise SnapshotUnavailableError(unavailable_message(
                    pin, folder, f"the hub resolved {pin.revision} to commit {meta.commit_hash}", missing))
            if meta.etag and SHA256_RE.match(meta.etag):
                hub_sha[name] = meta.etag
            size = f"{meta.size / 1e9:.2f} GB" if meta.size else "size unknown"
            log(f"downloading {pin.repo}@{pin.revision[:12]} {name} ({size}) -> {folder}/")
            try:
                hf_hub_download(pin.repo, name, repo_type=pin.repo_type, revision=pin.revision, local_dir=folder,
                                token=token(), endpoint=endpoint)
            except Exception as exc:
                raise hub_error(pin, folder, exc, [n for n in missing if not (folder / n).is_file()], endpoint) from None
    else:
        log(f"all {len(names)} files present in {folder}/; hashing (no download)")
    recorded = ({e.get("path"): e.get("sha256") for e in previous.get("files", []) if isinstance(e, dict)}
                if same else {})
    pinned = {f.path: f for f in pin.files} if pin.files is not None else {}
    hashes: dict[str, str] = {}
    problems: list[str] = []
    for name in names:
        f = pinned.get(name, PinnedFile(name))
        path = folder / name
        size = path.stat().st_size
        if f.size_bytes is not None and size != f.size_bytes:
            problems.append(f"{name}: size {size}, the spec pins {f.size_bytes}")
            continue
        log(f"sha256 {name} ({size / 1e9:.2f} GB)")
        digest = file_hash(path)
        hashes[name] = digest
        if f.sha256 is not None and digest != f.sha256:
            problems.append(f"{name}: sha256 {digest[:12]}... differs from the spec's pin {f.sha256[:12]}...")
        elif name in hub_sha and digest != hub_sha[name]:
            problems.append(f"{name}: sha256 {digest[:12]}... differs from the hub's {hub_sha[name][:12]}...")
        elif recorded.get(name) and digest != recorded[name]:
            problems.append(f"{name}: changed since it was verified (sha256 {digest[:12]}..., "
                            f"manifest says {recorded[name][:12]}...)")
    if problems:
        raise SnapshotVerificationError(
            f"{pin.what} ({pin.repo}@{pin.revision}) in {folder}: " + "; ".join(problems)
            + f"\ndelete the named files and run `duplexeval {pin.command} fetch {pin.name}` again; no manifest was written",
            problems)
    all_pinned = pin.files is not None and all(f.sha256 for f in pin.files)
    origin = ("downloaded" if missing and len(missing) == len(names)
              else ("partly downloaded" if missing else "placed by hand"))
    write_manifest(pin, folder, hashes,
                   origin + ("" if all_pinned else "; sha256 recorded on first fetch (not all pinned by the spec)"),
                   manifest_extra)
    return folder
