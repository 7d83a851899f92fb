"""Is a finished item what its status.json says it is? Checked before anything reads it.

status.json is written last and records the sha256, frame count and duration of
recording.wav and the sha256 and line count of events.jsonl. A truncated, altered or
missing file then cannot be scored as silence (the failure of earlier duplex
benchmarks): `item_status` turns it into an `error` item with the reason, and the
scorers count it as an error, never as a pass.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import soundfile as sf

from duplexeval.io import sha256_file

STATUS_FILE = "status.json"
RECORDING = "recording.wav"
EVENTS = "events.jsonl"


def artifact_fields(item_dir: Path, ok: bool) -> dict[str, Any]:
    """What status.json records of the files written before it."""
    events = item_dir / EVENTS
    with open(events, "rb") as f:
        lines = sum(1 for _ in f)
    fields: dict[str, Any] = {"events_sha256": sha256_file(events), "events_lines": lines}
    if ok:
        rec = item_dir / RECORDING
        info = sf.info(str(rec))
        fields.update(recording_sha256=sha256_file(rec), recording_frames=int(info.frames),
                      recording_channels=int(info.channels))
    return fields


def damage(item_dir: Path, status: dict[str, Any]) -> str | None:
    """The first mismatch between the item's files and its status.json, or None when intact.

    Items written before these fields existed carry none of them and are not checked.
    """
    checks: list[tuple[str, str | None, str]] = [(EVENTS, status.get("events_sha256"), "events_sha256")]
    if status.get("status") == "ok":
        checks.append((RECORDING, status.get("recording_sha256"), "recording_sha256"))
    for name, expected, field in checks:
        if expected is None:
            continue
        path = item_dir / name
        if not path.is_file():
            return f"{path}: missing (status.json records {field})"
        actual = sha256_file(path)
        if actual != expected:
            return f"{path}: sha256 {actual[:12]}... differs from status.json's {expected[:12]}... (truncated or altered)"
    return None


def item_status(item_dir: Path) -> dict[str, Any] | None:
    """status.json of a finished item, verified; None when unfinished.

    A damaged item comes back as `status: error` with `error_code: DAMAGED` and the
    reason naming the file; an unreadable status.json likewise.
    """
    path = item_dir / STATUS_FILE
    if not path.exists():
        return None
    try:
        status = json.loads(path.read_text("utf-8"))
        if not isinstance(status, dict) or "status" not in status:
            raise ValueError("not a status object")
    except (ValueError, UnicodeDecodeError) as exc:
        return {"status": "error", "error_code": "DAMAGED", "reason": f"{path}: unreadable ({exc})"}
    problem = damage(item_dir, status)
    if problem is not None:
        return {**status, "status": "error", "error_code": "DAMAGED", "reason": problem}
    return status
