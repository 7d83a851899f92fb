"""Server side of protocol v1: a model shim subclasses `DuplexServer` and writes `step()`.

Everything that is protocol (handshake, frame checks, end/done, reset, fork, errors,
how many sessions at a time) lives here once, so a shim is only model code and every
shim behaves the same on the wire (docs/protocol.md: one protocol for every model).

Batched sessions (docs/protocol.md, "Batched sessions"): a server started with
`--max-sessions N` serves N connections at once, each with its own session object
(`session_model`), and steps the sessions that have a frame waiting together through
`step_batch`, so a model with a real batch dimension overrides that one method.
"""

from duplexeval.protocol.shim_api import MAX_MESSAGE_BYTES, CloseSession, DuplexServer, ProtocolViolation
from duplexeval.protocol.transport import run_server, serve_forever

# The public names of the server side, gathered from shim_api.py, session.py and transport.py.
__all__ = ["MAX_MESSAGE_BYTES", "CloseSession", "DuplexServer", "ProtocolViolation", "run_server", "serve_forever"]
