"""`import-recordings fdb-... DIR --layout fdb-authors`: the authors' published model outputs, scored our way.

Their inference scripts leave, per sample, `<ID>/output.wav` beside the sample's input: the
model's channel alone, mono, at the model's own rate (24 kHz for Moshi, Freeze-Omni and
Gemini, 48 kHz for GPT-Realtime) and of any length; v1.5 adds `clean_output.wav`, the reply
to the same turn without its overlap. DIR is one task's folder of those (their --root_dir),
or a folder holding it under the task's subset name. What else a folder holds (their
input.wav copy, output.json, their results) is not read: our ASR transcribes output.wav, so
the words come from the engine every results.json names.

Each output becomes one item of a run folder (duplexeval.recordings.run_folder), as a run of
ours would write it: recording.wav at the output's own rate, channel 0 the sample's
input.wav (from the imported data, resampled to that rate and cut or padded to the output's
length), channel 1 the output as written. Keeping the rate is what lets the reading
`options.backchannel.vad_rate: assume-16k` hand Silero the file's samples as the authors'
scorer did. The job's samples.json is written as the plan writes it, for the samples
imported; the family's scorer then scores the folder like any run.

Per file, not all-or-nothing: an output that is unreadable, not mono, holds NaN/inf or an
implausible rate (duplexeval.recordings.checks), a folder that names no sample of the task,
and a sample of the data without an output are listed as skipped; the rest is imported and
scored, and the command exits 4.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np

from duplexeval.benchmarks.base import ImportedRun, ImportRequest
from duplexeval.recordings.run_folder import ImportRefused

LAYOUT = "fdb-authors"
LAYOUT_VERSION = 1
OUTPUT = "output.wav"
CLEAN_OUTPUT = "clean_output.wav"


def _task_folder(src: Path, subset: str) -> Path:
    """DIR itself, or DIR/<subset> when DIR holds the task under its published folder name."""
    return src / subset if (src / subset).is_dir() else src


def _read_output(path: Path) -> tuple[np.ndarray | None, int, str | None]:
    """(mono samples, rate, None) or (None, rate, why not): their outputs are mono at the model's rate."""
    from duplexeval.recordings.checks import read_checked

    audio, rate, problem = read_checked(path)
    if audio is None:
        return None, rate, problem
    if audio.shape[1] != 1:
        return None, rate, (f"{audio.shape[1]} channels: the authors' output.wav is the model's channel alone "
                            "(their backchannel scorer refuses anything but mono)")
    return audio[:, 0], rate, None


def _heard(input_wav: Path, rate: int, frames: int) -> np.ndarray:
    """The sample's input at the output's rate, as long as the output (cut, or padded with silence)."""
    from duplexeval.audio import read_wav, resample

    data, in_rate = read_wav(input_wav)
    mono = data if data.ndim == 1 else data.mean(axis=1)
    heard = resample(mono, in_rate, rate)[:frames]
    return np.pad(heard, (0, frames - len(heard))) if len(heard) < frames else heard


def import_authors_outputs(bench: dict[str, Any], src: Path, request: ImportRequest) -> ImportedRun:
    """Checks every output, writes the run folder of those that pass, scores it; the rest in `skipped`."""
    from duplexeval.benchmarks import benchmark_for
    from duplexeval.benchmarks.fdb.samples import (
        SAMPLES_FILE,
        SampleError,
        data_root,
        list_samples,
        reference_distributions,
        sample_record,
    )
    from duplexeval.executors.base import CannotRun
    from duplexeval.io import atomic_write_json
    from duplexeval.recordings import run_folder as rf
    from duplexeval.runfolder.verify import seal_manifest

    opts = bench["options"]
    v15 = opts.get("v15")
    try:
        root = data_root(bench)
        samples = {s.id: s for s in list_samples(bench, root)}
        refs = reference_distributions(bench, root) if opts["task"] == "backchannel" else None
    except (CannotRun, SampleError) as exc:
        raise ImportRefused(f"{bench['id']}: the outputs are scored against the published samples, which are not "
                            f"here: {exc}") from None
    folder = _task_folder(src, opts["subset"])
    bench_dir = rf.bench_dir_for(request.runs_dir, request.run_id, request.model, bench["id"])
    skipped: dict[str, str] = {}
    accepted: dict[str, list[tuple[str, Path, np.ndarray, int]]] = {}
    entries = sorted(p for p in folder.iterdir() if not p.name.startswith("."))
    for entry in entries:
        if not entry.is_dir():
            continue   # their scripts leave result files beside the sample folders
        if entry.name not in samples:
            skipped[entry.name] = f"names no sample of {opts['subset']} in the imported data"
            continue
        plays = [("", OUTPUT, "input.wav")] + ([(v15["clean_suffix"], CLEAN_OUTPUT, "clean_input.wav")] if v15 else [])
        items = []
        for suffix, name, heard_name in plays:
            path = entry / name
            if not path.is_file():
                skipped[f"{entry.name}/{name}"] = "missing"
                break
            said, rate, problem = _read_output(path)
            if said is None:
                skipped[f"{entry.name}/{name}"] = str(problem)
                break
            heard = _heard(samples[entry.name].folder / heard_name, rate, len(said))
            items.append((entry.name + suffix, path, np.stack([heard, said], axis=1).astype(np.float32), rate))
        else:
            accepted[entry.name] = items
    for sid in samples:
        if sid not in accepted and not any(k == sid or k.startswith(f"{sid}/") for k in skipped):
            skipped[sid] = f"no {sid}/{OUTPUT} in {folder}"
    if not accepted:
        raise ImportRefused(f"{folder}: no output of the {LAYOUT} layout could be imported for {bench['id']} "
                            f"(expected <ID>/{OUTPUT}, IDs of {opts['subset']}); first reasons: "
                            + "; ".join(f"{k}: {v}" for k, v in list(skipped.items())[:3]))
    request.log(f"{len(accepted)} of {len(samples)} samples have a usable output; writing {bench_dir}")
    hashes: dict[str, str] = {}
    for items in accepted.values():
        for item_id, path, audio, rate in items:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            hashes[f"{path.parent.name}/{path.name}"] = digest
            rf.write_item(bench_dir / "items" / item_id, path, digest, audio, rate, layout=LAYOUT, model=request.model)
    records = [sample_record(bench, samples[sid], refs) for sid in sorted(accepted, key=_id_order)]
    atomic_write_json(bench_dir / SAMPLES_FILE, {"task": opts["task"], "subset": opts["subset"], "samples": records})
    rf.write_job_files(bench_dir, bench, request.model, LAYOUT)
    rf.record_in_manifest(bench_dir.parent.parent, run_id=request.run_id, suite=request.suite, bench=bench,
                          bench_sha256=request.bench_sha256, model=request.model, layout=LAYOUT,
                          layout_version=LAYOUT_VERSION, source_dir=folder, files=hashes,
                          cache_mode=request.cache_mode)
    results = benchmark_for(bench).score_dir(bench_dir, bench, request.cache_mode) or {}
    rf.write_summary(bench_dir.parent.parent)
    seal_manifest(bench_dir.parent.parent)
    return ImportedRun(bench_dir, results, skipped)


def _id_order(sid: str) -> tuple[int, int, str]:
    return (0, int(sid), "") if sid.isdigit() else (1, 0, sid)
