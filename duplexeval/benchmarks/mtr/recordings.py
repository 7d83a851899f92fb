"""MTR-DuplexBench recordings in and out: export ours in the authors' layout, import recordings made elsewhere.

Export (`duplexeval export-recordings RUN --layout mtr-authors OUT`): every finished round
of every MTR folder of a run becomes `OUT/<model>/<benchmark>/<authors' name>.wav` (the
recording itself: left = user, right = model, the same channel order as ours), plus their
round-start file (`round_start.json`: where round k starts, since our recording of round
k carries the forced history 1..k-1 before it) and `duplexeval-export.json` (which item
each file is, its sha256), written last.

Import (`duplexeval import-recordings BENCH DIR --model NAME --layout mtr-authors|duplexeval`):
the benchmark's planned rounds (its dialogues, as a run would plan them) name the files
expected (`authors_layout.file_name`, or `<item>.wav` for ours); every file is checked
against its round's stimulus (`duplexeval.recordings.align`) before anything is written,
and the run folder (`duplexeval.recordings.run_folder`) is scored by the family's scorer.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from duplexeval.benchmarks.mtr import authors_layout as authors
from duplexeval.io import atomic_write_json, sha256_file
from duplexeval.recordings.run_folder import ImportRefused

LAYOUTS = ("mtr-authors", "duplexeval")
DUPLEXEVAL_LAYOUT_VERSION = 1
EXPORT_FILE = "duplexeval-export.json"
# Files a submission folder may hold beside its WAVs (never read as recordings).
SIDE_FILES = {authors.START_FILE, EXPORT_FILE}


def _item_status(item_dir: Path) -> dict[str, Any] | None:
    from duplexeval.runner.integrity import item_status

    return item_status(item_dir)


# --- export ------------------------------------------------------------------------------

def export_bench_dir(bench_dir: Path, out: Path, bench: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
    """Writes one MTR folder's recordings in the authors' layout into `out`; (files, items not exported: reason)."""
    from duplexeval.benchmarks.mtr.score import ROUNDS_FILE

    info = json.loads((bench_dir / ROUNDS_FILE).read_text("utf-8"))
    numbers = authors.dialogue_numbers(bench, (v["dialogue"] for v in info.values()))
    if out.exists() and any(out.iterdir()):
        raise ImportRefused(f"{out}: not empty; export into a new folder (nothing was written)")
    out.mkdir(parents=True, exist_ok=True)
    files: dict[str, dict[str, Any]] = {}
    skipped: dict[str, str] = {}
    starts = []
    prefix = authors.prefix_for(bench)
    for item_id in sorted(info):
        entry = info[item_id]
        st = _item_status(bench_dir / "items" / item_id)
        if st is None or st.get("status") != "ok":
            skipped[item_id] = "unfinished" if st is None else f"{st.get('status')}: {st.get('reason')}"
            continue
        number = numbers[entry["dialogue"]]
        name = authors.file_name(bench, number, entry["round"]["round"], entry["round"].get("feature"))
        (out / name).write_bytes((bench_dir / "items" / item_id / "recording.wav").read_bytes())
        files[name] = {"item": item_id, "sha256": sha256_file(out / name)}
        starts.append(authors.start_entry(f"{prefix}_{number}", entry["round"], entry["window"]))
    atomic_write_json(out / authors.START_FILE, starts)
    atomic_write_json(out / EXPORT_FILE, {"layout": authors.LAYOUT, "layout_version": authors.LAYOUT_VERSION,
                                          "benchmark": bench["id"], "source": str(bench_dir.resolve()),
                                          "files": files, "not_exported": skipped})
    return sorted(files), skipped


# --- import ------------------------------------------------------------------------------

@dataclass
class Expected:
    item_id: str
    name: str
    scored: Any            # the ScoredRound
    need_s: float          # the end of its response window: how much of the file is checked and scored


def planned(bench: dict[str, Any], layout: str, cache_mode: str = "readwrite") -> list[Expected]:
    """The rounds a run of `bench` would plan, each with the file name `layout` gives it."""
    from duplexeval.benchmarks.mtr.items import load_dialogues, scored_rounds
    from duplexeval.benchmarks.mtr.score import judges_for

    if layout not in LAYOUTS:
        raise ImportRefused(f"--layout {layout!r}: not one of {', '.join(LAYOUTS)}")
    if layout == "mtr-authors":
        authors.prefix_for(bench)  # refuses a dimension the authors' layout cannot name
    dialogues = load_dialogues(bench)
    judges = judges_for(bench, cache_mode) if bench.get("turns") == "segmented" else None
    scored = scored_rounds(bench, dialogues, judges)
    numbers = authors.dialogue_numbers(bench, (s.dialogue.id for s in scored)) if layout == "mtr-authors" else {}
    out = []
    for s in scored:
        name = (authors.file_name(bench, numbers[s.dialogue.id], s.round.round, s.round.feature)
                if layout == "mtr-authors" else f"{s.item_id}.wav")
        out.append(Expected(s.item_id, name, s, s.window.end_s))
    return out


def match_files(src: Path, expected: list[Expected], layout: str) -> dict[str, Path]:
    """{item: file}; refuses unknown or missing files, naming them (nothing is read yet)."""
    wavs = sorted(p for p in src.iterdir() if p.is_file() and p.name not in SIDE_FILES)
    by_name = {e.name: e for e in expected}
    unknown = [p.name for p in wavs if p.name not in by_name]
    if unknown:
        example = ", ".join(e.name for e in expected[:2])
        raise ImportRefused(f"{src}: {len(unknown)} file(s) name no planned round of the benchmark in the {layout} "
                            f"layout: {', '.join(unknown[:5])}{' ...' if len(unknown) > 5 else ''} "
                            f"(first that does not fit: {unknown[0]}; expected names like {example})")
    have = {p.name: p for p in wavs}
    missing = [e.name for e in expected if e.name not in have]
    if missing:
        raise ImportRefused(f"{src}: {len(missing)} of {len(expected)} planned round(s) have no file: "
                            f"{', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}")
    return {e.item_id: have[e.name] for e in expected}


def read_checked(path: Path, exp: Expected, rate: int) -> tuple[np.ndarray | None, str | None]:
    """(audio at the benchmark's rate, None) or (None, why the file is refused)."""
    from duplexeval.recordings.align import user_channel_problem
    from duplexeval.recordings.checks import read_checked as read_audio

    audio, sr, problem = read_audio(path, min_s=exp.need_s)   # finite samples, a plausible rate, long enough
    if audio is None:
        return None, problem
    if sr != rate:
        import soxr

        audio = soxr.resample(audio, sr, rate).astype(np.float32)
    user, _ = exp.scored.dialogue.audio()
    problem = user_channel_problem(audio, rate, user, exp.need_s)
    return (None, problem) if problem else (audio, None)


def import_recordings(bench: dict[str, Any], src: Path, *, layout: str, model: str, runs_dir: Path, run_id: str,
                      suite: str | None, bench_sha256: str, cache_mode: str,
                      log: Callable[[str], None] = lambda s: None) -> tuple[Path, dict[str, Any]]:
    """Checks every file, then writes and scores the run folder; (bench folder, results)."""
    from duplexeval.benchmarks import benchmark_for
    from duplexeval.benchmarks.mtr.score import write_rounds_file
    from duplexeval.recordings import run_folder as rf
    from duplexeval.runfolder.verify import seal_manifest

    rate = int(bench["audio"]["rate"])
    bench_dir = rf.bench_dir_for(runs_dir, run_id, model, bench["id"])
    expected = planned(bench, layout, cache_mode)
    files = match_files(src, expected, layout)
    by_item = {e.item_id: e for e in expected}
    checked: dict[str, np.ndarray] = {}
    refused: list[str] = []
    for item_id, path in files.items():
        audio, problem = read_checked(path, by_item[item_id], rate)
        if problem:
            refused.append(f"{path.name}: {problem}")
        else:
            assert audio is not None   # read_checked gives the audio when it finds no problem
            checked[item_id] = audio
    if refused:
        raise ImportRefused(f"{src}: refused {len(refused)} of {len(files)} file(s), nothing was written:\n  "
                            + "\n  ".join(refused))
    log(f"{len(files)} files match their stimulus; writing {bench_dir}")
    hashes = {}
    for item_id, path in files.items():
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        hashes[path.name] = digest
        rf.write_item(bench_dir / "items" / item_id, path, digest, checked[item_id], rate, layout=layout, model=model)
    write_rounds_file(bench_dir, [e.scored for e in expected])
    rf.write_job_files(bench_dir, bench, model, layout)
    version = authors.LAYOUT_VERSION if layout == "mtr-authors" else DUPLEXEVAL_LAYOUT_VERSION
    rf.record_in_manifest(bench_dir.parent.parent, run_id=run_id, suite=suite, bench=bench, bench_sha256=bench_sha256,
                          model=model, layout=layout, layout_version=version, source_dir=src, files=hashes,
                          cache_mode=cache_mode)
    results = benchmark_for(bench).score_dir(bench_dir, bench, cache_mode)
    rf.write_summary(bench_dir.parent.parent)
    seal_manifest(bench_dir.parent.parent)
    return bench_dir, results or {}
