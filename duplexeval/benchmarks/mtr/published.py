"""The published MTR-DuplexBench copy (`duplexeval data import mtr-duplexbench PATH`) -> dialogue sidecars.

What is verified and what is inferred (docs/data.md has the table): the folder layout is
the authors' README's; the timing keys and scenario strings are read by their `Eval/`
code; **the JSON structure of a scenario encoding is not documented anywhere we could
read**. This importer accepts exactly one structure - the one their code reads for a
round (their round-start file): a JSON list of
`{dialogue_id, round_num, scenario, timestamp: {user_start, user_end, ...}}` - and
refuses any other with the file, the keys it found and the first that does not fit. It
never guesses past that: an unknown timing key, a scenario it cannot name, a dialogue
without its stereo WAV, all stop the import before anything is written.

Mapping of one round (inferred from how their eval code uses each key):
- feature: the timing keys present (interruption_* -> interruption, pause_* -> pause,
  background_* -> background, none -> smooth), which must be one of the parts of the
  round's `scenario` string (`smooth-turntaking`, `interruption`, `pause-handling`,
  `background`, joined by `_`);
- user span: [user_start, user_end]; for an interruption round the interrupting turn
  [interruption_start, interruption_end] (their code scores the model's silence there and
  its latency from interruption_end), with the interruption event on it; in round 1 the
  turn before it ([user_start, user_end] with the reply up to interruption_start) becomes
  the dialogue's `opening` (docs/mtr.md);
- assistant span (the forced ground truth): [model_start, model_end] when given;
- events: pause and background spans as given.
Audio: `<audio folder>/<dialogue_id>.wav` or `dialogue_<dialogue_id>.wav`, stereo, left =
user, right = assistant (their README's convention); referenced by absolute path with
its sha256 (the published audio is never copied, converted or re-synthesised).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import soundfile as sf

from duplexeval.io import atomic_write_json, sha256_file

ENCODINGS = "data/Scenarios_encoding"
# (group of our output, encoding file relative to ENCODINGS, audio folder relative to the copy)
GROUPS: tuple[tuple[str, str, str], ...] = (
    *((f"single-{s}", f"single_scenario/scenario_encoding_{s}.json", "data/Conversational_Features/original")
      for s in ("smooth", "interruption", "pause", "background")),
    *((f"multi-{n}", f"multi_scenarios/scenario_encoding_{n}.json", "data/Conversational_Features/original")
      for n in (1, 2, 3, 4)),
    *((f"instruction-{s}", f"instruction_following/scenario_encoding_{s}.json", "data/Instruction_Following/audios")
      for s in ("smooth", "interruption")),
    *((f"safety-{s}", f"safety/scenario_encoding_{s}.json", "data/Safety/audios") for s in ("smooth", "interruption")),
)
SCENARIOS = {"smooth-turntaking": "smooth", "interruption": "interruption", "pause-handling": "pause",
             "background": "background"}
ENTRY_KEYS = {"dialogue_id", "round_num", "scenario", "timestamp"}
TIME_KEYS = {"user_start", "user_end", "model_start", "model_end", "interruption_start", "interruption_end",
             "pause_start", "pause_end", "background_start", "background_end"}
ID_RE = re.compile(r"[^A-Za-z0-9._-]+")


class PublishedFormatError(ValueError):
    """A published file this importer does not know; the message names it and what did not fit."""


def _refuse(path: Path, found: Any, first: str) -> PublishedFormatError:
    keys = sorted(found) if isinstance(found, dict) else type(found).__name__
    return PublishedFormatError(f"{path}: unknown structure: found {keys}; first that does not fit: {first} "
                                "(docs/data.md: the accepted structure, and how to extend the importer)")


def read_encoding(path: Path) -> list[dict[str, Any]]:
    """The entries of one scenario-encoding file, each checked against the accepted structure."""
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise PublishedFormatError(f"{path}: not readable JSON ({exc})") from None
    if not isinstance(data, list) or not data:
        raise _refuse(path, data, "the top level is not a non-empty list of rounds")
    for i, e in enumerate(data):
        if not isinstance(e, dict):
            raise _refuse(path, e, f"[{i}] is not an object")
        if set(e) != ENTRY_KEYS:
            odd = sorted((set(e) - ENTRY_KEYS) or (ENTRY_KEYS - set(e)))
            raise _refuse(path, e, f"[{i}] key {odd[0]!r} ({'unexpected' if set(e) - ENTRY_KEYS else 'missing'}; "
                                   f"expected {sorted(ENTRY_KEYS)})")
        ts = e["timestamp"]
        if not isinstance(ts, dict) or not {"user_start", "user_end"} <= set(ts):
            raise _refuse(path, ts, f"[{i}].timestamp needs user_start and user_end")
        if set(ts) - TIME_KEYS:
            raise _refuse(path, ts, f"[{i}].timestamp key {sorted(set(ts) - TIME_KEYS)[0]!r} is not a known timing key")
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in ts.values()):
            raise _refuse(path, ts, f"[{i}].timestamp holds a value that is not a non-negative number")
        if not re.fullmatch(r"\d+", str(e["round_num"])) or int(e["round_num"]) < 1:
            raise _refuse(path, e, f"[{i}].round_num {e['round_num']!r} is not a round number")
        parts = str(e["scenario"]).split("_")
        if not all(p in SCENARIOS for p in parts):
            raise _refuse(path, e, f"[{i}].scenario {e['scenario']!r}: "
                                   f"{next(p for p in parts if p not in SCENARIOS)!r} is not one of {sorted(SCENARIOS)}")
    return data


def _feature(path: Path, i: int, e: dict[str, Any]) -> str:
    """The round's feature from its timing keys; a round with none is smooth turn-taking.

    Their pause script reads `pause_start`/`pause_end` with a default of 0.0 and treats
    0.0/0.0 as "no pause" (it then checks the user turn, as for smooth turn-taking), so a
    0.0/0.0 pair is no feature here either, and a round of a pause-handling file without
    pause times is imported as smooth (what its timing supports).
    """
    ts = e["timestamp"]
    kinds = [k for k in ("interruption", "pause", "background")
             if (f"{k}_start" in ts or f"{k}_end" in ts) and (ts.get(f"{k}_start"), ts.get(f"{k}_end")) != (0, 0)]
    if len(kinds) > 1:
        raise _refuse(path, ts, f"[{i}].timestamp times {', '.join(kinds)} in one round (one feature per round)")
    for k in kinds:
        if not {f"{k}_start", f"{k}_end"} <= set(ts):
            raise _refuse(path, ts, f"[{i}].timestamp has one of {k}_start / {k}_end without the other")
    if not kinds:
        return "smooth"
    feature = kinds[0]
    if feature not in [SCENARIOS[p] for p in str(e["scenario"]).split("_")]:
        raise _refuse(path, e, f"[{i}]: its timing is a {feature} round but its scenario is {e['scenario']!r}")
    return feature


def _span(start: float, end: float) -> dict[str, float]:
    return {"start": float(start), "end": float(end)}


def round_of(path: Path, i: int, e: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(our round, an opening or None) of one encoding entry."""
    ts = e["timestamp"]
    feature = _feature(path, i, e)
    rnd: dict[str, Any] = {"round": int(e["round_num"]), "feature": feature,
                           "user": _span(ts["user_start"], ts["user_end"])}
    opening = None
    if feature == "interruption":
        rnd["user"] = _span(ts["interruption_start"], ts["interruption_end"])
        rnd["events"] = [{"type": "interruption", **rnd["user"]}]
        if rnd["round"] == 1:
            if not ts["user_end"] <= ts["interruption_start"]:
                raise _refuse(path, ts, f"[{i}]: round 1 is an interruption but user_end {ts['user_end']} is after "
                                        f"interruption_start {ts['interruption_start']} (no earlier turn to interrupt)")
            opening = {"user": _span(ts["user_start"], ts["user_end"]),
                       "assistant": _span(ts["user_end"], ts["interruption_start"])}
    elif feature in ("pause", "background"):
        rnd["events"] = [{"type": feature, **_span(ts[f"{feature}_start"], ts[f"{feature}_end"])}]
    if "model_start" in ts and "model_end" in ts:
        rnd["assistant"] = _span(ts["model_start"], ts["model_end"])
    return rnd, opening


