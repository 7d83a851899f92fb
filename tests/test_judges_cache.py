"""The judge cache: what is in the key, corrupt entries, modes, and `duplexeval cache`."""

from __future__ import annotations

import json
import shutil

import pytest
from _judge_server import FakeLLMServer
from _judge_specs import SPECS, local_spec
from click.testing import CliRunner

from duplexeval.commands.cache import cache_group
from duplexeval.judges.cache import CacheMiss, JudgeCache, cache_key, key_components
from duplexeval.judges.llm import Judge

INPUTS = {"question": "Which is cheapest?", "gold_answer": "The taco place.", "transcript": "Tacos."}


@pytest.fixture()
def server(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-cache-0123456789")
    srv = FakeLLMServer().start()
    yield srv
    srv.stop()


def key_of(server, tmp_path, inputs=INPUTS, template_dir=None, **overrides) -> str:
    data, path = local_spec("mtr-instruction-gpt4o", server.url, **overrides)
    if template_dir is not None:
        path = template_dir / "mtr-instruction-gpt4o.yaml"
    return Judge.from_spec(data, path, JudgeCache(tmp_path, "off")).key_for(inputs)[0]


def test_model_template_and_one_input_byte_change_the_key(tmp_path, server):
    base = key_of(server, tmp_path)
    assert key_of(server, tmp_path) == base
    assert key_of(server, tmp_path, model="gpt-4o-mini") != base
    assert key_of(server, tmp_path, snapshot="gpt-4o-2024-11-20") != base
    assert key_of(server, tmp_path, decoding={"temperature": 0.5, "max_tokens": 256, "seed": 0}) != base
    assert key_of(server, tmp_path, inputs=dict(INPUTS, transcript="Tacos!")) != base
    # the template: same rendered text is not enough, the file's bytes are in the key
    copy = tmp_path / "specs"
    shutil.copytree(SPECS / "prompts", copy / "prompts")
    assert key_of(server, tmp_path, template_dir=copy) == base
    template = copy / "prompts" / "mtr-instruction.j2"
    template.write_text(template.read_text() + "{# a comment that renders to nothing #}\n")
    assert key_of(server, tmp_path, template_dir=copy) != base


def test_transport_settings_do_not_change_the_key(tmp_path, server):
    base = key_of(server, tmp_path)
    assert key_of(server, tmp_path, transport={"timeout_s": 99, "max_retries": 0}) == base
    assert key_of(server, tmp_path, transport={"max_retries": 20, "concurrency": 1, "backoff_base_s": 5}) == base


def test_artifact_hashes_are_part_of_the_key(tmp_path, server):
    data, path = local_spec("mtr-instruction-gpt4o", server.url)
    judge = Judge.from_spec(data, path, JudgeCache(tmp_path, "off"))
    wav = tmp_path / "recording.wav"
    wav.write_bytes(b"RIFF....one")
    first = judge.key_for(INPUTS, {"recording": str(wav)})[0]
    wav.write_bytes(b"RIFF....two")
    assert judge.key_for(INPUTS, {"recording": str(wav)})[0] != first
    assert judge.key_for(INPUTS)[0] != first


def test_transport_fields_are_stripped_from_decoding():
    kw = dict(provider="openai", model="m", snapshot=None, base_url="u", template_sha256="t",
              messages=[{"role": "user", "content": "x"}], artifacts={})
    plain = key_components(decoding={"temperature": 0}, **kw)
    noisy = key_components(decoding={"temperature": 0, "timeout": 5, "max_retries": 9}, **kw)
    assert cache_key(plain) == cache_key(noisy)


def _filled_cache(tmp_path, server, n=3) -> tuple[JudgeCache, Judge]:
    cache = JudgeCache(tmp_path / "cache", "readwrite")
    data, path = local_spec("mtr-instruction-gpt4o", server.url)
    judge = Judge.from_spec(data, path, cache)
    for i in range(n):
        judge.decide(dict(INPUTS, transcript=f"answer {i}"))
    return cache, judge


@pytest.mark.parametrize("damage", ["truncate", "flip-verdict", "swap-components", "not-json"])
def test_a_corrupted_entry_is_reported_by_verify_and_never_returned(tmp_path, server, damage):
    cache, judge = _filled_cache(tmp_path, server)
    key = judge.key_for(dict(INPUTS, transcript="answer 1"))[0]
    path = cache.path(key)
    text = path.read_text()
    if damage == "truncate":
        path.write_text(text[: len(text) // 2])
    elif damage == "flip-verdict":
        path.write_text(text.replace('\\"correct\\"', '\\"incorrect\\"'))
    elif damage == "swap-components":
        data = json.loads(text)
        data["components"]["model"] = "another-model"
        path.write_text(json.dumps(data))
    else:
        path.write_bytes(b"\x00\xff garbage")
    assert path.read_bytes() != text.encode()

    result = CliRunner().invoke(cache_group, ["verify", "--root", str(cache.root)])
    assert result.exit_code == 1, result.output
    assert key in result.output and "1 problem" in result.output

    requests_before = len(server.requests)
    server.default_text = '{"verdict": "incorrect", "reason": "asked again"}'
    verdict = judge.decide(dict(INPUTS, transcript="answer 1"))
    assert not verdict.from_cache and verdict.reason == "asked again"
    assert len(server.requests) == requests_before + 1  # re-asked, and the entry is rewritten
    assert CliRunner().invoke(cache_group, ["verify", "--root", str(cache.root)]).exit_code == 0


def test_replay_refuses_a_corrupt_entry(tmp_path, server):
    cache, judge = _filled_cache(tmp_path, server, n=1)
    key = judge.key_for(dict(INPUTS, transcript="answer 0"))[0]
    cache.path(key).write_text("{}")
    data, path = local_spec("mtr-instruction-gpt4o", server.url)
    replay = Judge.from_spec(data, path, JudgeCache(cache.root, "replay"))
    with pytest.raises(CacheMiss, match=f"{key} is corrupt"):
        replay.decide(dict(INPUTS, transcript="answer 0"))


def test_modes(tmp_path, server):
    data, path = local_spec("mtr-instruction-gpt4o", server.url)
    root = tmp_path / "c"
    Judge.from_spec(data, path, JudgeCache(root, "off")).decide(INPUTS)
    assert list(JudgeCache(root).entry_paths()) == []
    Judge.from_spec(data, path, JudgeCache(root, "read")).decide(INPUTS)
    assert list(JudgeCache(root).entry_paths()) == []
    Judge.from_spec(data, path, JudgeCache(root, "write")).decide(INPUTS)
    Judge.from_spec(data, path, JudgeCache(root, "write")).decide(INPUTS)  # write never reads
    assert len(list(JudgeCache(root).entry_paths())) == 1 and len(server.requests) == 4
    assert Judge.from_spec(data, path, JudgeCache(root, "read")).decide(INPUTS).from_cache
    assert len(server.requests) == 4
    with pytest.raises(ValueError, match="unknown judge cache mode"):
        JudgeCache(root, "sometimes")


def test_a_replay_miss_is_explained(tmp_path, server):
    cache, _ = _filled_cache(tmp_path, server, n=1)
    data, path = local_spec("mtr-instruction-gpt4o", server.url, model="gpt-4o-mini")
    judge = Judge.from_spec(data, path, JudgeCache(cache.root, "replay"))
    with pytest.raises(CacheMiss) as err:
        judge.decide(dict(INPUTS, transcript="answer 0"))
    assert "differs in: model" in str(err.value)
    key = next(cache.entry_paths()).stem
    assert "model: \"gpt-4o\"" in cache.explain(key)


def test_ls_prune_and_export(tmp_path, server):
    cache, _ = _filled_cache(tmp_path, server, n=3)
    runner = CliRunner()
    listing = runner.invoke(cache_group, ["ls", "--root", str(cache.root)])
    assert listing.exit_code == 0 and listing.output.count("mtr-instruction-gpt4o") == 3
    victim = next(cache.entry_paths())
    victim.write_text("broken")
    exported = runner.invoke(cache_group, ["export", "--root", str(cache.root), str(tmp_path / "golden")])
    assert exported.exit_code == 1 and "exported 2 entries" in exported.output
    assert runner.invoke(cache_group, ["verify", "--root", str(tmp_path / "golden")]).exit_code == 0
    assert runner.invoke(cache_group, ["prune", "--root", str(cache.root)]).exit_code != 0  # needs a condition
    pruned = runner.invoke(cache_group, ["prune", "--root", str(cache.root), "--corrupt", "--yes"])
    assert pruned.exit_code == 0 and "1 entries pruned" in pruned.output and not victim.exists()
    assert runner.invoke(cache_group, ["verify", "--root", str(cache.root)]).exit_code == 0
