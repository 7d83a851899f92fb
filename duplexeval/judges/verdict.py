"""The Verdict every judge returns, and the strict parser of LLM answers.

Strict means: the answer must be one JSON object (optionally the only content of a
```json fenced block) that validates against the spec's `verdict_schema`, whose
`verdict` property is the value. Anything else is recorded as unparseable with the raw
text and counts as the spec's `unparseable_counts_as` (Duplex-MPE §3.5: an empty or
unparseable verdict is incorrect). It is never re-asked in a loop (a Full-Duplex-Bench
judge-parse loop never ended).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

import jsonschema

_FENCE = re.compile(r"^```(?:json)?\s*\n(.*)\n```$", re.DOTALL)


@dataclass(frozen=True)
class Verdict:
    value: Any
    parsed_ok: bool
    raw: str
    reason: str
    cache_key: str | None
    judge_id: str
    label: str
    from_cache: bool = False
    data: dict[str, Any] | None = field(default=None)  # the whole parsed object, when parsed

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def parse_verdict(raw: str, schema: dict[str, Any], unparseable_counts_as: Any) -> tuple[Any, bool, str, dict | None]:
    """(value, parsed_ok, reason, data) of a raw answer; never raises on bad answers."""
    text = raw.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    if not text:
        return unparseable_counts_as, False, "unparseable: empty answer", None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return unparseable_counts_as, False, f"unparseable: not JSON ({exc.msg} at char {exc.pos})", None
    if not isinstance(data, dict):
        return unparseable_counts_as, False, f"unparseable: JSON {type(data).__name__}, expected an object", None
    try:
        jsonschema.Draft202012Validator(schema).validate(data)
    except jsonschema.ValidationError as exc:
        where = "/".join(map(str, exc.absolute_path)) or "(root)"
        return unparseable_counts_as, False, f"unparseable: {where}: {exc.message}", None
    if "verdict" not in data:
        return unparseable_counts_as, False, "unparseable: no 'verdict' field", None
    reason = data.get("reason")
    return data["verdict"], True, reason if isinstance(reason, str) else "", data
