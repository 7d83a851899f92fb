"""The judge cache: content-addressed verdicts that let an auditor replay every judgement.

Key = sha256 of canonical JSON of the key components (docs/judges.md):
{cache schema version, provider, model + snapshot, base_url, template sha256, rendered
messages, decoding parameters without transport fields, input artifact hashes, sample
index}. The model is in the key (lm-evaluation-harness once reported model B with model
A's cached answers); timeouts, retries and concurrency are not (inspect_ai's rule:
transport settings do not change what the model says).

Each entry is one JSON file `<root>/<key[:2]>/<key>.json`, written atomically (temp +
rename), holding the components next to the provider's raw answer, so
* a miss can be explained (which component differs from the nearest stored entry), and
* `verify` can recompute every key and check the answer's own hash.
A corrupt entry is never returned as a verdict: reads treat it as a miss (in replay, as a
hard error). Errors (timeouts, 5xx, exhausted retries) are never stored - only answers.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Literal

from duplexeval.io import atomic_write_json, sha256_json
from duplexeval.resources import cache_root

log = logging.getLogger(__name__)

CACHE_SCHEMA_VERSION = 1
Mode = Literal["off", "read", "write", "readwrite", "replay"]
MODES: tuple[str, ...] = ("off", "read", "write", "readwrite", "replay")
# Never part of a key even if someone puts them under `decoding`.
TRANSPORT_FIELDS = frozenset({"timeout", "timeout_s", "max_retries", "retries", "backoff_base_s",
                              "backoff_max_s", "concurrency", "stream"})


class CacheMiss(LookupError):
    """A replay-mode lookup found no usable entry; the message names the key and why."""


class CorruptEntry(ValueError):
    """A cache file that cannot be trusted (unreadable, or its hashes do not match)."""


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


@dataclass(frozen=True)
class Problem:
    path: Path
    problem: str


class JudgeCache:
    """Judge verdict cache in one of five modes.

    off: neither read nor write. read: use hits, do not store. write: always ask, store.
    readwrite: use hits, store new answers. replay: use hits; a miss is a hard error and
    no provider is ever contacted (the Judge does not even build a client).
    """

    def __init__(self, root: Path | str | None = None, mode: Mode = "readwrite") -> None:
        if mode not in MODES:
            raise ValueError(f"unknown judge cache mode {mode!r}; choose one of {', '.join(MODES)}")
        self.root = Path(root) if root is not None else default_cache_root()
        self.mode = mode

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
        return self.root / key[:2] / f"{key}.json"

    # -- reading ---------------------------------------------------------------------------

    def load(self, key: str) -> CacheEntry:
        """The entry stored under `key`; FileNotFoundError if absent, CorruptEntry if bad."""
        return load_entry(self.path(key), expected_key=key)

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
        atomic_write_json(self.path(key), {
            "cache_schema": CACHE_SCHEMA_VERSION,
            "key": key,
            "components": components,
            "response": response,
            "response_sha256": sha256_json(response),
            "meta": meta or {},
        })

    # -- inspection ------------------------------------------------------------------------

    def entry_paths(self) -> Iterator[Path]:
        if not self.root.exists():
            return iter(())
        return iter(sorted(p for p in self.root.glob("*/*.json") if not p.name.startswith(".")))

    def entries(self) -> Iterator[CacheEntry | Problem]:
        for path in self.entry_paths():
            try:
                yield load_entry(path, expected_key=path.stem)
            except (CorruptEntry, OSError) as exc:
                yield Problem(path, str(exc))

    def verify(self) -> list[Problem]:
        """Recomputes every key and answer hash; returns the entries that fail."""
        problems = [e for e in self.entries() if isinstance(e, Problem)]
        # Leftover temp files mean a writer died mid-write; harmless but worth reporting.
        if self.root.exists():
            problems += [Problem(p, "leftover temporary file") for p in sorted(self.root.glob("*/.*.tmp"))]
        return problems

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
        best: tuple[int, CacheEntry] | None = None
        for entry in self.entries():
            if isinstance(entry, Problem):
                continue
            diff = _differing(components, entry.components)
            if best is None or len(diff) < best[0]:
                best = (len(diff), entry)
        if best is None:
            return "the cache holds no entries. Wanted:\n" + describe_components(components)
        diff = _differing(components, best[1].components)
        return (f"nearest stored entry {best[1].key} differs in: {', '.join(diff)}. Wanted:\n"
                + describe_components(components))


def _differing(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    return sorted(k for k in set(a) | set(b) if sha256_json(a.get(k)) != sha256_json(b.get(k)))


def describe_components(components: dict[str, Any]) -> str:
    lines = []
    for name, value in components.items():
        if name == "messages":
            text = f"{len(value)} messages, sha256 {sha256_json(value)[:16]}"
        else:
            text = json.dumps(value, sort_keys=True, ensure_ascii=False)
        lines.append(f"  {name}: {text}")
    return "\n".join(lines)


def load_entry(path: Path, *, expected_key: str) -> CacheEntry:
    """Reads and checks one entry file: a bad file raises CorruptEntry, never returns."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptEntry(f"{path}: unreadable ({exc})") from None
    if not isinstance(data, dict):
        raise CorruptEntry(f"{path}: not a JSON object")
    try:
        key, components, response = data["key"], data["components"], data["response"]
        stored_response_hash, meta = data["response_sha256"], data.get("meta", {})
    except KeyError as exc:
        raise CorruptEntry(f"{path}: missing field {exc}") from None
    if data.get("cache_schema") != CACHE_SCHEMA_VERSION:
        raise CorruptEntry(f"{path}: cache schema {data.get('cache_schema')!r}, expected {CACHE_SCHEMA_VERSION}")
    if key != expected_key:
        raise CorruptEntry(f"{path}: stored key {key} does not match its file name {expected_key}")
    if not isinstance(components, dict) or cache_key(components) != key:
        raise CorruptEntry(f"{path}: key does not match its components (recomputed "
                           f"{cache_key(components) if isinstance(components, dict) else 'n/a'})")
    if not isinstance(response, dict) or not isinstance(response.get("text"), str) \
            or sha256_json(response) != stored_response_hash:
        raise CorruptEntry(f"{path}: the stored answer does not match its sha256")
    return CacheEntry(key, components, response, meta if isinstance(meta, dict) else {}, path)
