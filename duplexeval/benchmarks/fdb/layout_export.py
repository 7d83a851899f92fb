"""Our recordings in Full-Duplex-Bench's per-sample layout, so the authors' evaluation scripts read them unchanged.

One sample folder per item: the published annotations copied from the imported sample,
`input.wav` (the channel the model heard, so input and output stay sample-synchronous
whatever rate the published input had), `output.wav` (the model's channel, mono) and
`output.json` (word-level ASR of output.wav in their shape, {"text", "chunks": [{"text",
"timestamp"}]}). v1.5 adds the same for the clean (non-overlap) run: `clean_input.wav`,
`clean_output.wav`, `clean_output.json`.

For v1.0 user interruption their ASR step transcribes only the model's speech after the
interruption ends and shifts the word times by that offset; `words_for` is called the same
way here (`crop_s`), so output.json holds what theirs would. Which ASR made the words is
the caller's choice and is recorded in `<folder>.duplexeval-export.json` beside the folder.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from duplexeval.audio import write_wav
from duplexeval.benchmarks.fdb import layout
from duplexeval.io import atomic_write_json, sha256_file

EXPORT_FILE = "duplexeval-export.json"


def manifest_path(out: Path) -> Path:
    """Where an export's manifest goes: beside `out`, not in it. Their scripts take every entry
    of the folder for a sample folder (eval_pause_handling.py and eval_smooth_turn_taking.py
    list it and open <entry>/output.json), so a file inside would stop them."""
    return out.parent / f"{out.name}.{EXPORT_FILE}"
LAYOUT = "fdb-authors"
ANNOTATION_FILES = ("pause.json", "turn_taking.json", "interrupt.json", "transcription.json", "metadata.json",
                    "context.wav", "interrupt.wav")

# words_for(mono audio, rate) -> [(text, start, end)] in seconds from the start of that audio.
WordsFor = Callable[[np.ndarray, int], Sequence[tuple[str, float, float]]]


@dataclass(frozen=True)
class Played:
    """One playback as recorded: what the model heard and what it said, sample-synchronous, mono."""
    heard: np.ndarray
    said: np.ndarray
    rate: int


def asr_json(words: Sequence[tuple[str, float, float | None]]) -> dict[str, Any]:
    """Their output.json shape: the words joined by spaces, each with [start, end] in seconds."""
    chunks = [{"text": str(t), "timestamp": [float(s), None if e is None else float(e)]} for t, s, e in words]
    return {"text": " ".join(str(t) for t, _, _ in words), "chunks": chunks}


def crop_offset(sample: Path) -> float:
    """Where their ASR starts reading output.wav: the end of the interruption for a user-interruption
    sample (interrupt.json), else 0."""
    if (sample / "interrupt.json").is_file():
        return float(layout.read_interrupt(sample / "interrupt.json")["timestamp"][1])
    return 0.0


def transcribe_as_they_do(said: np.ndarray, rate: int, crop_s: float, words_for: WordsFor) -> list[tuple]:
    """ASR of the model channel from `crop_s` on, word times moved back onto the recording's axis."""
    start = max(0, int(crop_s * rate))
    return [(t, s + crop_s, e + crop_s) for t, s, e in words_for(said[start:], rate)]


def write_sample(dest: Path, annotations: Path | None, played: Played, words_for: WordsFor, *,
                 clean: Played | None = None) -> list[str]:
    """One sample folder in their layout; returns the names written. `dest` must not exist."""
    dest.mkdir(parents=True)
    if annotations is not None:
        for name in ANNOTATION_FILES:
            if (annotations / name).is_file():
                shutil.copyfile(annotations / name, dest / name)
    crop = crop_offset(dest)
    write_wav(dest / "input.wav", played.heard, played.rate)
    write_wav(dest / "output.wav", played.said, played.rate)
    atomic_write_json(dest / "output.json", asr_json(transcribe_as_they_do(played.said, played.rate, crop, words_for)),
                      indent=4)
    if clean is not None:
        write_wav(dest / "clean_input.wav", clean.heard, clean.rate)
        write_wav(dest / "clean_output.wav", clean.said, clean.rate)
        atomic_write_json(dest / "clean_output.json",
                          asr_json(transcribe_as_they_do(clean.said, clean.rate, 0.0, words_for)), indent=4)
    return sorted(p.name for p in dest.iterdir())


