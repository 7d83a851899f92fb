"""Crash-safe file writes and JSON conventions shared by every stage.

A reader must never see a half-written file as complete, so every write goes to a
temporary file in the same folder and is renamed over the target (atomic on POSIX).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable


def canonical_json(obj: Any) -> str:
    """The one JSON spelling used for hashes and byte-identical outputs."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_json(obj: Any) -> str:
    return sha256_bytes(canonical_json(obj).encode("utf-8"))


def sha256_file(path: str | os.PathLike[str], chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a result file is as readable as any other
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


TEMP_GLOB = ".*.tmp"  # what atomic_write_bytes names its temp files: .<name>.<random>.tmp


def remove_abandoned_temp_files(folder: str | os.PathLike[str]) -> list[Path]:
    """Deletes the temp files atomic_write_* left in `folder` (not below it) when its process was
    killed between creating one and renaming it into place; returns them.

    Such a file never was the file it was to become (the rename is the commit), so nothing is
    lost. Only for a folder with one writer at a time, called before that writer writes: a
    concurrent writer's temp file would be taken from under it. Run folders qualify: their
    top-level files are written by the run's driver alone (items/ has its own rule: an
    unfinished item folder is redone whole)."""
    gone = []
    for tmp in sorted(Path(folder).glob(TEMP_GLOB)):
        if tmp.is_file() and not tmp.is_symlink():
            tmp.unlink(missing_ok=True)
            gone.append(tmp)
    return gone


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike[str], obj: Any, *, indent: int | None = 2) -> None:
    """Deterministic JSON (sorted keys, trailing newline) so reruns are byte-identical."""
    text = json.dumps(obj, sort_keys=True, indent=indent, ensure_ascii=False, allow_nan=False)
    atomic_write_text(path, text + "\n")


def atomic_write_jsonl(path: str | os.PathLike[str], rows: Iterable[Any]) -> None:
    atomic_write_text(path, "".join(canonical_json(r) + "\n" for r in rows))


def read_jsonl(path: str | os.PathLike[str]) -> list[Any]:
    """Reads a JSON-lines file; a malformed line is an error naming file and line."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: invalid JSON line: {exc.msg}") from None
    return rows
