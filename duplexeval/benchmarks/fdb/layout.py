"""Full-Duplex-Bench's per-sample folder layout (v1.0 and v1.5): what each folder may hold, read and checked.

The authors publish their data as a cloud-drive folder (dataset/README.md of the public
code): `v1_0/<task>/<ID>/` and `v1_5/<task>/<ID>/`, each sample a folder of fixed file
names. Their evaluation scripts read the same folders after a model's `output.wav` and
its word-level ASR `output.json` were added beside the input. This module knows those
names and the JSON shapes inside them, and checks a folder against them, so that the
importer (layout_import) and the exporter (layout_export) refuse by name what they do not
know, instead of scoring a half-understood copy.

Word timings are `{"text": str, "timestamp": [start, end]}` in seconds throughout (an ASR
`end` may be null, as their v1.0 scripts allow); intervals are `[start, end]`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LAYOUT_VERSION = 1

# The two releases as folder names in the published copy, and how this project names them.
VERSIONS = {"v1_0": "v1.0", "v1_5": "v1.5"}
# Both spellings of a release folder occur (the dataset README writes v1_0/, copies of the
# drive folder carry v1.0/): either is read as the release it names.
VERSION_FOLDERS = {"v1_0": "v1_0", "v1.0": "v1_0", "v1_5": "v1_5", "v1.5": "v1_5"}

# Files every sample of a task must hold (the dataset README's per-task lists).
V10_TASKS: dict[str, tuple[str, ...]] = {
    "candor_pause_handling": ("input.wav", "pause.json", "transcription.json"),
    "candor_turn_taking": ("input.wav", "turn_taking.json", "transcription.json"),
    "icc_backchannel": ("input.wav", "transcription.json"),
    "synthetic_pause_handling": ("input.wav", "pause.json", "transcription.json"),
    "synthetic_user_interruption": ("input.wav", "context.wav", "interrupt.wav", "interrupt.json"),
}
V15_TASKS: dict[str, tuple[str, ...]] = {
    task: ("input.wav", "clean_input.wav", "metadata.json")
    for task in ("user_interruption", "user_backchannel", "talking_to_other", "background_speech")
}
TASKS = {"v1_0": V10_TASKS, "v1_5": V15_TASKS}

# Sample counts the dataset README states per task: printed beside what an import found.
STATED_COUNTS = {
    "candor_pause_handling": 216, "candor_turn_taking": 119, "icc_backchannel": 55,
    "synthetic_pause_handling": 137, "synthetic_user_interruption": 200,
    "user_interruption": 200, "user_backchannel": 99, "talking_to_other": 100, "background_speech": 100,
}

# Files the evaluation adds beside a sample (model output, ASR, the scripts' own results):
# known, so a folder that already went through their pipeline is still read.
MODEL_FILES = ("output.wav", "output.json", "clean_output.wav", "clean_output.json")
ASR_FILES = ("output.json", "clean_output.json", "input.json", "clean_input.json")
RESULT_FILES = ("rating.json", "content_tag.json", "latency_intervals.json", "general_split.json")
OPTIONAL = {"v1_0": ("transcription.json",) + MODEL_FILES + RESULT_FILES,
            "v1_5": MODEL_FILES + ("input.json", "clean_input.json") + RESULT_FILES}
# v1.5 copies of the drive folder also hold the parts input.wav was mixed from: the user's
# opening (context.wav) and the event's own clip, whose text metadata.json gives under the
# task's key. The README lists neither; public users of the data read both.
V15_EVENT = {"user_interruption": ("interrupt.wav", "current_turn_text"),
             "user_backchannel": ("backchannel.wav", "backchannel_text"),
             "talking_to_other": ("current_turn.wav", "current_turn_text"),
             "background_speech": ("background.wav", "background_text")}
TASK_OPTIONAL = {("v1_5", task): ("context.wav", clip) for task, (clip, _) in V15_EVENT.items()}
# Files a task folder holds beside its sample folders: ICC's pooled human backchannel
# intervals ({sample id: [[start, end], ...]}), from which icc_gt_distribution.json is made.
TASK_FILES = {("v1_0", "icc_backchannel"): ("aggregated_all_data.json",)}
EVENT_TEXT_KEYS = ("current_turn_text", "backchannel_text", "background_text")


class FdbLayoutError(ValueError):
    """A copy or a sample folder that does not fit the published layout; the message names file and field."""


@dataclass(frozen=True)
class Word:
    text: str
    start: float
    end: float | None


@dataclass(frozen=True)
class Sample:
    version: str          # "v1_0" or "v1_5" (the published folder name)
    task: str
    sample_id: str
    folder: Path
    files: tuple[str, ...]


# --- JSON shapes -------------------------------------------------------------------------

def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise FdbLayoutError(f"{path}: cannot be read ({exc})") from None
    except json.JSONDecodeError as exc:
        raise FdbLayoutError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _interval(path: Path, where: str, value: Any, *, open_end: bool = False) -> tuple[float, float | None]:
    """[start, end] in seconds, start >= 0 and end >= start; `open_end` lets end be null (ASR)."""
    if not isinstance(value, list) or len(value) != 2:
        raise FdbLayoutError(f"{path}: {where}: expected [start, end], found {value!r}")
    start, end = value
    if not _number(start) or start < 0:
        raise FdbLayoutError(f"{path}: {where}[0]: expected a start in seconds >= 0, found {start!r}")
    if end is None and open_end:
        return float(start), None
    if not _number(end) or end < start:
        raise FdbLayoutError(f"{path}: {where}[1]: expected an end in seconds >= start {start}, found {end!r}")
    return float(start), float(end)


def _words(path: Path, where: str, items: Any, *, open_end: bool) -> list[Word]:
    if not isinstance(items, list):
        raise FdbLayoutError(f"{path}: {where}: expected a list of {{text, timestamp}}, found {type(items).__name__}")
    out = []
    for n, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("text"), str) or "timestamp" not in item:
            keys = sorted(item) if isinstance(item, dict) else type(item).__name__
            raise FdbLayoutError(f"{path}: {where}[{n}]: expected {{text: str, timestamp: [start, end]}}, found {keys}")
        start, end = _interval(path, f"{where}[{n}].timestamp", item["timestamp"], open_end=open_end)
        out.append(Word(item["text"], start, end))
    return out


def read_asr(path: Path) -> list[Word]:
    """An ASR file (output.json and its kin): {"text": str, "chunks": [{text, timestamp}]}."""
    data = _load(path)
    if not isinstance(data, dict) or "chunks" not in data or not isinstance(data.get("text", ""), str):
        keys = sorted(data) if isinstance(data, dict) else type(data).__name__
        raise FdbLayoutError(f"{path}: expected {{text, chunks}}, found {keys}")
    return _words(path, "chunks", data["chunks"], open_end=True)


def read_events(path: Path) -> list[Word]:
    """pause.json / turn_taking.json: a list of labelled [start, end] events ("[PAUSE]", "[TURN-TAKING]")."""
    events = _words(path, "", _load(path), open_end=False)
    if not events:
        raise FdbLayoutError(f"{path}: no event (expected at least one {{text, timestamp}})")
    return events


def read_interrupt(path: Path) -> dict[str, Any]:
    """interrupt.json: [{context, interrupt, timestamp: [start, end]}]; the first entry is the one scored."""
    data = _load(path)
    if not isinstance(data, list) or not data or not isinstance(data[0], dict):
        raise FdbLayoutError(f"{path}: expected a list of {{context, interrupt, timestamp}}, found {data!r:.80}")
    first = data[0]
    for key in ("context", "interrupt"):
        if not isinstance(first.get(key), str):
            raise FdbLayoutError(f"{path}: [0].{key}: expected text, found {first.get(key)!r:.60}")
    start, end = _interval(path, "[0].timestamp", first.get("timestamp"))
    return {"context": first["context"], "interrupt": first["interrupt"], "timestamp": [start, end]}


def read_transcription(path: Path) -> list[dict[str, Any]]:
    """transcription.json: either a flat word list or [{speaker, item: [words]}] (both occur in the public examples)."""
    data = _load(path)
    if not isinstance(data, list):
        raise FdbLayoutError(f"{path}: expected a list, found {type(data).__name__}")
    if data and isinstance(data[0], dict) and "item" in data[0]:
        turns = []
        for n, turn in enumerate(data):
            if not isinstance(turn, dict) or "item" not in turn:
                raise FdbLayoutError(f"{path}: [{n}]: expected {{speaker, item}}, found {turn!r:.60}")
            turns.append({"speaker": turn.get("speaker"),
                          "words": _words(path, f"[{n}].item", turn["item"], open_end=False)})
        return turns
    return [{"speaker": None, "words": _words(path, "", data, open_end=False)}]


def read_metadata(path: Path) -> dict[str, Any]:
    """v1.5 metadata.json: {context_text, <event text>, timestamps: [start, end] of the overlap event}.

    The event's text is `current_turn_text` (the README's example), `backchannel_text` or
    `background_text` (user_backchannel and background_speech copies): whichever is there is
    returned as `current_turn_text`, the key it came from as `event_text_key` when another."""
    data = _load(path)
    if not isinstance(data, dict):
        raise FdbLayoutError(f"{path}: expected {{context_text, current_turn_text, timestamps}}, "
                             f"found {type(data).__name__}")
    if not isinstance(data.get("context_text"), str):
        raise FdbLayoutError(f"{path}: context_text: expected text, found {data.get('context_text')!r:.60} "
                             f"(keys: {sorted(data)})")
    key = next((k for k in EVENT_TEXT_KEYS if k in data), None)
    if key is None or not isinstance(data[key], str):
        found = f"{key}: {data[key]!r:.60}" if key else f"none (keys: {sorted(data)})"
        raise FdbLayoutError(f"{path}: expected the event's text under one of {', '.join(EVENT_TEXT_KEYS)}, "
                             f"found {found}")
    start, end = _interval(path, "timestamps", data.get("timestamps"))
    out = {"context_text": data["context_text"], "current_turn_text": data[key], "timestamps": [start, end]}
    if key != "current_turn_text":
        out["event_text_key"] = key
    return out


def read_aggregated(path: Path) -> dict[str, list[tuple[float, float]]]:
    """icc_backchannel/aggregated_all_data.json: {sample id: [[start, end], ...]} (pooled human backchannels)."""
    data = _load(path)
    if not isinstance(data, dict):
        raise FdbLayoutError(f"{path}: expected {{sample id: [[start, end], ...]}}, found {type(data).__name__}")
    out: dict[str, list[tuple[float, float]]] = {}
    for sid, spans in data.items():
        if not isinstance(spans, list):
            raise FdbLayoutError(f"{path}: {sid}: expected a list of [start, end], found {spans!r:.60}")
        out[str(sid)] = [_interval(path, f"{sid}[{n}]", span) for n, span in enumerate(spans)]  # type: ignore[misc]
    return out


READERS = {"pause.json": read_events, "turn_taking.json": read_events, "interrupt.json": read_interrupt,
           "transcription.json": read_transcription, "metadata.json": read_metadata,
           **{name: read_asr for name in ASR_FILES}}


# --- folders -----------------------------------------------------------------------------

def _check_wav(path: Path) -> None:
    import soundfile as sf

    try:
        info = sf.info(str(path))
    except Exception as exc:  # noqa: BLE001 - soundfile raises its own error types; the message is what matters
        raise FdbLayoutError(f"{path}: not a readable WAV ({exc})") from None
    if info.frames == 0 or info.channels not in (1, 2):
        raise FdbLayoutError(f"{path}: expected mono or stereo audio with samples, found "
                             f"{info.channels} channel(s), {info.frames} frames")


def _event_ends(folder: Path, names: list[str]) -> list[Any]:
    """The annotated events a sample declares on input.wav (each must end inside it)."""
    from duplexeval.recordings.checks import Event

    out = []
    for name in ("pause.json", "turn_taking.json"):
        if name in names:
            out += [Event(f"{name} event {n} ({w.text})", float(w.end or w.start))
                    for n, w in enumerate(read_events(folder / name))]
    if "interrupt.json" in names:
        out.append(Event("interrupt.json timestamp", read_interrupt(folder / "interrupt.json")["timestamp"][1]))
    if "metadata.json" in names:
        out.append(Event("metadata.json timestamps", read_metadata(folder / "metadata.json")["timestamps"][1]))
    return out


def _check_input(path: Path, events: list[Any]) -> None:
    """The audio a model hears: finite samples, a plausible rate, long enough for every annotated event
    (duplexeval.recordings.checks, shared by every family's importer)."""
    from duplexeval.recordings.checks import read_checked

    _check_wav(path)
    audio, _, problem = read_checked(path, events=events)
    if audio is None:
        raise FdbLayoutError(f"{path}: {problem}")
    if audio.shape[1] not in (1, 2):
        raise FdbLayoutError(f"{path}: expected mono or stereo audio, found {audio.shape[1]} channel(s)")


def check_sample(folder: Path, version: str, task: str) -> Sample:
    """One sample folder: every required file present, no file the layout does not name, every JSON read,
    the input audio finite and long enough for its annotated events."""
    tasks = TASKS[version]
    names = sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))
    known = set(tasks[task]) | set(OPTIONAL[version]) | set(TASK_OPTIONAL.get((version, task), ()))
    strange = [n for n in names if n not in known]
    if strange:
        raise FdbLayoutError(f"{folder}: {strange[0]!r} is not a file of the {VERSIONS[version]} {task} layout "
                             f"(known: {', '.join(sorted(known))})")
    # transcription.json is there "where available" (the README), so its absence is no fault.
    missing = [n for n in tasks[task] if n not in names and n != "transcription.json"]
    if missing:
        raise FdbLayoutError(f"{folder}: {missing[0]} is missing (a {VERSIONS[version]} {task} sample holds "
                             f"{', '.join(tasks[task])})")
    for name in names:
        path = folder / name
        if not path.is_file():
            raise FdbLayoutError(f"{path}: expected a file")
        if name.endswith(".wav") and name not in ("input.wav", "clean_input.wav"):
            _check_wav(path)
        elif name in READERS:
            READERS[name](path)
    events = _event_ends(folder, names)
    _check_input(folder / "input.wav", events)
    if "clean_input.wav" in names:
        _check_input(folder / "clean_input.wav", [])
    return Sample(version, task, folder.name, folder, tuple(names))


