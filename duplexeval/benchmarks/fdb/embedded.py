"""The embedded mini set: our own samples (data/embedded/fdb/source.yaml) spoken by flite and
rendered into Full-Duplex-Bench's published per-sample layout.

Why a source file rather than committed audio: the texts, pauses and slots are what we
wrote; the audio follows from them and flite, so the repository keeps a few kilobytes and a
render is checked by content (the folder is keyed by the source's sha256 and the TTS
settings, and written complete or not at all).

Per sample folder (`<out>/<subset>/<id>/`), as the published v1.0 data has them:
`input.wav` (16-bit mono), the task's annotation (`pause.json`, `turn_taking.json`,
`interrupt.json`), `context.wav` and `interrupt.wav` for interruptions. Ours besides:
`oracle.json` (the cues the runner sends to a reference agent with capability `labels`:
what the ideal listener would do) and, per backchannel subset, `reference_distribution.json`
(the slots' distribution over 0.2 s bins, made like the authors' ICC reference).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from duplexeval.io import atomic_write_json, sha256_json

EMBEDDED_VERSION = 1
PART_MARKS = ("pause", "backchannel", "turn_end", "context", "reply_room", "interrupt", "overlap")


class EmbeddedSourceError(ValueError):
    """A source file that does not say what a sample is; the message names the file and the sample."""


def load_source(path: Path) -> dict[str, Any]:
    import yaml

    try:
        data = yaml.safe_load(path.read_text("utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise EmbeddedSourceError(f"{path}: cannot read the embedded source ({exc})") from None
    if not isinstance(data, dict) or data.get("kind") != "fdb-embedded" or not isinstance(data.get("subsets"), dict):
        raise EmbeddedSourceError(f"{path}: not a Full-Duplex-Bench embedded source (kind: fdb-embedded, subsets: ...)")
    for subset, samples in data["subsets"].items():
        for n, sample in enumerate(samples or []):
            where = f"{path}: subsets.{subset}[{n}]"
            if not isinstance(sample, dict) or "id" not in sample or not isinstance(sample.get("parts"), list):
                raise EmbeddedSourceError(f"{where}: a sample needs `id` and a list `parts`")
            for k, part in enumerate(sample["parts"]):
                if not isinstance(part, dict) or ("say" in part) == ("silence" in part):
                    raise EmbeddedSourceError(f"{where}.parts[{k}]: a part is either `say: TEXT` or `silence: SECONDS`")
                unknown = set(part) - {"say", "silence", *PART_MARKS}
                if unknown:
                    raise EmbeddedSourceError(f"{where}.parts[{k}]: unknown mark(s) {sorted(unknown)}; "
                                              f"known: {', '.join(PART_MARKS)}")
    return data


def _speech(text: str, voice: str, rate: int) -> np.ndarray:
    from duplexeval.audio import trim_silence
    from duplexeval.tts import synthesize

    return trim_silence(synthesize(text, voice, rate), rate)


def render_sample(sample: dict[str, Any], voice: str, rate: int, backchannel_word: str, bin_s: float,
                  epsilon: float) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """(wav name -> audio, json name -> content) of one sample folder."""
    pieces: list[np.ndarray] = []
    t = 0.0
    marks: dict[str, list[tuple[float, float, str]]] = {m: [] for m in PART_MARKS}
    for part in sample["parts"]:
        audio = (_speech(str(part["say"]), voice, rate) if "say" in part
                 else np.zeros(int(round(float(part["silence"]) * rate)), dtype=np.float32))
        start, t = t, t + len(audio) / rate
        for m in PART_MARKS:
            if part.get(m):
                marks[m].append((round(start, 3), round(t, 3), str(part.get("say", ""))))
        pieces.append(audio)
    wav = {"input.wav": np.concatenate(pieces).astype(np.float32)}
    files: dict[str, Any] = {}
    cues: list[dict[str, Any]] = []
    reply = sample.get("reply")
    if marks["pause"]:
        files["pause.json"] = [{"text": "[PAUSE]", "timestamp": [s, e]} for s, e, _ in marks["pause"]]
    if marks["turn_end"]:
        s = marks["turn_end"][0][0]
        files["turn_taking.json"] = [{"text": "[TURN-TAKING]", "timestamp": [s, s]}]
        cues.append({"t": s, "label": "T", "phase": "end", "gold_answer": reply})
    if marks["interrupt"]:
        (cs, ce, context), (is_, ie, interrupt) = marks["context"][0], marks["interrupt"][0]
        files["interrupt.json"] = [{"context": context, "interrupt": interrupt, "timestamp": [is_, ie]}]
        wav["context.wav"] = wav["input.wav"][int(cs * rate):int(ce * rate)]
        wav["interrupt.wav"] = wav["input.wav"][int(is_ * rate):int(ie * rate)]
        cues += [{"t": ce, "label": "N4Q", "phase": "end"}, {"t": is_, "label": "N4R", "phase": "start"},
                 {"t": ie, "label": "T", "phase": "end", "gold_answer": reply}]
    for s, _, _ in marks["backchannel"]:
        cues.append({"t": s, "label": "T", "phase": "end", "gold_answer": backchannel_word})
    oracle: dict[str, Any] = {"source": "duplexeval embedded set (ours)", "cues": cues}
    if marks["overlap"]:
        _overlap_sample(sample, marks, wav, files, oracle, rate)
    files["oracle.json"] = oracle
    if marks["backchannel"]:
        from duplexeval.benchmarks.fdb.metrics import backchannel_histogram

        duration = len(wav["input.wav"]) / rate
        slots = [(s, e) for s, e, _ in marks["backchannel"]]
        files["reference"] = [float(x) for x in backchannel_histogram(slots, duration, bin_s, epsilon)]
    return wav, files


def _overlap_sample(sample: dict[str, Any], marks: dict[str, list[tuple[float, float, str]]],
                    wav: dict[str, np.ndarray], files: dict[str, Any], oracle: dict[str, Any], rate: int) -> None:
    """A v1.5 sample: clean_input.wav is input.wav with the overlap's speech silenced (same
    length, so both playbacks share one time axis), metadata.json names the prior turn, the
    overlap's words and its span. The oracle answers the turn in both; where the source gives
    `overlap_reply` (a user interruption) it stops as the overlap starts and answers it once
    it ends, otherwise it talks on through the overlap."""
    (os_, oe, said), turn = marks["overlap"][0], marks["context"][0] if marks["context"] else None
    clean = wav["input.wav"].copy()
    clean[int(round(os_ * rate)):int(round(oe * rate))] = 0.0
    wav["clean_input.wav"] = clean
    files["metadata.json"] = {"context_text": turn[2] if turn else "", "current_turn_text": said,
                              "timestamps": [os_, oe]}
    answer = [{"t": turn[1], "label": "T", "phase": "end", "gold_answer": sample.get("reply")}] if turn else []
    oracle["cues"], oracle["clean_cues"] = list(answer), list(answer)
    if sample.get("overlap_reply"):
        oracle["cues"] += [{"t": os_, "label": "N4R", "phase": "start"},
                           {"t": oe, "label": "T", "phase": "end", "gold_answer": sample["overlap_reply"]}]


def render(source_path: Path, out: Path, *, replace: bool = True) -> Path:
    """Renders every subset of the source into `out` (the published layout); returns `out`.

    Written into a temporary folder beside `out` and renamed into place, so a folder that
    exists is complete; with `replace` False an existing `out` (another worker's render of
    the same content) is kept."""
    from duplexeval.audio import write_wav

    src = load_source(source_path)
    rate, voice = int(src.get("rate", 16000)), str(src.get("voice", "slt"))
    word = str(src.get("backchannel_word", "I see"))
    reference = src.get("reference") or {}
    bin_s, epsilon = float(reference.get("bin_s", 0.2)), float(reference.get("epsilon", 1e-10))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for subset, samples in src["subsets"].items():
            references: dict[str, list[float]] = {}
            for sample in samples or []:
                folder = tmp / subset / str(sample["id"])
                folder.mkdir(parents=True)
                wavs, files = render_sample(sample, voice, rate, word, bin_s, epsilon)
                for name, audio in wavs.items():
                    write_wav(folder / name, audio, rate)
                reference = files.pop("reference", None)
                if reference is not None:
                    references[str(sample["id"])] = reference
                for name, content in files.items():
                    (folder / name).write_text(json.dumps(content, indent=2) + "\n", encoding="utf-8")
            if references:
                atomic_write_json(tmp / subset / "reference_distribution.json", references)
        if out.exists():
            if not replace:
                return out
            shutil.rmtree(out)
        try:
            tmp.rename(out)
        except OSError:
            if not out.is_dir():  # lost a race to another render of the same content: theirs is complete
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return out


def rendered_root(source_path: Path, cache: Path) -> Path:
    """The rendered layout of `source_path` in the content store (`renders` under `cache`), rendered
    once per content and TTS settings; a rendered file changed by hand is a miss, rendered again."""
    from duplexeval.store import ContentStore
    from duplexeval.tts import TTS_CACHE_VERSION

    components = {"renderer": "full-duplex-bench/embedded", "v": EMBEDDED_VERSION, "tts": TTS_CACHE_VERSION,
                  "source_sha256": sha256_json(source_path.read_bytes().decode("utf-8"))}
    store = ContentStore.of("renders", cache / "renders")
    return store.put_folder(components, lambda out: render(source_path, out, replace=True))
