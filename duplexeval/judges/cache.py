"""The judge cache: content-addressed verdicts that let an auditor replay every judgement.

Key = sha256 of canonical JSON of the key components (docs/judges.md):
{cache schema version, provider, model + snapshot, base_url, template sha256, rendered
messages, decoding parameters without transport fields, input artifact hashes, sample
index}. The model is in the key (lm-evaluation-harness once reported model B with model
A's cached answers); timeouts, retries and concurrency are not (inspect_ai's rule:
transport settings do not change what the model says).

Each entry is one JSON file `<root>/<key[:2]>/<key>.json` of the shared content store
(duplexeval/store.py, `ContentStore("judges", "response")`: the same layout, keying and
checks as the ASR, VAD and TTS caches), written atomically (temp + rename), holding the
components next to the provider's raw answer, so
* a miss can be explained (which component differs from the nearest stored entry), and
* `verify` can recompute every key and check the answer's own hash.
A corrupt entry is never returned as a verdict: reads treat it as a miss (in replay, as a
hard error). Errors (timeouts, 5xx, exhausted retries) are never stored - only answers.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Literal, cast

from duplexeval.io import sha256_json
from duplexeval.resources import cache_root
from duplexeval.store import ContentStore, CorruptEntry, Problem, describe_components

__all__ = ["CACHE_SCHEMA_VERSION", "MODES", "TRANSPORT_FIELDS", "CacheEntry", "CacheMiss", "CorruptEntry", "JudgeCache",
           "Mode", "Problem", "cache_key", "default_cache_root", "describe_components", "key_components"]

log = logging.getLogger(__name__)

CACHE_SCHEMA_VERSION = 1
Mode = Literal["off", "read", "write", "readwrite", "replay"]
MODES: tuple[str, ...] = ("off", "read", "write", "readwrite", "replay")
# Never part of a key even if someone puts them under `decoding`.
TRANSPORT_FIELDS = frozenset({"timeout", "timeout_s", "max_retries", "retries", "backoff_base_s",
                              "backoff_max_s", "concurrency", "stream"})


class CacheMiss(LookupError):
    """A replay-mode lookup found no usable entry; the message names the key and why."""


def default_cache_root() -> Path:
    """`.cache/judges` under `$DUPLEXEVAL_CACHE` (default ./.cache), like TTS and ASR."""
    return cache_root() / "judges"


def key_components(*, provider: str, model: str, snapshot: str | None, base_url: str | None,
                   template_sha256: str, messages: list[dict[str, str]], decoding: dict[str, Any],
                   artifacts: dict[str, str], sample: int = 0) -> dict[str, Any]:
    """The dict whose canonical-JSON sha256 is the key; every field is a reason to re-ask."""
    return {
        "cache_schema": CACHE_SCHEMA_VERSION,
        "provider": provider,
        "model": model,
        "snapshot": snapshot,
        "base_url": base_url,
        "template_sha256": template_sha256,
        "messages": messages,
        "decoding": {k: v for k, v in sorted(decoding.items()) if k not in TRANSPORT_FIELDS},
        "artifacts": dict(sorted(artifacts.items())),
        "sample": sample,
    }


def cache_key(components: dict[str, Any]) -> str:
    return sha256_json(components)


@dataclass(frozen=True)
class CacheEntry:
    key: str
    components: dict[str, Any]
    response: dict[str, Any]  # {"text": raw answer, "model": model the provider reported}
    meta: dict[str, Any]  # judge id and label: useful for `cache ls`, not part of the key
    path: Path


class JudgeCache:
    """Judge verdict cache in one of five modes.

    off: neither read nor write. read: use hits, do not store. write: always ask, store.
    readwrite: use hits, store new answers. replay: use hits; a miss is a hard error and
    no provider is ever contacted (the Judge does not even build a client).
    """

    def __init__(self, root: Path | str | None = None, mode: Mode | str = "readwrite") -> None:
        # `mode` as a string: it comes from the CLI's --cache-mode and a spec; checked here.
        if mode not in MODES:
            raise ValueError(f"unknown judge cache mode {mode!r}; choose one of {', '.join(MODES)}")
        self.root = Path(root) if root is not None else default_cache_root()
        self.mode: Mode = cast(Mode, mode)
        self.store = ContentStore.of("judges", self.root)

    @property
    def reads(self) -> bool:
        return self.mode in ("read", "readwrite", "replay")

    @property
    def writes(self) -> bool:
        return self.mode in ("write", "readwrite")

    @property
    def replay(self) -> bool:
        return self.mode == "replay"

    def path(self, key: str) -> Path:
        return self.store.path(key)

    # -- reading ---------------------------------------------------------------------------

    def load(self, key: str) -> CacheEntry:
        """The entry stored under `key`; FileNotFoundError if absent, CorruptEntry if bad."""
        return _checked(self.store, key)

    def get(self, key: str, components: dict[str, Any]) -> CacheEntry | None:
        """A trustworthy hit, or None (replay: CacheMiss instead of None)."""
        if not self.reads:
            return None
        try:
            return self.load(key)
        except FileNotFoundError:
            if self.replay:
                raise CacheMiss(f"judge cache miss in replay mode: key {key} is not in {self.root}\n"
                                f"{self.explain_miss(components)}") from None
        except CorruptEntry as exc:
            if self.replay:
                raise CacheMiss(f"judge cache entry {key} is corrupt, refusing to replay it: {exc}") from None
            log.warning("ignoring corrupt judge cache entry %s: %s", self.path(key), exc)
        return None

    # -- writing ---------------------------------------------------------------------------

    def put(self, key: str, components: dict[str, Any], response: dict[str, Any],
            meta: dict[str, Any] | None = None) -> None:
        """Stores an answer (never an error). No-op unless the mode writes."""
        if not self.writes:
            return
        if cache_key(components) != key:
            raise ValueError("refusing to store an entry whose key does not match its components")
        self.store.put(components, response, cache_schema=CACHE_SCHEMA_VERSION,
                       response_sha256=sha256_json(response), meta=meta or {})

    # -- inspection ------------------------------------------------------------------------

    def entry_paths(self) -> Iterator[Path]:
        return self.store.entry_paths()

    def entries(self) -> Iterator[CacheEntry | Problem]:
        for path in self.entry_paths():
            try:
                yield _checked(self.store, path.stem)
            except (CorruptEntry, OSError) as exc:
                yield Problem(path, str(exc))

    def verify(self) -> list[Problem]:
        """Recomputes every key and answer hash; returns the entries that fail (and temp files a
        writer that died mid-write left: harmless but worth reporting)."""
        problems = [e for e in self.entries() if isinstance(e, Problem)]
        return problems + [p for p in self.store.verify() if p.problem == "leftover temporary file"]

    def explain(self, key: str) -> str:
        """The components behind a stored key, readable."""
        try:
            entry = self.load(key)
        except FileNotFoundError:
            return f"key {key}: not in {self.root}"
        except CorruptEntry as exc:
            return f"key {key}: corrupt entry ({exc})"
        return f"key {key} ({entry.meta.get('judge_id', 'unknown judge')}):\n" + describe_components(entry.components)

    def explain_miss(self, components: dict[str, Any]) -> str:
        """Which components differ from the closest stored entry (a miss explained)."""
        return self.store.explain_miss(components)


def _checked(store: ContentStore, key: str) -> CacheEntry:
    """The store's checks (key, components, file name), then the judge's own: the schema version
    and the stored answer against its sha256. A bad file raises CorruptEntry, never returns."""
    path = store.path(key)
    data = store.read(key)
    response, meta = data["response"], data.get("meta", {})
    if "response_sha256" not in data:
        raise CorruptEntry(f"{path}: missing field 'response_sha256'")
    if data.get("cache_schema") != CACHE_SCHEMA_VERSION:
        raise CorruptEntry(f"{path}: cache schema {data.get('cache_schema')!r}, expected {CACHE_SCHEMA_VERSION}")
    if not isinstance(response, dict) or not isinstance(response.get("text"), str) \
            or sha256_json(response) != data["response_sha256"]:
        raise CorruptEntry(f"{path}: the stored answer does not match its sha256")
    return CacheEntry(key, data["components"], response, meta if isinstance(meta, dict) else {}, path)