def read_played(recording: Path) -> Played:
    """A recording.wav of ours (channel 0 heard, channel 1 said) as a Played."""
    from duplexeval.audio import read_stereo_recording

    heard, said, rate = read_stereo_recording(recording)
    return Played(heard, said, rate)


def cut_to_input(played: Played, input_wav: Path) -> Played:
    """The playback cut to the published input's length: their output.wav is time-synchronous
    with input.wav, and our recording runs on to the end of its last frame (what our scorer
    cuts off too), so a longer output.wav would give their backchannel rule more bins."""
    import soundfile as sf

    info = sf.info(str(input_wav))
    n = int(round(info.frames / info.samplerate * played.rate))
    return Played(played.heard[:n], played.said[:n], played.rate) if n < len(played.said) else played


def export_items(items: dict[str, tuple[Path, Path | None, Path | None]], out: Path, words_for: WordsFor, *,
                 asr: dict[str, Any], source: str, cut: bool = True) -> tuple[list[str], dict[str, str]]:
    """item id -> (recording.wav, its imported sample folder or None, the clean run's recording.wav or None)
    -> `out/<item id>/`; returns (folders written, {item: why not}) and writes EXPORT_FILE last.

    `asr` describes the words_for used (backend, model): it goes into EXPORT_FILE, since
    every FDB number read from these folders depends on it. `cut`: output.wav cut to the
    input's length (the reading options.output_length: cut-to-input), else as recorded.
    """
    if out.exists() and any(out.iterdir()):
        raise layout.FdbLayoutError(f"{out}: not empty; export into a new folder (nothing was written)")
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, dict[str, Any]] = {}
    skipped: dict[str, str] = {}
    for item_id, (recording, sample, clean_rec) in sorted(items.items()):
        try:
            played = read_played(recording)
            clean = read_played(clean_rec) if clean_rec is not None else None
        except (OSError, ValueError, RuntimeError) as exc:   # soundfile's errors are RuntimeErrors
            skipped[item_id] = f"unreadable recording: {exc}"
            continue
        if cut and sample is not None and (sample / "input.wav").is_file():
            played = cut_to_input(played, sample / "input.wav")
        if cut and clean is not None and sample is not None and (sample / "clean_input.wav").is_file():
            clean = cut_to_input(clean, sample / "clean_input.wav")
        names = write_sample(out / item_id, sample, played, words_for, clean=clean)
        written[item_id] = {"files": {n: sha256_file(out / item_id / n) for n in names},
                            "sample": str(sample) if sample else None}
    atomic_write_json(manifest_path(out), {"layout": LAYOUT, "layout_version": layout.LAYOUT_VERSION,
                                          "source": source, "asr": asr, "samples": written,
                                          "not_exported": skipped})
    return sorted(written), skipped


def export_bench_dir(bench_dir: Path, out: Path, sample_for: Callable[[str], Path | None], words_for: WordsFor, *,
                     asr: dict[str, Any], clean_for: Callable[[str], str | None] = lambda item: None,
                     cut: bool = True) -> tuple[list[str], dict[str, str]]:
    """One <model>/<benchmark> folder of ours -> `out/<item>/` in their layout (what a RecordingExporter calls).

    `sample_for(item)`: the imported sample folder the item played (its annotations are
    copied); `clean_for(item)`: the item id of the same sample's clean run (v1.5), whose
    recording becomes clean_*; an item that is some other item's clean run is not exported
    on its own. Unfinished or damaged items (status.json) are listed, not exported.
    """
    from duplexeval.runner.integrity import item_status

    ids = sorted(p.name for p in (bench_dir / "items").iterdir() if p.is_dir())
    clean_ids = {c for i in ids if (c := clean_for(i))}
    items: dict[str, tuple[Path, Path | None, Path | None]] = {}
    skipped: dict[str, str] = {}

    def finished(item: str) -> Path | None:
        st = item_status(bench_dir / "items" / item)
        if st is None or st.get("status") != "ok":
            skipped[item] = "unfinished" if st is None else f"{st.get('status')}: {st.get('reason')}"
            return None
        return bench_dir / "items" / item / "recording.wav"

    for item in ids:
        if item in clean_ids:
            continue
        rec = finished(item)
        clean = clean_for(item)
        clean_rec = finished(clean) if clean else None
        if rec is not None and (clean is None or clean_rec is not None):
            items[item] = (rec, sample_for(item), clean_rec)
    written, unreadable = export_items(items, out, words_for, asr=asr, source=str(bench_dir.resolve()), cut=cut)
    return written, {**skipped, **unreadable}
