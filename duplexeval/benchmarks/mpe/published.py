"""The published Duplex-MPE copy (`duplexeval data import duplex-mpe PATH`) -> scene files.

Nothing of the copy's layout is documented anywhere we could read (the dataset card says
CC-BY-4.0, JSON plus audio, 1K-10K rows). The paper says what it must hold: 2,000 scenes,
each an explicit and an implicit conversation that differ only in T and, for 42 scenes, the
turn before T (App. A2.4); turns by speakers A-D labelled T/N1/N2/N3/N4Q/N4R; T's gold
answer; every turn rendered alone by Qwen3-TTS (App. A2.3). The authors' project page
shows more: labels written N4_Q / N4_R (read as N4Q / N4R), scenes with an N4 pair before
T, and the paper counts 339 pairs that differ outside T. So this importer accepts one
structure, the smallest that holds all that (docs/data.md, "inferred"):

- rows in `*.json` (a list) or `*.jsonl` files anywhere in the copy, one row per
  conversation: keys `scene_id`, `condition` (`explicit` | `implicit`), `turns`;
  optionally `preamble` (its text);
- a turn: `speaker` (A-D), `label`, `text`; T also `gold_answer`; optionally `audio`, the
  turn's own clip (a path in the copy).

Anything else skips the scene (a file that is not rows: the file) with the file, the row,
the keys it found and the first that does not fit; the rest is imported and `data import`
exits 4. The two rows of a scene must agree on speakers and labels; a turn whose text
differs besides T keeps both wordings (the turn before T: T's `previous_text`; any other:
the turn's `condition_text`), and differences.json says which scenes and turns. When the rows carry audio, every turn must, and the
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

from duplexeval.benchmarks.base import ImportReport
from duplexeval.benchmarks.mpe.scenes.model import CONDITIONS, LABELS
from duplexeval.io import atomic_write_json

DIFFERENCES_FILE = "differences.json"
ROW_KEYS = {"scene_id", "condition", "turns"}
ROW_OPTIONAL = {"preamble"}
TURN_KEYS = {"speaker", "label", "text"}
TURN_OPTIONAL = {"gold_answer", "audio"}
# The labels as the authors' project page writes them (N4_Q / N4_R), read as ours.
LABEL_SPELLINGS = {"N4_Q": "N4Q", "N4_R": "N4R"}
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
    """(where, row) of every row of one file, each checked; a file that is not rows, or a row that does not
    fit, is refused (convert reads with `read_raw_rows` and skips what does not fit, per scene)."""
    rows = read_raw_rows(path)
    for where, row in rows:
        check_row(where, row)
    return rows


def read_raw_rows(path: Path) -> list[tuple[str, Any]]:
    """(where, row) of every row of one file, unchecked; a file that is not rows is refused."""
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
        if isinstance(t, dict) and t.get("label") in LABEL_SPELLINGS:
            t["label"] = LABEL_SPELLINGS[t["label"]]   # the published spelling, normalised to ours
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
    """The clip's path, checked as every importer checks audio (duplexeval.recordings.checks): readable,
    finite samples, a plausible rate."""
    from duplexeval.recordings.checks import read_checked

    path = (copy / str(rel)).resolve()
    if not path.is_file() or copy.resolve() not in path.parents:
        raise PublishedFormatError(f"{where}: audio {rel!r} is not a file inside the copy ({copy})")
    _, _, problem = read_checked(path)
    if problem:
        raise PublishedFormatError(f"{where}: audio {rel!r}: {problem}")
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
        elif i != k - 1 and a["text"] != b["text"]:
            # Outside T and the turn before it (the paper: 339 pairs differ there): both wordings kept.
            turns.append({"speaker": a["speaker"], "label": a["label"], "text": a["text"],
                          "condition_text": {"explicit": a["text"], "implicit": b["text"]}})
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


def differences(scene: dict[str, Any]) -> list[dict[str, Any]]:
    """Where a scene's explicit and implicit conversations differ besides T: the turn before T (App. A2.4)
    and any other turn (both wordings kept on the turn, `condition_text`)."""
    out = []
    for i, t in enumerate(scene["turns"]):
        if "previous_text" in t:
            out.append({"turn": i - 1, "label": scene["turns"][i - 1]["label"], "where": "before T"})
        if "condition_text" in t:
            out.append({"turn": i, "label": t["label"], "where": "outside T"})
    return out


def convert(copy: Path, out: Path) -> ImportReport:
    """Every row file of the copy -> `out/scenes/<id>.yaml`, each validated by the scene loader.

    Per scene, not all-or-nothing: a row that does not fit, a scene without both conditions or
    one the scene loader refuses is skipped and listed (ImportReport.skipped, by the file and
    row at fault); a file that is not rows at all is skipped whole. A copy of which no scene
    fits is refused. `out/differences.json` lists every scene whose two conversations differ
    besides T, and where.
    """
    from duplexeval.benchmarks.mpe.scenes.loader import EMBEDDED_SCENES, load_scenes, validate_scene_data
    from duplexeval.specs import SpecErrors

    files = row_files(copy)
    if not files:
        found = sorted(p.relative_to(copy).as_posix() for p in copy.rglob("*") if p.is_file())[:8]
        raise PublishedFormatError(f"{copy}: no *.json / *.jsonl rows (found {found or 'nothing'})")
    skipped: dict[str, str] = {}
    failed: set[str] = set()
    pairs: dict[str, dict[str, tuple[str, dict[str, Any]]]] = {}
    for f in files:
        try:
            rows = read_raw_rows(f)
        except PublishedFormatError as exc:
            skipped[str(f)] = str(exc)
            continue
        for where, row in rows:
            try:
                check_row(where, row)
            except PublishedFormatError as exc:
                skipped[where] = str(exc)
                if isinstance(row, dict) and "scene_id" in row:
                    failed.add(scene_id(row["scene_id"]))   # its other row is not read: one scene, one skip
                continue
            sid = scene_id(row["scene_id"])
            if row["condition"] in pairs.setdefault(sid, {}):
                skipped[where] = (f"{where}: scene {sid} has a second {row['condition']} row "
                                  f"(the first: {pairs[sid][row['condition']][0]}); the second is not read")
                continue
            pairs[sid][row["condition"]] = (where, row)
    template = load_scenes(EMBEDDED_SCENES)[0].data
    scenes = []
    for sid, rows_of in sorted(pairs.items()):
        if sid in failed:
            continue
        where = next(iter(rows_of.values()))[0]
        if set(rows_of) != set(CONDITIONS):
            skipped[where] = f"{where}: scene {sid} has no {sorted(set(CONDITIONS) - set(rows_of))[0]} row"
            continue
        try:
            data = pair_to_scene(sid, rows_of, copy, template)
            validate_scene_data(data, Path(rows_of["explicit"][0].split(":")[0].split("[")[0]))
        except PublishedFormatError as exc:
            skipped[where] = str(exc)
            continue
        except SpecErrors as exc:
            skipped[where] = f"{where}: scene {sid}: " + "; ".join(str(e) for e in exc.errors)
            continue
        scenes.append(data)
    if not scenes:
        raise PublishedFormatError(f"{copy}: no scene fits the accepted structure (docs/data.md); first reasons: "
                                   + "; ".join(list(skipped.values())[:3]))
    (out / "scenes").mkdir(parents=True, exist_ok=True)
    differ: dict[str, list[dict[str, Any]]] = {}
    for data in scenes:
        path = out / "scenes" / f"{data['id']}.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), "utf-8")
        if diff := differences(data):
            differ[data["id"]] = diff
    atomic_write_json(out / DIFFERENCES_FILE, differ)
    outside = sum(1 for d in differ.values() if any(x["where"] == "outside T" for x in d))
    lines = [f"{len(scenes)} scenes imported",
             f"{len(differ)} scenes whose conversations differ besides T, {outside} of them outside T and the turn "
             f"before it (the paper: 339 pairs differ outside T; listed in {DIFFERENCES_FILE})"]
    return ImportReport(lines, skipped)