def version_roots(root: Path) -> dict[str, Path]:
    """{"v1_0": folder, "v1_5": folder} of a placed copy: the root holds v1_0/ and/or v1_5/ (or v1.0/, v1.5/),
    or is one of them."""
    found: dict[str, Path] = {}
    for name, version in VERSION_FOLDERS.items():
        if (root / name).is_dir():
            if version in found:
                raise FdbLayoutError(f"{root}: both {found[version].name}/ and {name}/ hold {VERSIONS[version]}: "
                                     "keep one")
            found[version] = root / name
    if found:
        return found
    subdirs = {p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")}
    for version, tasks in TASKS.items():
        if subdirs and subdirs <= set(tasks):
            return {version: root}
    raise FdbLayoutError(
        f"{root}: not a Full-Duplex-Bench copy: expected v1_0/ and/or v1_5/ (or v1.0/, v1.5/, or their task "
        f"folders: {', '.join(sorted(V10_TASKS))}; {', '.join(sorted(V15_TASKS))}), found "
        f"{', '.join(sorted(subdirs)) or 'no folders'}")


@dataclass
class Survey:
    """A placed copy read folder by folder: the samples that fit, what did not (path -> the message naming
    the file and field), task-level files."""
    samples: list[Sample]
    skipped: dict[str, str]
    task_files: list[tuple[str, str, Path]]   # (version, task, file)


def _task_file(version: str, task: str, path: Path) -> None:
    if path.name == "aggregated_all_data.json":
        read_aggregated(path)


def survey(root: Path) -> Survey:
    """Every sample of a placed copy, each checked on its own: one that does not fit is listed with the
    reason and the others are read. A root that is no copy at all still stops it by name."""
    out = Survey([], {}, [])
    for version, vroot in sorted(version_roots(root).items()):
        tasks = TASKS[version]
        for task_dir in sorted(p for p in vroot.iterdir() if not p.name.startswith(".")):
            if not task_dir.is_dir() or task_dir.name not in tasks:
                out.skipped[str(task_dir)] = (f"{task_dir}: not a {VERSIONS[version]} task folder "
                                              f"(known: {', '.join(sorted(tasks))})")
                continue
            ids = sorted(p for p in task_dir.iterdir() if not p.name.startswith("."))
            allowed = TASK_FILES.get((version, task_dir.name), ())
            folders = [p for p in ids if p.is_dir()]
            if not folders:
                out.skipped[str(task_dir)] = f"{task_dir}: no sample folders"
            for entry in ids:
                try:
                    if not entry.is_dir():
                        if entry.name not in allowed:
                            raise FdbLayoutError(f"{entry}: expected a sample folder <ID>/, found a file"
                                                 + (f" (the task-level files: {', '.join(allowed)})" if allowed else ""))
                        _task_file(version, task_dir.name, entry)
                        out.task_files.append((version, task_dir.name, entry))
                        continue
                    out.samples.append(check_sample(entry, version, task_dir.name))
                except FdbLayoutError as exc:
                    out.skipped[str(entry)] = str(exc)
    return out


def scan(root: Path) -> list[Sample]:
    """Every sample of a placed copy, checked; the first folder or file that does not fit stops it by name
    (the strict reading; `data import` reads with `survey` and skips what does not fit)."""
    found = survey(root)
    for why in found.skipped.values():
        raise FdbLayoutError(why)
    return found.samples
