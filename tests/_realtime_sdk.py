"""Server events checked against the openai SDK's own typed realtime events (tests only).

`openai.types.realtime.RealtimeServerEvent` is the SDK's union of every GA server event;
each member's `type` field is a Literal, so an event is validated against the one model
its `type` names (pydantic `model_validate`: required fields such as `event_id`, field
types, nested objects). An unknown `type` is an error too.

One stated deviation, for vLLM-Omni only (`dialect="vllm-omni"`): its session objects
report the audio rates it really uses (16 kHz input for MiniCPM-o), while the SDK's
`AudioPCM.rate` is `Literal[24000]`; those rates are checked to be positive integers and
the rest of the event is validated with 24000 in their place.
"""

from __future__ import annotations

import copy
import typing

from openai.types.realtime import RealtimeServerEvent
from pydantic import ValidationError


def _models() -> dict[str, type]:
    union = typing.get_args(RealtimeServerEvent)[0]
    out: dict[str, type] = {}
    for model in typing.get_args(union):
        for literal in typing.get_args(model.model_fields["type"].annotation):
            out[literal] = model
    return out


SERVER_EVENTS = _models()


def _rates_as_sdk(event: dict) -> tuple[dict, list[str]]:
    event = copy.deepcopy(event)
    problems: list[str] = []
    session = event.get("session")
    audio = session.get("audio") if isinstance(session, dict) else None
    for direction in ("input", "output"):
        fmt = ((audio or {}).get(direction) or {}).get("format")
        if isinstance(fmt, dict) and "rate" in fmt:
            if not isinstance(fmt["rate"], int) or fmt["rate"] <= 0:
                problems.append(f"session.audio.{direction}.format.rate {fmt['rate']!r} is not a positive integer")
            fmt["rate"] = 24000
    return event, problems


def validate_server_event(event: dict, dialect: str = "openai") -> list[str]:
    """The reasons `event` is not a valid server event of the SDK (empty: valid)."""
    kind = event.get("type")
    model = SERVER_EVENTS.get(kind) if isinstance(kind, str) else None
    if model is None:
        return [f"type {kind!r} is not a server event of openai.types.realtime"]
    problems: list[str] = []
    if dialect == "vllm-omni":
        event, problems = _rates_as_sdk(event)
    try:
        model.model_validate(event)
    except ValidationError as exc:
        problems += [f"{kind}: {'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()]
    return problems


__all__ = ["SERVER_EVENTS", "validate_server_event"]
