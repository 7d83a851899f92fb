"""Protocol v1: the one wire format between the harness (client) and every model (server).

See docs/protocol.md. Public surface: frame encoding (`encode_frame`, `decode_frame`,
`FrameKind`), control messages (`validate_control`, `parse_control`), and the server
base class `DuplexServer` with `run_server`.
"""

from duplexeval.protocol.control import CAPABILITIES, CLOCKS, ControlError, parse_control, validate_control
from duplexeval.protocol.wire import (
    HEADER_SIZE,
    PROTOCOL_VERSION,
    ErrorCode,
    Frame,
    FrameError,
    FrameKind,
    decode_frame,
    encode_audio,
    encode_frame,
)

__all__ = [
    "CAPABILITIES", "CLOCKS", "ControlError", "ErrorCode", "Frame", "FrameError", "FrameKind", "HEADER_SIZE",
    "PROTOCOL_VERSION", "decode_frame", "encode_audio", "encode_frame", "parse_control", "validate_control",
]