def _audio(copy: Path, folder: str, dialogue_id: str, encoding: Path) -> Path:
    base = copy / folder
    for name in (f"{dialogue_id}.wav", f"dialogue_{dialogue_id}.wav"):
        if (base / name).is_file():
            return base / name
    found = sorted(p.name for p in base.glob("*"))[:5] if base.is_dir() else []
    raise PublishedFormatError(f"{encoding}: dialogue {dialogue_id!r} has no audio: neither {dialogue_id}.wav nor "
                               f"dialogue_{dialogue_id}.wav in {base} (found {found or 'no folder'})")


def convert(copy: Path, out: Path) -> dict[str, list[Path]]:
    """Every encoding of the copy -> `out/<group>/<id>.json` sidecars; {group: sidecars}. Checks all first."""
    plans: dict[str, list[dict[str, Any]]] = {}
    for group, rel, audio_folder in GROUPS:
        enc = copy / ENCODINGS / rel
        if not enc.is_file():
            have = sorted(p.relative_to(copy / ENCODINGS).as_posix() for p in (copy / ENCODINGS).rglob("*.json")) \
                if (copy / ENCODINGS).is_dir() else []
            raise PublishedFormatError(f"{copy}: {ENCODINGS}/{rel} is missing (the authors' README lists it); "
                                       f"found {have[:8] or 'no ' + ENCODINGS}")
        dialogues: dict[str, dict[str, Any]] = {}
        for i, e in enumerate(read_encoding(enc)):
            did = str(e["dialogue_id"])
            rnd, opening = round_of(enc, i, e)
            d = dialogues.setdefault(did, {"rounds": [], "opening": None})
            d["rounds"].append(rnd)
            d["opening"] = d["opening"] or opening
        sidecars = []
        for did, d in sorted(dialogues.items()):
            wav = _audio(copy, audio_folder, did, enc)
            info = sf.info(str(wav))
            if info.channels != 2:
                raise PublishedFormatError(f"{wav}: {info.channels} channel(s); a dialogue must be stereo "
                                           "(left user, right assistant: the authors' README)")
            our_id = f"{group}.{ID_RE.sub('-', did).strip('-.') or 'x'}"
            sidecar = {"schema": "duplexeval.mtr-dialogue/1", "id": our_id, "audio": str(wav.resolve()),
                       "audio_sha256": sha256_file(wav), "rate": int(info.samplerate),
                       "channels": {"0": "user", "1": "assistant"},
                       "source": f"mtr-duplexbench {ENCODINGS}/{rel} dialogue {did}",
                       "rounds": sorted(d["rounds"], key=lambda r: r["round"])}
            if d["opening"]:
                sidecar["opening"] = d["opening"]
            sidecars.append(sidecar)
        plans[group] = sidecars
    written: dict[str, list[Path]] = {}
    for group, sidecars in plans.items():
        written[group] = []
        for sidecar in sidecars:
            path = out / group / f"{sidecar['id']}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_json(path, sidecar)
            written[group].append(path)
    return written


def check_written(written: dict[str, list[Path]]) -> None:
    """Every sidecar through the project's own loader (schema, round order, channel roles)."""
    from duplexeval.benchmarks.mtr.format import load_dialogue

    for paths in written.values():
        for p in paths:
            load_dialogue(p)
