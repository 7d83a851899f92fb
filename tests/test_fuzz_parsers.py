"""Every parser of untrusted bytes, fuzzed: each fails only with its own named error.

Frames and control messages (both ends use these decoders), spec YAML and scene files
(`file:line: field: message`), MTR dialogue sidecars, judge verdicts (unparseable is a
verdict state, never an exception) and judge cache entries (corrupt is reported, never
returned). Settings: tests/fuzz_settings.py.
"""

from __future__ import annotations

import json
import re

from fuzz_settings import fuzz
from hypothesis import given, strategies as st

from duplexeval.benchmarks.mpe.scenes.loader import load_scene
from duplexeval.benchmarks.mtr.format import DialogueFormatError, load_dialogue
from duplexeval.judges.cache import CorruptEntry, JudgeCache, cache_key
from duplexeval.judges.verdict import parse_verdict
from duplexeval.protocol.control import ControlError, parse_control
from duplexeval.protocol.wire import FrameError, decode_frame, encode_frame
from duplexeval.specs import SpecErrors, load_spec
from duplexeval.specs.errors import SpecError

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**40, 2**40) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda kids: st.lists(kids, max_size=5) | st.dictionaries(st.text(max_size=10), kids, max_size=5),
    max_leaves=20)
CONTROL_TYPES = ["hello", "ready", "end", "done", "reset", "snapshot", "restore", "error", "text", "state", "label"]
SPEC_LINE = re.compile(r"^.+:\d+: [^:]+: .+", re.DOTALL)


@fuzz()
@given(st.binary(max_size=64))
def test_any_binary_message_is_a_frame_or_a_frame_error(data):
    try:
        frame = decode_frame(data)
    except FrameError:
        return
    assert encode_frame(frame.kind, frame.frame_idx, frame.pcm, frame.flags) == data


@fuzz()
@given(st.one_of(st.binary(max_size=64), st.text(max_size=64),
                 st.builds(lambda t, body: json.dumps({"type": t, **body}), st.sampled_from(CONTROL_TYPES),
                           st.dictionaries(st.sampled_from(["proto", "clock", "seed", "code", "fatal", "message",
                                                            "tail_frames", "id", "frame_idx", "text", "model"]),
                                           json_values, max_size=5))))
def test_any_control_message_is_valid_or_a_control_error(text):
    try:
        msg = parse_control(text)
    except ControlError:
        return
    assert isinstance(msg, dict) and isinstance(msg["type"], str)


@fuzz(0.3)
@given(st.one_of(st.text(max_size=200),
                 st.builds(lambda d: "\n".join(f"{k}: {json.dumps(v)}" for k, v in d.items()),
                           st.dictionaries(st.sampled_from(["kind", "id", "label", "include", "provider", "model",
                                                            "dimension", "metrics", "audio", "launch"]),
                                           json_values, max_size=6))))
def test_any_spec_file_loads_or_fails_with_file_line_field_message(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("spec") / "fuzzed.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        load_spec(path)
    except SpecErrors as exc:
        assert exc.errors and all(SPEC_LINE.match(str(e)) for e in exc.errors), str(exc)


@fuzz(0.3)
@given(st.one_of(st.text(max_size=200),
                 st.builds(lambda d: "\n".join(f"{k}: {json.dumps(v)}" for k, v in d.items()),
                           st.dictionaries(st.sampled_from(["id", "speakers", "preamble", "turns", "labels", "text",
                                                            "voice", "gold_answer"]), json_values, max_size=6))))
def test_any_scene_file_loads_or_fails_with_file_line_field_message(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("scene") / "fuzzed.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        load_scene(path)
    except SpecError as exc:
        assert SPEC_LINE.match(str(exc)), str(exc)
    except SpecErrors as exc:
        assert exc.errors and all(SPEC_LINE.match(str(e)) for e in exc.errors), str(exc)


@fuzz(0.3)
@given(st.one_of(st.binary(max_size=100).map(lambda b: b.decode("latin-1")),
                 st.dictionaries(st.sampled_from(["id", "audio", "rate", "channels", "rounds", "source",
                                                  "audio_sha256"]), json_values, max_size=7).map(json.dumps),
                 st.builds(lambda rounds: json.dumps({"id": "d", "audio": "d.wav", "rate": 16000, "channels": ["user", "assistant"],
                                                      "rounds": rounds}), json_values)))
def test_any_dialogue_sidecar_loads_or_fails_with_a_dialogue_format_error(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("mtr") / "d.json"
    path.write_text(text, encoding="utf-8")
    try:
        load_dialogue(path)
    except DialogueFormatError as exc:
        assert str(path) in str(exc)


VERDICT_SCHEMA = {"type": "object", "required": ["verdict"],
                  "properties": {"verdict": {"enum": ["correct", "incorrect"]}, "reason": {"type": "string"}}}


@fuzz()
@given(st.one_of(st.text(max_size=200), json_values.map(json.dumps),
                 json_values.map(lambda v: f"```json\n{json.dumps({'verdict': v})}\n```")))
def test_any_judge_answer_is_a_verdict_state_never_an_exception(raw):
    value, ok, reason, data = parse_verdict(raw, VERDICT_SCHEMA, "incorrect")
    assert (value in ("correct", "incorrect")) and isinstance(reason, str)
    assert ok == (data is not None)


@fuzz(0.5)
@given(st.data())
def test_a_corrupt_cache_entry_is_reported_never_returned(tmp_path_factory, data):
    root = tmp_path_factory.mktemp("cache")
    components = {"cache_schema": 1, "provider": "openai", "model": "m", "messages": [{"role": "user", "content": "x"}]}
    key = cache_key(components)
    cache = JudgeCache(root, "readwrite")
    cache.put(key, components, {"text": '{"verdict": "correct"}', "model": "m"})
    path = cache.path(key)
    original = path.read_bytes()
    mutated = bytearray(original)
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(mutated) - 1))
        mutated[i] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(mutated)))
    mutated = mutated[:cut] if data.draw(st.booleans()) else mutated
    path.write_bytes(bytes(mutated))
    try:
        entry = cache.load(key)
    except CorruptEntry:
        assert cache.get(key, components) is None  # a miss, never a verdict
        return
    # Only a change JSON cannot see (e.g. whitespace, an escaped character) may load: the content is the same.
    assert entry.components == components and entry.response["text"] == '{"verdict": "correct"}'
