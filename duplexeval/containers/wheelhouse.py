"""The wheelhouse of an image: exactly its pinned Python requirements, downloaded on the host.

Builds run with their network disabled, so everything pip installs inside one comes from
this folder (`pip install --no-index --find-links`). The wheels are resolved on the host
against the project's lock (`-c requirements/lock.txt`): an image gets the same versions
the harness was tested with. Two files per image folder:

- `requirements.txt`: installed with dependency resolution, inside the lock;
- `requirements-nodeps.txt` (optional): installed with `--no-deps` (moshi pins torch<2.10
  in its metadata although it runs on the lock's torch: issue 11).

An image whose upstream pins another stack than the harness (PersonaPlex: torch 2.4)
brings its own `constraints.txt`, used instead of the project's lock.

Downloads are kept in a cache keyed by those files, the lock and the host's Python, so a
second build stages the same bytes in a second. `wheelhouse.json` lists every file with
its sha256: the image label and the run manifest carry it.
"""

from __future__ import annotations

import errno
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

from duplexeval.io import atomic_write_json, sha256_file, sha256_json
from duplexeval.resources import bundle_root, wheelhouse_root

REPO_ROOT = bundle_root()  # a checkout, or an installed wheel's copy (duplexeval.resources)
LOCK = REPO_ROOT / "requirements" / "lock.txt"
REQUIREMENTS = "requirements.txt"
REQUIREMENTS_NODEPS = "requirements-nodeps.txt"
MANIFEST = "wheelhouse.json"
OWN_CONSTRAINTS = "constraints.txt"


class WheelhouseError(RuntimeError):
    """pip could not download an image's requirements; the message has pip's last lines."""


def _read(path: Path) -> str:
    return path.read_text("utf-8") if path.exists() else ""


def wheelhouse_key(image_dir: Path, lock: Path = LOCK) -> str:
    return sha256_json({
        "requirements": _read(image_dir / REQUIREMENTS), "nodeps": _read(image_dir / REQUIREMENTS_NODEPS),
        "lock": _read(lock), "python": f"{sys.version_info[0]}.{sys.version_info[1]}", "machine": platform.machine(),
    })


def _pip_download(args: list[str], dest: Path, what: str) -> None:
    cmd = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--only-binary=:all:",
           "-d", str(dest), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip() and "is ignored" not in ln]
        raise WheelhouseError(f"pip download of {what} failed (exit {proc.returncode}): {' | '.join(lines[-4:])}")


def constraints_for(image_dir: Path, lock: Path = LOCK) -> Path:
    """The image's own constraints.txt if it has one, else the project's lock."""
    own = image_dir / OWN_CONSTRAINTS
    return own if own.is_file() else lock


def ensure_wheelhouse(image_dir: Path, *, lock: Path = LOCK, progress: Callable[[str], None] = print) -> Path:
    """The cached wheelhouse folder of `image_dir`, downloading it once; complete or absent, never partial."""
    lock = constraints_for(image_dir, lock)
    key = wheelhouse_key(image_dir, lock)
    folder = wheelhouse_root() / key[:24]
    if (folder / MANIFEST).exists():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".partial-", dir=folder.parent))
    try:
        reqs, nodeps = image_dir / REQUIREMENTS, image_dir / REQUIREMENTS_NODEPS
        if reqs.exists():
            progress(f"wheelhouse: downloading {reqs.relative_to(REPO_ROOT) if reqs.is_relative_to(REPO_ROOT) else reqs} (inside {lock.name})")
            _pip_download(["-r", str(reqs), "-c", str(lock)], tmp, str(reqs))
        if nodeps.exists() and nodeps.read_text("utf-8").strip():
            progress(f"wheelhouse: downloading {nodeps.name} without dependencies")
            _pip_download(["--no-deps", "-r", str(nodeps)], tmp, str(nodeps))
        for name in (REQUIREMENTS, REQUIREMENTS_NODEPS):
            shutil.copyfile(image_dir / name, tmp / name) if (image_dir / name).exists() else (tmp / name).write_text("")
        files = {p.name: sha256_file(p) for p in sorted(tmp.iterdir()) if p.suffix == ".whl"}
        atomic_write_json(tmp / MANIFEST, {"schema": "duplexeval.wheelhouse/1", "key": key, "wheels": files})
        try:
            os.replace(tmp, folder)  # the manifest is inside: the folder appears complete or not at all
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST) or not (folder / MANIFEST).exists():
                raise
            shutil.rmtree(tmp, ignore_errors=True)  # a concurrent build finished the same key first: same wheels
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return folder


def stage_wheelhouse(image_dir: Path, dest: Path, *, lock: Path = LOCK,
                     progress: Callable[[str], None] = print) -> dict[str, Any]:
    """Copies (hard-links where possible) the image's wheelhouse into `dest`; returns its manifest."""
    src = ensure_wheelhouse(image_dir, lock=lock, progress=progress)
    dest.mkdir(parents=True, exist_ok=True)
    for p in src.iterdir():
        try:
            os.link(p, dest / p.name)
        except OSError:
            shutil.copyfile(p, dest / p.name)
    return json.loads((dest / MANIFEST).read_text("utf-8"))
