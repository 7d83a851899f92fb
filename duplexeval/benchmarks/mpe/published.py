"""The published Duplex-MPE copy (`duplexeval data import duplex-mpe PATH`) -> scene files.

Nothing of the copy's layout is documented anywhere we could read (the dataset card says
CC-BY-4.0, JSON plus audio, 1K-10K rows). The paper says what it must hold: 2,000 scenes,
each an explicit and an implicit conversation that differ only in T and, for 42 scenes, the
turn before T (App. A2.4); turns by speakers A-D labelled T/N1/N2/N3/N4Q/N4R; T's gold
answer; every turn rendered alone by Qwen3-TTS (App. A2.3). So this importer accepts
exactly one structure, the smallest that holds that (docs/data.md, "inferred"):

- rows in `*.json` (a list) or `*.jsonl` files anywhere in the copy, one row per
  conversation: keys `scene_id`, `condition` (`explicit` | `implicit`), `turns`;
  optionally `preamble` (its text);
- a turn: `speaker` (A-D), `label`, `text`; T also `gold_answer`; optionally `audio`, the
  turn's own clip (a path in the copy).

Anything else stops the import with the file, the row, the keys it found and the first
that does not fit. The two rows of a scene must agree on speakers and labels, and on texts
except T and the turn before it. When the rows carry audio, every turn must, and the
scene keeps those clips (`audio` block of the scene file): the scheduler places the
published clips with their exact boundaries and nothing is re-synthesised. Without audio
the scenes are spoken by the suite's TTS, and the scene's `source` says so.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from duplexeval.benchmarks.mpe.scenes.model import CONDITIONS, LABELS

ROW_KEYS = {"scene_id", "condition", "turns"}
ROW_OPTIONAL = {"preamble"}
TURN_KEYS = {"speaker", "label", "text"}
TURN_OPTIONAL = {"gold_answer", "audio"}
# Not in the copy (as far as anyone here knows): ours, stated in every scene's description.
ATTRIBUTE_NOTE = "not published"


class PublishedFormatError(ValueError):
    """A file of the copy this importer does not know; the message names it and the first misfit."""


def _refuse(where: str, found: Any, first: str) -> PublishedFormatError:
    keys = sorted(found) if isinstance(found, dict) else type(found).__name__
    return PublishedFormatError(f"{where}: unknown structure: found {keys}; first that does not fit: {first} "
                                "(docs/data.md: the accepted structure)")


def row_files(copy: Path) -> list[Path]:
    return sorted(p for p in copy.rglob("*") if p.suffix in (".json", ".jsonl") and p.is_file()
                  and not any(part.startswith(".") for part in p.relative_to(copy).parts)
                  and p.name not in ("duplexeval-manifest.json", "duplexeval-import.json"))


def read_rows(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """(where, row) of every row of one file; a file that is not rows is refused."""
    try:
        text = path.read_text("utf-8")
        if path.suffix == ".jsonl":
            rows = [(f"{path}:{n}", json.loads(line)) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
        else:
            data = json.loads(text)
            if not isinstance(data, list):
                raise _refuse(str(path), data, "the top level is not a list of rows")
            rows = [(f"{path}[{i}]", r) for i, r in enumerate(data)]
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        if isinstance(exc, PublishedFormatError):
            raise
        raise PublishedFormatError(f"{path}: not readable JSON ({exc})") from None
    for where, row in rows:
        check_row(where, row)
    return rows


def check_row(where: str, row: Any) -> None:
    if not isinstance(row, dict):
        raise _refuse(where, row, "the row is not an object")
    if not ROW_KEYS <= set(row) or set(row) - ROW_KEYS - ROW_OPTIONAL:
        odd = sorted((set(row) - ROW_KEYS - ROW_OPTIONAL) or (ROW_KEYS - set(row)))
        raise _refuse(where, row, f"key {odd[0]!r} ({'unexpected' if set(row) - ROW_KEYS - ROW_OPTIONAL else 'missing'}; "
                                  f"expected {sorted(ROW_KEYS)} and optionally {sorted(ROW_OPTIONAL)})")
    if row["condition"] not in CONDITIONS:
        raise _refuse(where, row, f"condition {row['condition']!r} is not one of {list(CONDITIONS)}")
    if not isinstance(row["turns"], list) or len(row["turns"]) < 3:
        raise _refuse(where, row, "turns is not a list of at least 3 turns")
    for i, t in enumerate(row["turns"]):
        if not isinstance(t, dict) or not TURN_KEYS <= set(t) or set(t) - TURN_KEYS - TURN_OPTIONAL:
            found = t if isinstance(t, dict) else {}
            odd = sorted((set(found) - TURN_KEYS - TURN_OPTIONAL) or (TURN_KEYS - set(found))) or ["?"]
            raise _refuse(f"{where}.turns[{i}]", t, f"key {odd[0]!r} (expected {sorted(TURN_KEYS)} and optionally "
                                                    f"{sorted(TURN_OPTIONAL)})")
        if t["speaker"] not in ("A", "B", "C", "D") or t["label"] not in LABELS:
            raise _refuse(f"{where}.turns[{i}]", t, f"speaker {t['speaker']!r} / label {t['label']!r} "
                                                    f"(speakers A-D, labels {list(LABELS)})")
        if ("gold_answer" in t) != (t["label"] == "T"):
            raise _refuse(f"{where}.turns[{i}]", t, "gold_answer belongs to the T turn, and only to it")


def scene_id(raw: Any) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", str(raw).lower()).strip("-") or "scene"


def _audio(copy: Path, where: str, rel: Any) -> str:
    path = (copy / str(rel)).resolve()
    if not path.is_file() or copy.resolve() not in path.parents:
        raise PublishedFormatError(f"{where}: audio {rel!r} is not a file inside the copy ({copy})")
    return str(path)


def pair_to_scene(sid: str, rows: dict[str, tuple[str, dict[str, Any]]], copy: Path, template: dict[str, Any]) -> dict[str, Any]:
    """Our scene data from the explicit and the implicit row of one scene."""
    (we, ex), (wi, im) = rows["explicit"], rows["implicit"]
    if [(t["speaker"], t["label"]) for t in ex["turns"]] != [(t["speaker"], t["label"]) for t in im["turns"]]:
        raise PublishedFormatError(f"{wi}: scene {sid}: its speakers and labels differ from the explicit row {we}")
    t_at = [i for i, t in enumerate(ex["turns"]) if t["label"] == "T"]
    if len(t_at) != 1:
        raise PublishedFormatError(f"{we}: scene {sid}: {len(t_at)} T turns (exactly one)")
    k = t_at[0]
    for i, (a, b) in enumerate(zip(ex["turns"], im["turns"])):
        if i not in (k, k - 1) and a["text"] != b["text"]:
            raise PublishedFormatError(f"{wi}.turns[{i}]: scene {sid}: text differs from the explicit row, "
                                       "which the paper allows only in T and the turn before it (App. A2.4)")
    has_audio = ["audio" in t for t in ex["turns"] + im["turns"]]
    if any(has_audio) and not all(has_audio):
        raise PublishedFormatError(f"{we}: scene {sid}: some turns carry audio and some do not")
    turns: list[dict[str, Any]] = []
    for i, (a, b) in enumerate(zip(ex["turns"], im["turns"])):
        if i == k:
            turns.append({"speaker": a["speaker"], "label": "T",
                          "variants": {"explicit": a["text"], "implicit": b["text"]}, "gold_answer": a["gold_answer"]})
            if a["text"] == b["text"]:
                raise PublishedFormatError(f"{wi}.turns[{i}]: scene {sid}: T reads the same in both conditions")
            if ex["turns"][k - 1]["text"] != im["turns"][k - 1]["text"]:
                turns[-1]["previous_text"] = {"explicit": ex["turns"][k - 1]["text"],
                                              "implicit": im["turns"][k - 1]["text"]}
        else:
            turns.append({"speaker": a["speaker"], "label": a["label"], "text": a["text"]})
    preamble = ex.get("preamble") or template["preamble"]["text"]
    scene: dict[str, Any] = {
        "id": sid,
        "description": "Duplex-MPE published scene; attributes are not in the copy"
                       + ("" if ex.get("preamble") else "; preamble text is ours (the copy has none)"),
        "source": "published:duplex-mpe" + ("" if all(has_audio) else " (no audio in the copy: spoken by the suite's TTS)"),
        "attributes": {k2: ATTRIBUTE_NOTE for k2 in ("setting", "activity", "relationship", "devices", "register")},
        "speakers": dict(template["speakers"]),
        "preamble": {"text": preamble, "voice": template["preamble"]["voice"]},
        "turns": turns,
    }
    if all(has_audio):
        scene["audio"] = {c: [_audio(copy, f"{w}.turns[{i}]", t["audio"]) for i, t in enumerate(r["turns"])]
                          for c, (w, r) in rows.items()}
    return scene


def convert(copy: Path, out: Path) -> list[Path]:
    """Every row file of the copy -> `out/scenes/<id>.yaml`, each validated by the scene loader; checks all first."""
    from duplexeval.benchmarks.mpe.scenes.loader import EMBEDDED_SCENES, load_scenes, validate_scene_data

    files = row_files(copy)
    if not files:
        found = sorted(p.relative_to(copy).as_posix() for p in copy.rglob("*") if p.is_file())[:8]
        raise PublishedFormatError(f"{copy}: no *.json / *.jsonl rows (found {found or 'nothing'})")
    pairs: dict[str, dict[str, tuple[str, dict[str, Any]]]] = {}
    for f in files:
        for where, row in read_rows(f):
            sid = scene_id(row["scene_id"])
            if row["condition"] in pairs.setdefault(sid, {}):
                raise PublishedFormatError(f"{where}: scene {sid} has a second {row['condition']} row "
                                           f"(the first: {pairs[sid][row['condition']][0]})")
            pairs[sid][row["condition"]] = (where, row)
    template = load_scenes(EMBEDDED_SCENES)[0].data
    scenes = []
    for sid, rows in sorted(pairs.items()):
        if set(rows) != set(CONDITIONS):
            where = next(iter(rows.values()))[0]
            raise PublishedFormatError(f"{where}: scene {sid} has no {sorted(set(CONDITIONS) - set(rows))[0]} row")
        data = pair_to_scene(sid, rows, copy, template)
        validate_scene_data(data, Path(rows["explicit"][0].split(":")[0].split("[")[0]))
        scenes.append(data)
    written = []
    (out / "scenes").mkdir(parents=True, exist_ok=True)
    for data in scenes:
        path = out / "scenes" / f"{data['id']}.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), "utf-8")
        written.append(path)
    return written
