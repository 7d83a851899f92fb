"""The content-addressed store of cached results: judge verdicts, ASR transcripts, VAD
episodes, TTS clips, the cascade agent's transcripts and rendered stimulus folders.

An entry is `<root>/<key[:2]>/<key>.json` (root: `$DUPLEXEVAL_CACHE/<name>` unless given)
holding `{"key", "components", <field>, ...}`, where `key = sha256_json(components)`: the
components are the whole list of what the result depends on (samples, settings, package
versions), written beside it so a miss can be explained by comparing them with the nearest
stored entry, and checked on every read, so an entry whose key does not match its
components or its file name (a hand edit, a torn copy) is never trusted. A result that is
a file (a TTS clip) sits beside its entry as `<key><suffix>`, and the entry's `field` holds
the file's sha256, checked on read too; a result that is a folder (a rendered data set)
sits beside it as `<key>/` and the entry holds {relative path: sha256} of every file in it,
checked on read (a file added, removed or changed is a miss). Written once here, so every cache keys, lays out,
verifies and explains its entries alike; a kind that needs more (the judge cache's answer
hash and schema version, duplexeval/judges/cache.py) checks it on top of `read`.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from duplexeval.io import atomic_write_json, sha256_file, sha256_json
from duplexeval.resources import cache_root

log = logging.getLogger(__name__)


class CorruptEntry(ValueError):
    """A store file that cannot be trusted (unreadable, or its hashes do not match)."""


@dataclass(frozen=True)
class Problem:
    """An entry `verify` (or a listing) found wanting, with why."""

    path: Path
    problem: str


FOLDER = "/"   # the blob suffix of a kind whose result is a folder beside its entry

# Every kind of cached result: its subfolder name -> (the result's field, the suffix of a
# result kept as a file). Written once, so `duplexeval cache --store` reaches each alike.
KINDS: dict[str, tuple[str, str | None]] = {
    "judges": ("response", None),        # judge verdicts (duplexeval/judges/cache.py adds its checks)
    "asr": ("transcript", None),         # ASR transcripts with word timings (duplexeval/judges/asr.py)
    "vad": ("episodes", None),           # VAD speech episodes (duplexeval/judges/vad_cache.py)
    "tts": ("wav_sha256", ".wav"),       # TTS clips (duplexeval/tts.py)
    "cascade-asr": ("text", None),       # the cascade agent's transcripts (duplexeval/agents/cascade.py)
    "renders": ("files", FOLDER),        # rendered stimulus folders (a family's embedded data set, e.g. FDB's)
}


class ContentStore:
    """Entries of one kind (`name`: the subfolder of the cache root; `field`: the result's key in
    an entry; `blob_suffix`: set when the result is a file beside the entry, e.g. ".wav")."""

    def __init__(self, name: str, field: str, root: Path | str | None = None, *, blob_suffix: str | None = None):
        self.name, self.field, self.blob_suffix = name, field, blob_suffix
        self._root = Path(root) if root is not None else None

    @classmethod
    def of(cls, kind: str, root: Path | str | None = None) -> ContentStore:
        """The store of one of the `KINDS` (`root`: its folder, else `$DUPLEXEVAL_CACHE/<kind>`)."""
        if kind not in KINDS:
            raise ValueError(f"unknown cache store {kind!r}; choose one of {', '.join(KINDS)}")
        field, suffix = KINDS[kind]
        return cls(kind, field, root, blob_suffix=suffix)

    @property
    def root(self) -> Path:
        """`root` as given, else `$DUPLEXEVAL_CACHE/<name>` (read at each use, so the variable may move it)."""
        return self._root if self._root is not None else cache_root() / self.name

    @staticmethod
    def key(components: dict[str, Any]) -> str:
        return sha256_json(components)

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def blob_path(self, key: str) -> Path:
        """The file a blob store keeps beside the entry of `key`."""
        if self.blob_suffix is None:
            raise ValueError(f"the {self.name} store keeps no files beside its entries")
        if self.blob_suffix == FOLDER:
            return self.root / key[:2] / key
        return self.root / key[:2] / f"{key}{self.blob_suffix}"

    # -- reading ---------------------------------------------------------------------------

    def read(self, key: str) -> dict[str, Any]:
        """The entry stored under `key`, checked: FileNotFoundError when absent, CorruptEntry when
        its key does not match its file name or its components, or its file its sha256."""
        path = self.path(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CorruptEntry(f"{path}: unreadable ({exc})") from None
        if not isinstance(data, dict):
            raise CorruptEntry(f"{path}: not a JSON object")
        for name in ("key", "components", self.field):
            if name not in data:
                raise CorruptEntry(f"{path}: missing field {name!r}")
        components = data["components"]
        if data["key"] != key:
            raise CorruptEntry(f"{path}: stored key {data['key']} does not match its file name {key}")
        if not isinstance(components, dict) or self.key(components) != key:
            raise CorruptEntry(f"{path}: key does not match its components (recomputed "
                               f"{self.key(components) if isinstance(components, dict) else 'n/a'})")
        if self.blob_suffix == FOLDER:
            folder = self.blob_path(key)
            if not folder.is_dir():
                raise CorruptEntry(f"{path}: its folder {folder.name}/ is missing")
            if folder_hashes(folder) != data[self.field]:
                raise CorruptEntry(f"{folder}: its files do not match the sha256s its entry records")
        elif self.blob_suffix is not None:
            blob = self.blob_path(key)
            if not blob.is_file():
                raise CorruptEntry(f"{path}: its file {blob.name} is missing")
            if sha256_file(blob) != data[self.field]:
                raise CorruptEntry(f"{blob}: does not match the sha256 its entry records")
        return data

    def get(self, components: dict[str, Any]) -> Any | None:
        """The stored result for exactly these components (a blob store: the file's path), or None
        (absent, or failed its check: logged, and the caller computes it again)."""
        key = self.key(components)
        try:
            data = self.read(key)
        except FileNotFoundError:
            return None
        except CorruptEntry as exc:
            log.warning("ignoring corrupt %s cache entry (%s); computing it again", self.name, exc)
            return None
        return self.blob_path(key) if self.blob_suffix is not None else data[self.field]

    # -- writing ---------------------------------------------------------------------------

    def put(self, components: dict[str, Any], result: Any, **extra: Any) -> Path:
        """Writes the entry atomically (`extra`: more fields a kind keeps beside the result); returns its path."""
        key = self.key(components)
        path = self.path(key)
        atomic_write_json(path, {**extra, "key": key, "components": components, self.field: result})
        return path

    def put_file(self, components: dict[str, Any], write: Callable[[Path], None]) -> Path:
        """A blob store's put: `write(path)` writes the result file (atomically), then the entry
        records its sha256. Returns the file's path."""
        blob = self.blob_path(self.key(components))
        write(blob)
        self.put(components, sha256_file(blob))
        return blob

    def put_folder(self, components: dict[str, Any], write: Callable[[Path], object]) -> Path:
        """A folder store's put: `write(path)` fills a new folder, renamed into place, then the entry
        records every file's sha256. Returns the folder. Another writer of the same key that got
        there first wins (its folder is complete: it was renamed into place whole)."""
        done = self.get(components)
        if done is not None:
            return Path(done)
        folder = self.blob_path(self.key(components))
        tmp = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.parent.mkdir(parents=True, exist_ok=True)
        try:
            write(tmp)
            if folder.exists():
                shutil.rmtree(folder)   # a folder whose entry failed its check (the caller got a miss)
            tmp.rename(folder)
        except OSError:
            if not folder.is_dir():
                raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        self.put(components, folder_hashes(folder))
        return folder

    # -- inspection ------------------------------------------------------------------------

    def entry_paths(self) -> Iterator[Path]:
        if not self.root.exists():
            return iter(())
        return iter(sorted(p for p in self.root.glob("*/*.json") if not p.name.startswith(".")))

    def entries(self) -> Iterator[dict[str, Any] | Problem]:
        """Every entry, checked (a Problem for each that fails), in key order."""
        for path in self.entry_paths():
            try:
                yield self.read(path.stem)
            except (CorruptEntry, OSError) as exc:
                yield Problem(path, str(exc))

    def verify(self) -> list[Problem]:
        """Rechecks every entry; returns those that fail, and temp files a dead writer left."""
        problems = [e for e in self.entries() if isinstance(e, Problem)]
        if self.root.exists():
            problems += [Problem(p, "leftover temporary file") for p in sorted(self.root.glob("*/.*.tmp"))]
        return problems

    def explain(self, key: str) -> str:
        """The components behind a stored key, readable."""
        try:
            data = self.read(key)
        except FileNotFoundError:
            return f"key {key}: not in {self.root}"
        except CorruptEntry as exc:
            return f"key {key}: corrupt entry ({exc})"
        return f"key {key}:\n" + describe_components(data["components"])

    def explain_miss(self, components: dict[str, Any]) -> str:
        """Which components differ from the closest stored entry: why these components missed."""
        best: tuple[list[str], dict[str, Any]] | None = None
        for entry in self.entries():
            if isinstance(entry, Problem):
                continue
            diff = differing(components, entry["components"])
            if best is None or len(diff) < len(best[0]):
                best = (diff, entry)
        if best is None:
            return f"the {self.name} store ({self.root}) holds no entries. Wanted:\n" + describe_components(components)
        if not best[0]:
            return f"stored as {best[1]['key']} (no component differs). Wanted:\n" + describe_components(components)
        return (f"nearest stored entry {best[1]['key']} differs in: {', '.join(best[0])}. Wanted:\n"
                + describe_components(components))


def folder_hashes(folder: Path) -> dict[str, str]:
    """{path relative to `folder`: sha256} of every file under it, in path order."""
    return {p.relative_to(folder).as_posix(): sha256_file(p) for p in sorted(folder.rglob("*")) if p.is_file()}


def differing(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """The top-level components whose values differ between two entries."""
    return sorted(k for k in set(a) | set(b) if sha256_json(a.get(k)) != sha256_json(b.get(k)))


def describe_components(components: dict[str, Any]) -> str:
    """One line per component; a judge's rendered messages by their count and sha256."""
    lines = []
    for name, value in components.items():
        if name == "messages" and isinstance(value, list):
            text = f"{len(value)} messages, sha256 {sha256_json(value)[:16]}"
        else:
            text = json.dumps(value, sort_keys=True, ensure_ascii=False)
        lines.append(f"  {name}: {text}")
    return "\n".join(lines)
