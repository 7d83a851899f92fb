"""The MTR-DuplexBench authors' file conventions: output file names, scenario strings, the round-start file.

Read from their public evaluation code (GitHub ZhangHe0918/MTR-DuplexBench, `Eval/`), not
copied; docs/data.md says what is verified there and what is ours:

- a scored round is one **stereo WAV, left channel = user, right channel = model** (their
  README). WAV channel 0 is left, so this is exactly our `recording.wav` (ch0 heard, ch1
  said): no channel is swapped on export or import.
- names: their safety and instruction scripts glob `dialogue_safety_*_round_*_*.wav` /
  `dialogue_instruction_following_*_round_*_*.wav` and parse
  `dialogue_(safety_\\d+)_round_(\\d+)_(.+)\\.wav` (so the dialogue id is `safety_<N>`, the
  round a number, the rest the scenario). Their conversational-feature scripts are library
  functions with no file-name rule: `dialogue_conversational_features_<N>_round_<R>_<scenario>.wav`
  follows the same pattern and is ours.
- scenario strings (their eval code): `smooth-turntaking`, `interruption`,
  `pause-handling`, `background`; `backchannel` is ours (they publish no backchannel rule).
- the optional round-start file (`--round_start_json`): a JSON list of
  `{dialogue_id, round_num, scenario, timestamp: {user_start, ...}}`; their scripts key it
  by `f"{dialogue_id}_{round_num}_{scenario}"` and transcribe only audio after
  `user_start`, which is how our recordings (forced history, then round k) must be read.
  We add the timing keys their feature functions read (`user_end`, `model_start`,
  `model_end`, `interruption_start/end`, `pause_start/end`, `background_start/end`).

Dialogue numbers: when every dialogue id of a benchmark already reads `<prefix>_<N>` (the
published sets) N is kept; otherwise the dialogues are numbered 1.. in id order (ours).
Both directions use the same rule, so an export re-imports to the same items.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

LAYOUT = "mtr-authors"
LAYOUT_VERSION = 1
START_FILE = "round_start.json"
PREFIX = {"mtr-safety": "safety", "mtr-instruction": "instruction_following",
          "mtr-features": "conversational_features"}
SCENARIO = {"smooth": "smooth-turntaking", "interruption": "interruption", "pause": "pause-handling",
            "background": "background", "backchannel": "backchannel"}
NAME_RE = re.compile(r"^dialogue_(?P<dialogue>(?P<prefix>[a-z_]+?)_(?P<n>\d+))_round_(?P<round>\d+)_(?P<scenario>.+)\.wav$")


class LayoutError(ValueError):
    """A benchmark or a file the authors' layout cannot express; the message says which."""


def prefix_for(bench: dict[str, Any]) -> str:
    dim = bench.get("dimension")
    if dim not in PREFIX:
        raise LayoutError(f"benchmark {bench.get('id')}: the authors' layout has no per-round WAV convention for "
                          f"dimension {dim!r} (their dialogue-quality script reads one MP3 per Candor clip with turn masks)")
    return PREFIX[dim]


def dialogue_numbers(bench: dict[str, Any], dialogue_ids: Iterable[str]) -> dict[str, int]:
    """{our dialogue id: the authors' N}: kept from ids that read `<prefix>_<N>`, else 1.. in id order."""
    prefix = prefix_for(bench)
    ids = sorted(set(dialogue_ids))
    kept = {i: re.fullmatch(rf"{prefix}_(\d+)", i) for i in ids}
    if ids and all(kept.values()):
        return {i: int(m[1]) for i, m in kept.items() if m}
    return {i: n for n, i in enumerate(ids, 1)}


def scenario(feature: str | None) -> str:
    return SCENARIO.get(feature or "smooth", feature or "smooth-turntaking")


def file_name(bench: dict[str, Any], number: int, round_no: int, feature: str | None) -> str:
    return f"dialogue_{prefix_for(bench)}_{number}_round_{round_no}_{scenario(feature)}.wav"


def start_entry(dialogue_key: str, round_info: dict[str, Any], window: dict[str, Any]) -> dict[str, Any]:
    """One entry of the round-start file, from our rounds.json entry (round + window)."""
    user = round_info["user"]
    ts: dict[str, float] = {"user_start": user["start"], "user_end": user["end"],
                            "model_start": window["user_end_s"], "model_end": window["end_s"]}
    events = {e["type"]: e for e in round_info.get("events", [])}
    feature = round_info.get("feature") or "smooth"
    if feature == "interruption":
        ev = events.get("interruption", {"start": user["start"], "end": user["end"]})
        ts.update(interruption_start=ev["start"], interruption_end=ev["end"])
    for kind in ("pause", "background", "backchannel"):
        if kind in events:
            ts.update({f"{kind}_start": events[kind]["start"], f"{kind}_end": events[kind]["end"]})
    return {"dialogue_id": dialogue_key, "round_num": round_info["round"], "scenario": scenario(feature),
            "timestamp": ts}
