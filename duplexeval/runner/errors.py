"""Why an item failed. A model fault ends its item as `error`, never as silence (issue 3)."""

from __future__ import annotations


class ModelFault(Exception):
    """The model (not the harness) misbehaved: crash, hang, bad frame, garbage, NaN, closed socket.

    `code` is a protocol error code (or CRASH / CLOSED / STARTUP for faults with no
    message on the wire); `reason` is the text written to status.json.
    """

    def __init__(self, code: str, reason: str, frame_idx: int | None = None):
        super().__init__(reason)
        self.code = code
        self.reason = reason
        self.frame_idx = frame_idx

    def __str__(self) -> str:
        at = f" at frame {self.frame_idx}" if self.frame_idx is not None else ""
        return f"{self.code}{at}: {self.reason}"


class RunConfigMismatch(RuntimeError):
    """A resume was asked for with a different model spec, clock, rate or seed than the run on disk."""


class ModelStartError(RuntimeError):
    """The model server could not be started at all (missing engine, image, weights, bad command).

    The runner turns it into `error` items with code STARTUP (none is lost, each has the
    reason); they say nothing about the model's behaviour, so a resume after the fix
    redoes them instead of keeping them.
    """
