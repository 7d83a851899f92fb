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


def test_a_miss_is_explained_by_the_components_that_differ(tmp_path):
    store = ContentStore("vad", "episodes", tmp_path)
    assert "holds no entries" in store.explain_miss(COMPONENTS)
    store.put(COMPONENTS, [[0.5, 1.25]])
    store.put({**COMPONENTS, "v": 2, "audio_sha256": "cd" * 32}, [])
    why = store.explain_miss({**COMPONENTS, "params": {"threshold": 0.6}})
    assert f"nearest stored entry {sha256_json(COMPONENTS)} differs in: params." in why
    assert '  params: {"threshold": 0.6}' in why  # the wanted components, listed


def test_a_file_result_is_checked_against_the_sha256_its_entry_records(tmp_path, caplog):
    store = ContentStore("tts", "wav_sha256", tmp_path, blob_suffix=".wav")
    clip = store.put_file(COMPONENTS, lambda p: (p.parent.mkdir(parents=True, exist_ok=True), p.write_bytes(b"RIFF1")))
    key = sha256_json(COMPONENTS)
    assert clip == tmp_path / key[:2] / f"{key}.wav" and store.get(COMPONENTS) == clip
    clip.write_bytes(b"RIFF2")  # the clip changed under its entry
    assert store.get(COMPONENTS) is None and "does not match the sha256 its entry records" in caplog.text
    assert [p.problem for p in store.verify()] == [f"{clip}: does not match the sha256 its entry records"]
    clip.unlink()
    assert "is missing" in store.verify()[0].problem


def test_a_flat_layout_tts_clip_is_adopted_not_synthesised_again(tmp_path, monkeypatch):
    """Clips cached before the store (`<key>.wav` under the tts folder) keep serving: moved into
    the store with an entry, under the same key."""
    from duplexeval import tts

    fresh = tts.synthesize("Hello there.", "slt", 16000, cache_dir=tmp_path / "new")
    [clip] = (tmp_path / "new").glob("*/*.wav")
    old = tmp_path / "old"
    old.mkdir()
    (old / clip.name).write_bytes(clip.read_bytes())
    monkeypatch.setattr(tts, "flite_binary", lambda: (_ for _ in ()).throw(AssertionError("synthesised again")))
    adopted = tts.synthesize("Hello there.", "slt", 16000, cache_dir=old)
    assert (adopted == fresh).all() and not (old / clip.name).exists()
    assert (old / clip.name[:2] / clip.name).is_file() and (old / clip.name[:2] / f"{clip.stem}.json").is_file()


def test_the_cache_command_verifies_and_explains_any_store(tmp_path):
    """`duplexeval cache --store vad`: verify finds a damaged entry; explain lists a stored entry's
    components and explains a miss by the components that differ."""
    from click.testing import CliRunner

    from duplexeval.commands.cache import cache_group

    store = ContentStore.of("vad", tmp_path)
    path = store.put(COMPONENTS, [[0.5, 1.25]])
    runner = CliRunner()
    ok = runner.invoke(cache_group, ["verify", "--store", "vad", "--root", str(tmp_path)])
    assert ok.exit_code == 0 and "verified 1 entries" in ok.output
    shown = runner.invoke(cache_group, ["explain", "--store", "vad", "--root", str(tmp_path), path.stem])
    assert shown.exit_code == 0 and '  params: {"threshold": 0.5}' in shown.output
    wanted = tmp_path / "wanted.json"
    wanted.write_text(json.dumps({**COMPONENTS, "params": {"threshold": 0.6}}))
    miss = runner.invoke(cache_group, ["explain", "--store", "vad", "--root", str(tmp_path), "--components", str(wanted)])
    assert miss.exit_code == 0 and "a miss" in miss.output and "differs in: params" in miss.output
    path.write_text(path.read_text().replace("0.5", "0.9"))
    bad = runner.invoke(cache_group, ["verify", "--store", "vad", "--root", str(tmp_path)])
    assert bad.exit_code == 1 and "key does not match its components" in bad.output


def test_a_folder_result_is_checked_file_by_file(tmp_path):
    """A rendered data set (FDB's embedded set) is a folder beside its entry: every file's sha256
    is in the entry, and a file changed, added or removed by hand is a miss, rendered again."""
    from duplexeval.store import ContentStore

    store = ContentStore.of("renders", tmp_path / "renders")
    calls = []

    def write(out):
        calls.append(out)
        (out / "sub").mkdir(parents=True)
        (out / "sub" / "input.wav").write_bytes(b"RIFF-one")
        (out / "meta.json").write_text("{}")

    components = {"renderer": "toy", "v": 1}
    folder = store.put_folder(components, write)
    assert folder.is_dir() and store.get(components) == folder and len(calls) == 1
    assert store.read(store.key(components))["files"] == {
        "meta.json": _sha256(b"{}"), "sub/input.wav": _sha256(b"RIFF-one")}
    assert store.put_folder(components, write) == folder and len(calls) == 1   # a hit renders nothing
    (folder / "sub" / "input.wav").write_bytes(b"RIFF-two")
    assert store.get(components) is None
    assert [p.problem for p in store.verify()] == [f"{folder}: its files do not match the sha256s its entry records"]
    store.put_folder(components, write)
    assert len(calls) == 2 and store.get(components) == folder and store.verify() == []
    (folder / "extra.txt").write_text("x")
    assert store.get(components) is None


def _sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()
