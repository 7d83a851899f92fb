"""Protocol v1 wire format: frame header layout and control-message validation."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from duplexeval.protocol import (
    HEADER_SIZE,
    ControlError,
    FrameError,
    FrameKind,
    decode_frame,
    encode_audio,
    encode_frame,
    parse_control,
    validate_control,
)
from duplexeval.protocol.control import control_schema


def test_header_is_kind_flags_reserved_then_u32_le_frame_idx():
    data = encode_frame(FrameKind.OUTPUT, 0x01020304, b"\x01\x00\xff\x7f")
    assert HEADER_SIZE == 8
    assert data[:8] == bytes([2, 0, 0, 0, 0x04, 0x03, 0x02, 0x01])
    assert struct.unpack("<2h", data[8:]) == (1, 32767)


def test_audio_round_trip_is_s16le():
    audio = np.linspace(-1, 1, 321, dtype=np.float32)
    frame = decode_frame(encode_audio(FrameKind.INPUT, 7, audio))
    assert (frame.kind, frame.frame_idx, frame.n_samples) == (FrameKind.INPUT, 7, 321)
    assert np.max(np.abs(frame.audio() - audio)) < 1e-4


def test_nan_audio_is_refused_not_silenced():
    audio = np.zeros(10, dtype=np.float32)
    audio[3] = np.nan
    with pytest.raises(FrameError, match="NaN"):
        encode_audio(FrameKind.OUTPUT, 0, audio)


@pytest.mark.parametrize("data, match", [
    (b"\x02\x00\x00", "shorter than"),
    (bytes([9, 0, 0, 0, 0, 0, 0, 0]), "unknown frame kind 9"),
    (bytes([2, 0, 1, 0, 0, 0, 0, 0]), "reserved"),
    (bytes([2, 0, 0, 0, 0, 0, 0, 0, 1]), "whole s16le samples"),
])
def test_garbage_binary_is_a_frame_error_naming_the_problem(data, match):
    with pytest.raises(FrameError, match=match):
        decode_frame(data)


def test_every_message_type_has_a_schema_definition():
    kinds = control_schema()["properties"]["type"]["enum"]
    assert set(kinds) == {"hello", "ready", "end", "done", "reset", "snapshot", "restore", "error", "text", "state", "label",
                          "remote_event"}
    assert all(k in control_schema()["$defs"] for k in kinds)


def test_valid_messages_pass():
    for msg in [
        {"type": "hello", "proto": 1, "clock": "lockstep", "seed": 3, "prompt": "You are Aria."},
        {"type": "ready", "proto": 1, "model": "m", "in_rate": 24000, "out_rate": 24000, "frame_ms": 80,
         "in_frame_samples": 1920, "out_frame_samples": 1920, "capabilities": ["fork"]},
        {"type": "end", "tail_frames": 0}, {"type": "done", "frames_in": 1, "frames_out": 1},
        {"type": "snapshot", "id": "a"}, {"type": "restore", "id": "a", "frame_idx": 4},
        {"type": "error", "code": "BAD_FRAME", "fatal": True, "message": "x"},
        {"type": "label", "frame_idx": 5, "phase": "end", "label": "T", "turn_id": "t3", "gold_answer": "Paris"},
        {"type": "state", "frame_idx": 2, "state": "speak"}, {"type": "text", "frame_idx": 2, "text": "hi"},
    ]:
        assert validate_control(msg) is msg


@pytest.mark.parametrize("msg, match", [
    ({"type": "hello", "proto": 1, "clock": "lockstep"}, "'seed' is a required property"),
    ({"type": "hello", "proto": 2, "clock": "lockstep", "seed": 0}, "proto"),
    ({"type": "label", "frame_idx": 1, "phase": "middle", "label": "T"}, "phase"),
    ({"type": "error", "code": "OOPS", "fatal": True, "message": ""}, "code"),
    ({"type": "teleport"}, "unknown control message type 'teleport'"),
])
def test_invalid_messages_name_the_field(msg, match):
    with pytest.raises(ControlError, match=match):
        validate_control(msg)


def test_non_json_text_is_a_control_error():
    with pytest.raises(ControlError, match="not JSON"):
        parse_control("\x00garbage{")
