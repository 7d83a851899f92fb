"""`duplexeval data import fdb PATH`: a placed copy of Full-Duplex-Bench's data -> the folder this project reads.

The data is a cloud-drive folder no command here can download (FETCH_HINT says where a
copy goes). The import checks every sample folder on its own (duplexeval.benchmarks.fdb.layout:
known files, readable JSON, input audio finite and long enough for its events); a sample that
does not fit is skipped and listed, and the command exits 4 (partial). Then it copies each sample's published files
(input audio and annotations, never a model's output or a script's result that a copy
may already hold) to `<out>/<v1_0|v1_5>/<task>/<ID>/` under the same names, so the
authors' scripts and ours read the same bytes, and writes `index.json`: every sample with
its files and its annotated event in seconds, which the plan reads without opening every
JSON again, and what was skipped. Task-level files (icc_backchannel/aggregated_all_data.json)
are copied beside the sample folders. The command renames the folder into place only after
this returned.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from duplexeval.benchmarks.base import ImportReport
from duplexeval.benchmarks.fdb import layout
from duplexeval.io import atomic_write_json

DATA_SET = "fdb"
INDEX_FILE = "index.json"
FETCH_HINT = ("its data is a Google Drive folder (dataset/README.md of github.com/DanielLin94144/Full-Duplex-Bench, "
              "folder v1_v1.5/); download it by hand and place it so that PATH holds v1_0/<task>/<ID>/ "
              "and/or v1_5/<task>/<ID>/")
SKIPPED = set(layout.MODEL_FILES) | set(layout.RESULT_FILES) | {"input.json", "clean_input.json"}


def event(sample: layout.Sample) -> dict[str, Any] | None:
    """The sample's annotated event, [start, end] in seconds of input.wav, with where it came from."""
    f = sample.folder
    if "metadata.json" in sample.files:
        meta = layout.read_metadata(f / "metadata.json")
        return {"source": "metadata.json", "timestamp": meta["timestamps"], "context_text": meta["context_text"],
                "current_turn_text": meta["current_turn_text"],
                **({"event_text_key": meta["event_text_key"]} if "event_text_key" in meta else {})}
    if "interrupt.json" in sample.files:
        meta = layout.read_interrupt(f / "interrupt.json")
        return {"source": "interrupt.json", "timestamp": meta["timestamp"], "context": meta["context"],
                "interrupt": meta["interrupt"]}
    for name in ("pause.json", "turn_taking.json"):
        if name in sample.files:
            events = layout.read_events(f / name)
            return {"source": name, "timestamp": [events[0].start, events[0].end], "label": events[0].text,
                    "events": len(events)}
    return None


def convert(src: Path, out: Path) -> ImportReport:
    """Reads the copy sample by sample and copies every sample that fits into `out`; a damaged or
    unknown sample is skipped and listed (ImportReport.skipped), never the whole import. A copy
    where nothing fits is refused, naming the first reasons."""
    found = layout.survey(src)
    if not found.samples:
        reasons = list(found.skipped.values())[:3]
        raise layout.FdbLayoutError(f"{src}: no sample fits the Full-Duplex-Bench layout"
                                    + (": " + "; ".join(reasons) if reasons else ""))
    rows: list[dict[str, Any]] = []
    for s in found.samples:
        dest = out / s.version / s.task / s.sample_id
        dest.mkdir(parents=True)
        kept = [n for n in s.files if n not in SKIPPED]
        for name in kept:
            shutil.copyfile(s.folder / name, dest / name)
        rows.append({"version": layout.VERSIONS[s.version], "task": s.task, "id": s.sample_id,
                     "path": f"{s.version}/{s.task}/{s.sample_id}", "files": kept, "event": event(s),
                     "not_imported": sorted(set(s.files) - set(kept))})
    task_files = []
    for version, task, path in found.task_files:
        (out / version / task).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, out / version / task / path.name)
        task_files.append(f"{version}/{task}/{path.name}")
    atomic_write_json(out / INDEX_FILE, {"layout_version": layout.LAYOUT_VERSION, "data_set": DATA_SET,
                                         "samples": rows, "task_files": task_files,
                                         "skipped": dict(sorted(found.skipped.items()))})
    counts: dict[tuple[str, str], int] = {}
    for s in found.samples:
        key = (layout.VERSIONS[s.version], s.task)
        counts[key] = counts.get(key, 0) + 1
    lines = [f"{version} {task}: {n} samples (the dataset README: {layout.STATED_COUNTS[task]})"
             for (version, task), n in sorted(counts.items())]
    lines += [f"task file {name}" for name in task_files]
    dropped = sum(1 for r in rows if r["not_imported"])
    if dropped:
        lines.append(f"{dropped} samples held model outputs or results (not imported: the import is the data only)")
    return ImportReport(lines, dict(found.skipped))


def read_index(folder: Path) -> list[dict[str, Any]]:
    """The samples of an imported folder (what `convert` wrote), refused by name when it is not one."""
    import json

    path = folder / INDEX_FILE
    if not path.is_file():
        raise layout.FdbLayoutError(f"{folder}: no {INDEX_FILE}: not an imported Full-Duplex-Bench folder "
                                    f"(run `duplexeval data import {DATA_SET} PATH`)")
    data = json.loads(path.read_text("utf-8"))
    if data.get("layout_version") != layout.LAYOUT_VERSION:
        raise layout.FdbLayoutError(f"{path}: layout_version {data.get('layout_version')!r}, this duplexeval reads "
                                    f"{layout.LAYOUT_VERSION}: import the copy again")
    return list(data["samples"])
