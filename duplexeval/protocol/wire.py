"""Binary audio frames of protocol v1: an 8-byte header, then PCM s16le mono.

    u8 kind | u8 flags | u16 reserved | u32 LE frame_idx | PCM s16le mono

Fixed little-endian layout so a server in any language can parse it with one read
(docs/protocol.md, "Audio frames").
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

PROTOCOL_VERSION = 1
HEADER = struct.Struct("<BBHI")
HEADER_SIZE = HEADER.size  # 8 bytes
_INV_32768 = np.float32(1.0 / 32768.0)


class FrameKind(IntEnum):
    INPUT = 1  # harness -> model: what the model hears
    OUTPUT = 2  # model -> harness: what the model says
    FORCED = 3  # harness -> model: assistant audio to force (teacher forcing, MTR)


class ErrorCode:
    """The codes of `error{code, fatal, message}` (docs/protocol.md).

    BAD_MESSAGE and UNSUPPORTED are additions to the design's list: a malformed control
    message is not a bad audio frame, and a request for an undeclared capability
    (snapshot without `fork`) is neither a clock problem nor an internal failure.
    """

    BAD_FRAME = "BAD_FRAME"
    BAD_MESSAGE = "BAD_MESSAGE"
    UNSUPPORTED_CLOCK = "UNSUPPORTED_CLOCK"
    UNSUPPORTED = "UNSUPPORTED"
    BUSY = "BUSY"
    NOT_READY = "NOT_READY"
    TIMEOUT = "TIMEOUT"
    INTERNAL = "INTERNAL"
    # A bridge to a remote realtime API (duplexeval/realtime/): what the remote did, so an
    # error item says whose fault it was (a key, a quota, the network, the service).
    AUTH = "AUTH"
    RATE_LIMITED = "RATE_LIMITED"
    REMOTE_CONNECT = "REMOTE_CONNECT"
    REMOTE_CLOSED = "REMOTE_CLOSED"
    REMOTE_STALL = "REMOTE_STALL"
    REMOTE_BAD_EVENT = "REMOTE_BAD_EVENT"
    REMOTE_ERROR = "REMOTE_ERROR"
    LATE = "LATE"
    BUDGET = "BUDGET"  # the run's --max-cost: the session was not started (a resume with more plays it)
    REMOTE = (AUTH, RATE_LIMITED, REMOTE_CONNECT, REMOTE_CLOSED, REMOTE_STALL, REMOTE_BAD_EVENT, REMOTE_ERROR, LATE, BUDGET)
    ALL = (BAD_FRAME, BAD_MESSAGE, UNSUPPORTED_CLOCK, UNSUPPORTED, BUSY, NOT_READY, TIMEOUT, INTERNAL) + REMOTE


class FrameError(ValueError):
    """A binary message that is not a valid v1 audio frame (the BAD_FRAME of the protocol)."""


@dataclass(frozen=True)
class Frame:
    kind: FrameKind
    frame_idx: int
    pcm: bytes  # s16le mono
    flags: int = 0

    @property
    def n_samples(self) -> int:
        return len(self.pcm) // 2

    def audio(self) -> np.ndarray:
        """float32 in [-1, 1): the harness-internal representation."""
        # x * 2**-15 is exactly x / 32768 (a power of two), in one numpy call.
        return np.multiply(np.frombuffer(self.pcm, dtype="<i2"), _INV_32768, dtype=np.float32)


def encode_frame(kind: FrameKind | int, frame_idx: int, pcm: bytes, flags: int = 0) -> bytes:
    if not 0 <= frame_idx < 2**32:
        raise FrameError(f"frame_idx {frame_idx} does not fit in u32")
    return HEADER.pack(int(kind), flags, 0, frame_idx) + pcm


def encode_audio(kind: FrameKind | int, frame_idx: int, audio: np.ndarray) -> bytes:
    """float32 -> s16le frame. Non-finite audio is refused, never silently turned into zeros."""
    audio = np.asarray(audio, dtype=np.float32)
    if not np.isfinite(audio).all():  # the method, not np.all(): its wrapper cost more than the check
        raise FrameError(f"frame {frame_idx}: audio contains NaN or infinity")
    # clip, scale, round half to even: the same bytes as (clip(a, -1, 1) * 32767).round(),
    # in one scratch array (each numpy call costs microseconds, twice per frame).
    scaled = np.minimum(audio, 1.0)
    np.maximum(scaled, -1.0, out=scaled)
    scaled *= 32767.0
    pcm = np.rint(scaled, out=scaled).astype("<i2").tobytes()
    return encode_frame(kind, frame_idx, pcm)


def decode_frame(data: bytes) -> Frame:
    """Parses one binary message; raises FrameError naming what is wrong."""
    if len(data) < HEADER_SIZE:
        raise FrameError(f"binary message of {len(data)} bytes is shorter than the {HEADER_SIZE}-byte header")
    kind, flags, reserved, frame_idx = HEADER.unpack_from(data)
    if kind not in (1, 2, 3):
        raise FrameError(f"unknown frame kind {kind} (expected 1 input, 2 output, 3 forced)")
    if reserved != 0:
        raise FrameError(f"reserved header field is {reserved}, must be 0")
    pcm = data[HEADER_SIZE:]
    if not isinstance(pcm, bytes):
        pcm = bytes(pcm)
    if len(pcm) % 2:
        raise FrameError(f"PCM payload of {len(pcm)} bytes is not whole s16le samples")
    return Frame(FrameKind(kind), frame_idx, pcm, flags)
