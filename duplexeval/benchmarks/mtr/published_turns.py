"""The MTR-DuplexBench authors' published turn boundaries of the dialogue-quality clips.

Their release carries, beside the Candor clips, one JSON object per line of
`data/Scenarios_encoding/dialogue_quality/semantic_turned_time_v3.jsonl`: `{"id": <clip
file name without extension>, "filtered_turn": [{"start": s, "end": e, ...}, ...]}`, the
user turns their quality script scores (`gpt4o_mark_in_turn_GT_condor.py` reads turn k's
span from `filtered_turn[k-1]`). With `turns: published` (a reading of mtr-quality; the
other value, `segmented`, finds the turns by votes and clustering) the spec's
`data.turns_file` names that file and its turns are the clip's rounds, in file order:
nothing is segmented and no segmentation judge is asked. Texts still come from each
channel's VAD + ASR segments (what a judge is shown), assigned as for segmented turns.

A line that is not such an object, a turn without numeric `start` < `end`, or a clip the
file does not list is an error naming the file, the line and the field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TURNS_KEY = "filtered_turn"


class PublishedTurnsError(ValueError):
    """The turn file does not fit the authors' layout, or lacks a clip; the message says where."""


def read_turn_file(path: Path) -> dict[str, list[tuple[float, float]]]:
    """Clip id -> its user turns (start, end), in file order."""
    try:
        lines = Path(path).read_text("utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise PublishedTurnsError(f"{path}: cannot read the turn file ({exc}); set data.turns_file to the authors' "
                                  "semantic_turned_time_v3.jsonl") from None
    out: dict[str, list[tuple[float, float]]] = {}
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError as exc:
            raise PublishedTurnsError(f"{path}:{no}: not JSON ({exc})") from None
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str) or not isinstance(entry.get(TURNS_KEY), list):
            raise PublishedTurnsError(f"{path}:{no}: expected an object with `id` (text) and `{TURNS_KEY}` (a list)")
        turns = []
        for k, turn in enumerate(entry[TURNS_KEY]):
            start, end = (turn.get("start"), turn.get("end")) if isinstance(turn, dict) else (None, None)
            if not (_number(start) and _number(end) and float(start) < float(end)):  # type: ignore[arg-type]
                raise PublishedTurnsError(f"{path}:{no}: {TURNS_KEY}[{k}] needs numeric start < end (got {turn!r})")
            turns.append((float(start), float(end)))  # type: ignore[arg-type]
        if entry["id"] in out:
            raise PublishedTurnsError(f"{path}:{no}: clip {entry['id']!r} is listed twice")
        out[entry["id"]] = turns
    return out


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def turn_file(bench: dict[str, Any]) -> Path:
    """The spec's `data.turns_file`; relative paths are taken from the data folder (`data.path`)."""
    name = bench.get("data", {}).get("turns_file")
    if not name:
        raise PublishedTurnsError(f"benchmark {bench.get('id')}: turns: published needs data.turns_file (the authors' "
                                  "data/Scenarios_encoding/dialogue_quality/semantic_turned_time_v3.jsonl)")
    path = Path(str(name)).expanduser()
    base = bench.get("data", {}).get("path")
    if not path.is_absolute() and base:
        path = Path(str(base)).expanduser() / path
    return path


def clip_turns(turns_by_id: dict[str, list[tuple[float, float]]], dialogue_id: str, audio_path: Path,
               source: Path) -> list[tuple[float, float]]:
    """A clip's turns, by its dialogue id or its audio file's stem (theirs: the file name)."""
    for key in (dialogue_id, Path(audio_path).stem):
        if key in turns_by_id:
            return turns_by_id[key]
    raise PublishedTurnsError(f"{source}: no line for clip {dialogue_id!r} (audio {Path(audio_path).name})")
