"""Which samples a Full-Duplex-Bench task (v1.0 or v1.5) plays, and what scoring needs to know of each.

The data root holds the published v1.0 layout (`<root>/<subset>/<id>/input.wav` plus the
task's annotation); the embedded mini set is rendered into the same layout first
(benchmarks/fdb/embedded.py). Scoring never reads the data again: the plan writes what it
needs of every sample (annotation, input length, reference distribution) into the job
folder's `samples.json`, so a re-score works from the run alone.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duplexeval.executors.base import CannotRun

SAMPLES_FILE = "samples.json"
# The annotation file each task reads (the published layout's names).
ANNOTATION = {"pause": "pause.json", "backchannel": None, "smooth-turn-taking": "turn_taking.json",
              "user-interruption": "interrupt.json", "overlap": "metadata.json"}
# Where each dimension's subsets lie in an imported copy (`duplexeval data import fdb`).
VERSION_FOLDER = {"fdb-v1.0": "v1_0", "fdb-v1.5": "v1_5"}


class SampleError(ValueError):
    """A sample folder without what its task needs; the message names the file."""


@dataclass(frozen=True)
class Sample:
    id: str
    folder: Path
    annotation: Any               # the parsed annotation file (None for backchannel)
    oracle: dict[str, Any] | None  # our oracle.json (embedded set only)


def data_root(bench: dict[str, Any]) -> Path:
    """The folder holding the v1.0 subsets; the embedded source is rendered into the cache first."""
    from duplexeval.resources import cache_root
    from duplexeval.specs.loader import repo_root

    data = bench["data"]
    path = data.get("path")
    if not path:
        raise CannotRun(f"benchmark {bench['id']}: the Full-Duplex-Bench {bench['dimension']} data is not on this machine "
                        "(the authors publish it on a cloud drive; docs/fdb.md, 'Data'): place it and set the "
                        f"suite's overrides.data.{bench['dimension']}.path to the folder holding {bench['options']['subset']}/")
    p = Path(path) if Path(path).is_absolute() else repo_root() / path
    if data.get("source") == "embedded" and p.is_file():
        from duplexeval.benchmarks.fdb.embedded import rendered_root

        return rendered_root(p, cache_root())
    if not p.is_dir():
        # A copy imported with `duplexeval data import fdb PATH` serves when the suite's path is absent.
        from duplexeval.benchmarks.fdb.layout_import import DATA_SET
        from duplexeval.data.imported import ready

        imported = ready(DATA_SET)
        version = VERSION_FOLDER.get(bench["dimension"], "v1_0")
        if imported is not None and (imported / version).is_dir():
            return imported / version
        raise CannotRun(f"benchmark {bench['id']}: data path {p} is not a folder, and no import of the data "
                        "is here: place the authors' copy and run `duplexeval data import fdb PATH` (docs/fdb.md, 'Data')")
    return p


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise SampleError(f"{path}: missing (the task's annotation)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SampleError(f"{path}: not readable JSON ({exc})") from None


def list_samples(bench: dict[str, Any], root: Path, limit: int | None = None) -> list[Sample]:
    """The task's samples in id order (numeric ids numerically); `limit` keeps the first ones.

    A folder counts when it holds input.wav; for backchannel only folders named by digits count,
    as the authors' loop takes them (their reference distribution is keyed by that number)."""
    opts = bench["options"]
    task, subset = opts["task"], opts["subset"]
    folder = root / subset
    if not folder.is_dir():
        raise CannotRun(f"benchmark {bench['id']}: no subset folder {folder}")
    found = [d for d in folder.iterdir() if d.is_dir() and (d / "input.wav").is_file()
             and (d.name.isdigit() or task != "backchannel")]
    found.sort(key=lambda d: (0, int(d.name), "") if d.name.isdigit() else (1, 0, d.name))
    if limit:
        found = found[:limit]
    if not found:
        raise CannotRun(f"benchmark {bench['id']}: no sample folders with input.wav under {folder}")
    out = []
    for d in found:
        if task == "overlap" and not (d / "clean_input.wav").is_file():
            raise SampleError(f"{d / 'clean_input.wav'}: missing (a v1.5 sample is played with and without its overlap)")
        name = ANNOTATION[task]
        annotation = _read_json(d / name) if name else None
        if task == "overlap":
            from duplexeval.benchmarks.fdb.layout import FdbLayoutError, read_metadata

            try:
                annotation = read_metadata(d / name)
            except FdbLayoutError as exc:
                raise SampleError(str(exc)) from None
        oracle = _read_json(d / "oracle.json") if (d / "oracle.json").is_file() else None
        out.append(Sample(d.name, d, annotation, oracle))
    return out


def reference_distributions(bench: dict[str, Any], root: Path) -> dict[str, list[float]]:
    """The backchannel reference distribution per sample id, from the file the spec names for
    this data source (options.reference_distribution.<source>), its sha256 checked when given."""
    entry = bench["options"].get("reference_distribution", {}).get(bench["data"].get("source", "public"))
    if not entry:
        raise CannotRun(f"benchmark {bench['id']}: options.reference_distribution names no file for data source "
                        f"{bench['data'].get('source')!r}")
    path = Path(entry["path"]) if Path(entry["path"]).is_absolute() else root / entry["path"]
    if not path.is_file():
        raise CannotRun(f"benchmark {bench['id']}: reference distribution {path} is not here (docs/fdb.md, "
                        "'Backchannel'): place the authors' icc_gt_distribution.json there")
    raw = path.read_bytes()
    want = entry.get("sha256")
    if want and hashlib.sha256(raw).hexdigest() != want:
        raise CannotRun(f"benchmark {bench['id']}: {path} has sha256 {hashlib.sha256(raw).hexdigest()}, "
                        f"the spec pins {want}")
    try:
        data = json.loads(raw)
        return {str(k): [float(x) for x in v] for k, v in data.items()}
    except (ValueError, TypeError, AttributeError) as exc:
        raise CannotRun(f"benchmark {bench['id']}: {path} is not a JSON object of id -> list of numbers ({exc})") from None


def sample_record(bench: dict[str, Any], sample: Sample,
                  references: dict[str, list[float]] | None) -> dict[str, Any]:
    """What scoring keeps of one sample (samples.json)."""
    import soundfile as sf

    try:
        info = sf.info(str(sample.folder / "input.wav"))
    except RuntimeError as exc:
        raise SampleError(f"{sample.folder / 'input.wav'}: not readable audio ({exc})") from None
    rec: dict[str, Any] = {"id": sample.id, "input_duration_s": round(info.frames / info.samplerate, 6),
                           "annotation": sample.annotation,
                           "input_sha256": hashlib.sha256((sample.folder / "input.wav").read_bytes()).hexdigest()}
    if bench["options"]["task"] == "overlap":
        clean = sample.folder / "clean_input.wav"
        try:
            cinfo = sf.info(str(clean))
        except RuntimeError as exc:
            raise SampleError(f"{clean}: not readable audio ({exc})") from None
        rec["clean_input_duration_s"] = round(cinfo.frames / cinfo.samplerate, 6)
        rec["clean_input_sha256"] = hashlib.sha256(clean.read_bytes()).hexdigest()
    if bench["options"]["task"] == "backchannel":
        if references is None or sample.id not in references:
            raise SampleError(f"{sample.folder}: the reference distribution has no entry {sample.id!r}")
        rec["reference"] = references[sample.id]
    return rec
