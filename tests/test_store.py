"""The content-addressed store (duplexeval.store): an entry is found by its components only,
and one whose key does not match them is never trusted."""

from __future__ import annotations

import json

from duplexeval.io import sha256_json
from duplexeval.store import ContentStore

COMPONENTS = {"v": 1, "audio_sha256": "ab" * 32, "params": {"threshold": 0.5}}


def test_an_entry_is_read_back_by_its_components_and_names_them(tmp_path):
    store = ContentStore("vad", "episodes", tmp_path)
    path = store.put(COMPONENTS, [[0.5, 1.25]])
    key = sha256_json(COMPONENTS)
    assert path == tmp_path / key[:2] / f"{key}.json"
    assert json.loads(path.read_text()) == {"key": key, "components": COMPONENTS, "episodes": [[0.5, 1.25]]}
    assert store.get(COMPONENTS) == [[0.5, 1.25]]


def test_other_components_miss(tmp_path):
    store = ContentStore("vad", "episodes", tmp_path)
    store.put(COMPONENTS, [[0.5, 1.25]])
    assert store.get({**COMPONENTS, "params": {"threshold": 0.6}}) is None


def test_an_entry_whose_components_were_edited_is_not_trusted(tmp_path, caplog):
    store = ContentStore("vad", "episodes", tmp_path)
    path = store.put(COMPONENTS, [[0.5, 1.25]])
    data = json.loads(path.read_text())
    data["components"]["params"]["threshold"] = 0.9  # the key no longer names these components
    path.write_text(json.dumps(data))
    assert store.get(COMPONENTS) is None
    assert "ignoring corrupt vad cache entry" in caplog.text


def test_a_torn_entry_is_not_trusted(tmp_path):
    store = ContentStore("asr", "transcript", tmp_path)
    path = store.put(COMPONENTS, {"text": "hi"})
    path.write_text(path.read_text()[:20])
    assert store.get(COMPONENTS) is None


def test_the_default_root_follows_the_cache_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("DUPLEXEVAL_CACHE", str(tmp_path / "c"))
    assert ContentStore("asr", "transcript").root == tmp_path / "c" / "asr"
