"""JSON control messages of protocol v1: constructors, parsing and validation.

Both ends validate every control message against control.schema.json, so a malformed
message is reported with the field that is wrong instead of surfacing later as a
KeyError deep in the runner.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

import jsonschema

from duplexeval.protocol.wire import PROTOCOL_VERSION

CLOCKS = ("lockstep", "realtime")
CAPABILITIES = ("teacher_forcing", "fork", "text_events", "state_events", "prompt", "labels")


class ControlError(ValueError):
    """A text message that is not valid v1 control JSON."""


@lru_cache(maxsize=1)
def control_schema() -> dict:
    text = resources.files("duplexeval.protocol").joinpath("control.schema.json").read_text("utf-8")
    return json.loads(text)


@lru_cache(maxsize=None)
def _validator_for(kind: str) -> jsonschema.Draft202012Validator:
    schema = dict(control_schema()["$defs"][kind], **{"$defs": control_schema()["$defs"]})
    return jsonschema.Draft202012Validator(schema)


def validate_control(msg: Any) -> dict:
    """Returns msg if it is a valid control message, else raises ControlError naming the field."""
    if not isinstance(msg, dict) or not isinstance(msg.get("type"), str):
        raise ControlError(f"control message must be a JSON object with a string 'type', got {str(msg)[:120]}")
    kind = msg["type"]
    # Validate against the one definition named by `type`: errors then name the real field
    # instead of oneOf's "is not valid under any of the given schemas".
    if kind not in control_schema()["properties"]["type"]["enum"]:
        raise ControlError(f"unknown control message type {kind!r}")
    errors = sorted(_validator_for(kind).iter_errors(msg), key=lambda e: list(e.path))
    if errors:
        err = errors[0]
        where = ".".join(str(p) for p in err.path) or "(message)"
        raise ControlError(f"invalid {kind!r} message: {where}: {err.message}")
    return msg


def parse_control(text: str | bytes) -> dict:
    try:
        msg = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ControlError(f"control message is not JSON: {exc}; starts with {str(text)[:60]!r}") from None
    return validate_control(msg)


def dump_control(msg: dict) -> str:
    return json.dumps(validate_control(msg), separators=(",", ":"), allow_nan=False)


def hello(clock: str, seed: int, prompt: str | None = None) -> dict:
    msg: dict[str, Any] = {"type": "hello", "proto": PROTOCOL_VERSION, "clock": clock, "seed": int(seed)}
    if prompt is not None:
        msg["prompt"] = prompt
    return msg


def error(code: str, message: str, fatal: bool = True) -> dict:
    return {"type": "error", "code": code, "fatal": bool(fatal), "message": message}
