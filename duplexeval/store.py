"""The content-addressed store of cached results (ASR transcripts, VAD episodes).

An entry is `<root>/<name>/<key[:2]>/<key>.json` holding `{"key", "components", <field>}`,
where `key = sha256_json(components)`: the components are the whole list of what the
result depends on (samples, settings, package versions), written beside it so a miss can
be explained by comparing them, and checked on every read, so an entry whose key does not
match its components (a hand edit, a torn copy) is logged and recomputed, never trusted.
Written once here, so every cache of a result keys, lays out and verifies entries alike.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from duplexeval.io import atomic_write_json, sha256_json
from duplexeval.resources import cache_root

log = logging.getLogger(__name__)


class ContentStore:
    """Entries of one kind (`name`: the subfolder of the cache root; `field`: the result's key in an entry)."""

    def __init__(self, name: str, field: str, root: Path | None = None):
        self.name, self.field, self._root = name, field, root

    @property
    def root(self) -> Path:
        """`root` as given, else `$DUPLEXEVAL_CACHE/<name>` (read at each use, so the variable may move it)."""
        return self._root if self._root is not None else cache_root() / self.name

    @staticmethod
    def key(components: dict[str, Any]) -> str:
        return sha256_json(components)

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, components: dict[str, Any]) -> Any | None:
        """The stored result for exactly these components, or None (absent, or failed its check)."""
        key = self.key(components)
        path = self.path(key)
        if not path.exists():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data["key"] != key or sha256_json(data["components"]) != key:
                raise ValueError("key does not match its components")
            return data[self.field]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("ignoring corrupt %s cache entry %s (%s); computing it again", self.name, path, exc)
            return None

    def put(self, components: dict[str, Any], result: Any) -> Path:
        """Writes the entry atomically; returns its path."""
        key = self.key(components)
        path = self.path(key)
        atomic_write_json(path, {"key": key, "components": components, self.field: result})
        return path
