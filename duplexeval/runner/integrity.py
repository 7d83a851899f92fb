"""Is a finished item what its status.json says it is? Checked before anything reads it.

status.json is written last and records the sha256, frame count and duration of
recording.wav and the sha256 and line count of events.jsonl. A truncated, altered or
missing file then cannot be scored as silence (the failure of earlier duplex
benchmarks): `item_status` turns it into an `error` item with the reason, and the
scorers count it as an error, never as a pass.

One level up, results.json records the sha256 of every status.json it was computed from
(`input_hashes`), so `duplexeval verify` can tell a results file that no longer matches
its items (docs/reliability.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import soundfile as sf

from duplexeval.io import sha256_file, sha256_json

STATUS_FILE = "status.json"
RECORDING = "recording.wav"
EVENTS = "events.jsonl"
DURATION_TOLERANCE_S = 1e-3


def _count_lines(path: Path) -> int:
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def artifact_fields(item_dir: Path, ok: bool) -> dict[str, Any]:
    """What status.json records of the files written before it."""
    events = item_dir / EVENTS
    fields: dict[str, Any] = {"events_sha256": sha256_file(events), "events_lines": _count_lines(events)}
    if ok:
        rec = item_dir / RECORDING
        info = sf.info(str(rec))
        fields.update(recording_sha256=sha256_file(rec), recording_frames=int(info.frames),
                      recording_channels=int(info.channels), recording_rate=int(info.samplerate),
                      recording_duration_s=round(info.frames / info.samplerate, 6))
    return fields


def seal_status(status: dict[str, Any]) -> dict[str, Any]:
    """status.json vouches for itself too: `status_sha256` is the hash of every other field, so
    an edited or bit-flipped status.json that still parses is caught as well."""
    body = {k: v for k, v in status.items() if k != "status_sha256"}
    return {**body, "status_sha256": sha256_json(body)}


def _recording_shape(path: Path, status: dict[str, Any]) -> str | None:
    """A mismatch of frame count, channels, rate or duration (cheap, and a clearer reason than a hash)."""
    try:
        info = sf.info(str(path))
    except (RuntimeError, OSError) as exc:  # soundfile.LibsndfileError is a RuntimeError
        return f"{path}: not a readable WAV ({exc}); status.json records a recording"
    if "recording_frames" in status and int(info.frames) != status["recording_frames"]:
        return (f"{path}: {info.frames} frames ({info.frames / max(info.samplerate, 1):.3f} s), status.json records "
                f"{status['recording_frames']} (truncated or altered)")
    for field, actual in (("recording_channels", info.channels), ("recording_rate", info.samplerate)):
        if field in status and int(actual) != status[field]:
            return f"{path}: {field.split('_')[1]} {actual}, status.json records {status[field]}"
    duration = status.get("recording_duration_s", status.get("duration_s"))
    if "recording_frames" in status and isinstance(duration, (int, float)) and info.samplerate:
        if abs(info.frames / info.samplerate - float(duration)) > DURATION_TOLERANCE_S:
            return (f"{path}: {info.frames / info.samplerate:.6f} s long, status.json records {duration} s "
                    "(status.json or the recording was altered)")
    return None


def damage(item_dir: Path, status: dict[str, Any]) -> str | None:
    """The first mismatch between the item's files and its status.json, or None when intact.

    Items written before these fields existed carry none of them and are not checked.
    """
    if "status_sha256" in status and seal_status(status)["status_sha256"] != status["status_sha256"]:
        return f"{item_dir / STATUS_FILE}: its fields do not match its own status_sha256 (edited or altered)"
    checks: list[tuple[str, str | None, str]] = [(EVENTS, status.get("events_sha256"), "events_sha256")]
    if status.get("status") == "ok":
        checks.append((RECORDING, status.get("recording_sha256"), "recording_sha256"))
    for name, expected, field in checks:
        if expected is None:
            continue
        path = item_dir / name
        if not path.is_file():
            return f"{path}: missing (status.json records {field})"
        if name == RECORDING:
            shape = _recording_shape(path, status)
            if shape is not None:
                return shape
        elif "events_lines" in status:
            lines = _count_lines(path)
            if lines != status["events_lines"]:
                return f"{path}: {lines} lines, status.json records {status['events_lines']} (truncated or altered)"
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
        problem = damage(item_dir, status)
    except (ValueError, UnicodeDecodeError, TypeError, OSError) as exc:
        return {"status": "error", "error_code": "DAMAGED", "reason": f"{path}: unreadable ({exc})"}
    if problem is not None:
        return {**status, "status": "error", "error_code": "DAMAGED", "reason": problem}
    return status


def input_hashes(bench_dir: Path) -> dict[str, str]:
    """sha256 of every item's status.json under bench_dir/items (it vouches for the item's files):
    what results.json records as the inputs it was computed from."""
    items = Path(bench_dir) / "items"
    if not items.is_dir():
        return {}
    return {d.name: sha256_file(d / STATUS_FILE) for d in sorted(items.iterdir())
            if d.is_dir() and (d / STATUS_FILE).is_file()}
