"""Differential against Full-Duplex-Bench's public evaluation scripts: their numbers and ours on the same folders.

Two steps (docs/fdb.md, "Differential", records the figures):

    # 1. recordings of ours in their layout: FDB-style inputs (flite voices, v1.5 metadata),
    #    played through reference agents, exported with output.json (project default ASR);
    #    and OUT/constructed: hand-laid input/output pairs with pauses near the merge gaps
    .venv/bin/python bench/fdb_differential.py record OUT [--agents cascade,babbler]

    # 2. their scripts and ours on each sample folder (OUT, and their example_data/* folders)
    .venv/bin/python bench/fdb_differential.py compare --fdb-src SRC --their-python PY ROOT...

    # 3. v1.0: a run of ours (e.g. runs/embedded) exported with `export-recordings --layout
    #    fdb-authors`, their four v1.0 scripts on every exported folder, their averages
    #    against our results.json (TOR, latency, backchannel frequency and JSD)
    .venv/bin/python bench/fdb_differential.py v10 RUN_DIR --fdb-src SRC --their-python PY

    # 4. the authors' outputs at 24 and 48 kHz: backchannel answers laid at those rates, imported
    #    with the fdb-authors layout and scored under their readings (vad_rate assume-16k, ...),
    #    then step 3 on that run: their eval_backchannel.py against our results.json
    .venv/bin/python bench/fdb_differential.py rates --fdb-src SRC --their-python PY

SRC is their `v1_v1.5` folder (`git archive` of github.com/DanielLin94144/Full-Duplex-Bench);
PY a Python with what their scripts import (torch + torchaudio of one version, silero-vad,
librosa, soundfile): this project's venv has no torchaudio, so a throwaway venv. Their
code is run as is, from SRC, on a copy of each ROOT; nothing of it is in this project.
Shims, in the child process only: `torch.hub.load("snakers4/silero-vad")` (a download)
returns the pip silero-vad package's JIT model instead; `torchaudio.load` (which from
torchaudio 2.9 on needs FFmpeg libraries through torchcodec) reads with soundfile, the
same float samples for PCM WAV; and every Silero call records the intervals it returned,
so the comparison can tell the VAD apart from the arithmetic:

- timing (get_timing.py): their latency_intervals.json against v15_timing on (a) the very
  intervals their VAD returned (the arithmetic alone) and (b) our own resampling and VAD
  call (the whole path);
- adaptation (eval_general_before_after.py, speaking rate and intensity; UTMOSv2 and pitch
  off: not in this project): their general_split.json against v15_adaptation, likewise;
- paired tests (significance_test.py's run_batch_tests, its defaults) on those files against
  v15_stats, every sample given the C_RESPOND verdict by hand (no LLM here).

LLM-judged parts (behaviour tags, interruption relevance) need OpenAI and are not compared.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

RATE = 16000
TOL = 1e-6

# --- step 1: recordings ----------------------------------------------------------------

# (task, user turn, overlap text, overlap voice, gap after the turn before the overlap, seconds)
SAMPLES = [
    ("user_interruption", "Aria, tell me about the history of Rome.", "Aria, wait, tell me about Paris instead.",
     "slt", 2.0),
    ("background_speech", "Aria, what should I cook for dinner tonight?", "The train to Boston leaves at nine.",
     "awb", 1.8),
    ("talking_to_other", "Aria, how far is the moon from the earth?", "Hey John, can you pass me the salt?",
     "slt", 2.2),
    ("user_backchannel", "Aria, explain how a rainbow forms.", "uh huh, yeah.", "slt", 2.4),
]


def _inputs(text: str, overlap: str, voice: str, gap_s: float) -> tuple[np.ndarray, np.ndarray, list[float]]:
    from duplexeval.tts import synthesize

    turn = synthesize(text, "slt", RATE)
    other = synthesize(overlap, voice, RATE)
    lead = np.zeros(int(0.5 * RATE), dtype=np.float32)
    start = len(lead) + len(turn) + int(gap_s * RATE)
    total = start + len(other) + int(4.0 * RATE)
    clean = np.zeros(total, dtype=np.float32)
    clean[len(lead):len(lead) + len(turn)] = turn
    noisy = clean.copy()
    noisy[start:start + len(other)] += other
    return noisy, clean, [round(start / RATE, 3), round((start + len(other)) / RATE, 3)]


def _play(agent: str, audio: np.ndarray) -> np.ndarray:
    """A lockstep session of `agent` hearing `audio`: the stereo recording (heard, said)."""
    from duplexeval.runner import FileStimulus, load_model_spec
    from duplexeval.runner.backends import make_backend
    from duplexeval.runner.session import run_session

    spec = load_model_spec(agent)
    backend = make_backend(spec)
    endpoint = backend.start()
    try:
        out = asyncio.run(run_session(endpoint, spec, FileStimulus(audio, RATE), "lockstep", RATE))
    finally:
        backend.stop()
    if out.fault is not None:
        raise SystemExit(f"{agent}: session failed: {out.fault}")
    heard = np.concatenate(out.heard)
    return np.stack([heard, out.said], axis=1)


def _place(total_s: float, parts: list[tuple[float, str, str]]) -> np.ndarray:
    """A track of `total_s` seconds with flite phrases (start s, text, voice) laid in."""
    from duplexeval.tts import synthesize

    track = np.zeros(int(total_s * RATE), dtype=np.float32)
    for start, text, voice in parts:
        a = synthesize(text, voice, RATE)
        i = int(start * RATE)
        track[i:i + len(a)] += a[: len(track) - i]
    return track


def _after(text: str, voice: str, start: float, pause_s: float) -> float:
    """Where a phrase starting at `start` ends, plus `pause_s`: the start of the next one."""
    from duplexeval.tts import synthesize

    return start + len(synthesize(text, voice, RATE)) / RATE + pause_s


# Hand-laid cases: (user phrases, model phrases), each (start s, text, voice), with a pause placed
# so that merging changes the answer: a user "yeah" over the end of a model phrase followed by a
# model pause (VAD gap about 0.4 s: merged at 0.5, not at 0.3), the model starting inside a user
# pause (VAD gap about 0.65 s: apart at 0.6, merged at 0.7), and short backchannels over talk.
M1, M2 = "The nearest station is on Main Street.", "It takes ten minutes on foot."
A1, A2 = "Aria, where is the nearest station?", "And is it open late?"
MODEL_PAUSE_S = 0.2    # between flite clips (each carries its own leading and trailing silence)
USER_PAUSE_S = 0.45


def constructed(out: Path) -> None:
    """OUT/constructed/<case>/input.wav + output.wav: pauses near the published merge gaps, so a changed
    gap or comparison shows in the differential (the agents' recordings do not exercise them)."""
    import soundfile as sf

    m1_end = _after(M1, "rms", 3.0, 0.0)
    u2_at = _after(A1, "slt", 0.5, USER_PAUSE_S)
    cases = {
        "yeah-before-model-pause": ([(0.5, A1, "slt"), (m1_end - 0.5, "yeah", "slt")],
                                    [(3.0, M1, "rms"), (m1_end + MODEL_PAUSE_S, M2, "rms")]),
        "model-in-user-pause": ([(0.5, A1, "slt"), (u2_at, A2, "slt")],
                                [(u2_at - 0.25, M1, "rms")]),
        "backchannels": ([(1.5, "uh huh", "slt"), (4.0, "yeah", "slt"), (6.2, "right", "slt")],
                         [(0.3, M1 + " " + M2 + " " + M1, "rms")]),
    }
    for name, (user, model) in cases.items():
        folder = out / "constructed" / name
        folder.mkdir(parents=True)
        sf.write(folder / "input.wav", _place(12.0, user), RATE, subtype="PCM_16")
        sf.write(folder / "output.wav", _place(12.0, model), RATE, subtype="PCM_16")
    print(f"constructed -> {out / 'constructed'}")


def record(out: Path, agents: list[str]) -> None:
    import soundfile as sf

    from duplexeval.benchmarks.fdb import layout_export
    from duplexeval.judges.asr import asr_config, transcribe

    def words_for(audio: np.ndarray, rate: int):
        return [(w.text, w.start, w.end) for w in transcribe(audio, rate, None).words]

    work = Path(tempfile.mkdtemp(prefix="fdb-diff-"))
    for agent in agents:
        items = {}
        for n, (task, text, overlap, voice, gap) in enumerate(SAMPLES, 1):
            noisy, clean, span = _inputs(text, overlap, voice, gap)
            sample = work / "samples" / f"{n}"
            sample.mkdir(parents=True, exist_ok=True)
            (sample / "metadata.json").write_text(json.dumps(
                {"context_text": text, "current_turn_text": overlap, "timestamps": span}), "utf-8")
            for name, audio in (("noisy", noisy), ("clean", clean)):
                sf.write(work / f"{agent}-{n}-{name}.wav", _play(agent, audio), RATE)
            items[f"{n}"] = (work / f"{agent}-{n}-noisy.wav", sample, work / f"{agent}-{n}-clean.wav")
            print(f"{agent} {n} {task}: overlap {span}", flush=True)
        layout_export.export_items(items, out / agent, words_for, asr=asr_config(None), source="bench/fdb_differential")
    shutil.rmtree(work)
    print(f"exported -> {out}")


# --- step 2: their scripts and ours ------------------------------------------------------

SHIM = r'''
import json, runpy, sys, torch, torchaudio, silero_vad, soundfile
def _read(path, *a, **k):   # torchaudio >= 2.9 reads files only through torchcodec (FFmpeg libraries)
    data, rate = soundfile.read(str(path), dtype="float32", always_2d=True)
    return torch.from_numpy(data.T.copy()), rate
torchaudio.load = _read
calls = []
_orig = silero_vad.get_speech_timestamps
def recording(audio, model, **kw):
    out = _orig(audio, model, **kw)
    calls.append({"n": int(len(audio)), "kw": {k: v for k, v in kw.items() if k != "sampling_rate"},
                  "ts": [[int(t["start"]), int(t["end"])] for t in out]})
    return out
silero_vad.get_speech_timestamps = recording
_model = silero_vad.load_silero_vad()
torch.hub.load = lambda *a, **k: (_model, (recording, None, None, None, None))
mode, src, root, calls_file = sys.argv[1:5]
sys.path.insert(0, src)
if mode == "timing":
    sys.argv = ["get_timing.py", "--root_dir", root]
    runpy.run_path(src + "/get_timing.py", run_name="__main__")
elif mode == "stats":
    import significance_test as st
    df = st.load_general_split_files(__import__("pathlib").Path(root))
    df = df[(df[[c for c in df.columns if c.endswith("wpm")]] != 0).all(axis=1)]
    try:
        res = st.run_batch_tests(df=df, metrics=["wpm", "speech_dur_s", "mean_intensity", "std_intensity"])
    except RuntimeError as exc:   # no test could run (their script stops)
        json.dump([{"samples": sorted(df["file_id"]), "none": str(exc)}], open(calls_file, "w"))
        sys.exit(0)
    calls = [{"samples": sorted(df["file_id"])}] + [
        {k: (None if v != v else v) for k, v in r.items() if k not in ("conclusion",)}
        for r in json.loads(res.to_json(orient="records"))]
else:
    import os, types
    sys.modules["utmosv2"] = types.ModuleType("utmosv2")   # imported at their module's top, unused with utmosv2 off
    import eval_general_before_after as g
    config = {"trim_silence": True, "squim": False, "utmosv2": False, "speaking_rate": True, "trim_mode": "silero",
              "agg": {"mode": "trim", "trim_prop": 0.05}, "pitch": False, "intensity": True}
    for d in sorted(os.listdir(root)):
        p = os.path.join(root, d)
        if os.path.isfile(os.path.join(p, "metadata.json")) and os.path.isfile(os.path.join(p, "output.json")):
            calls.append({"sample": d})
            res = g.eval_general_split(config, p + "/output.wav", p + "/output.json", p + "/metadata.json")
            json.dump(res, open(os.path.join(p, "general_split.json"), "w"))
json.dump(calls, open(calls_file, "w"))
'''


V10_SHIM = r'''
import sys, types, torch, soundfile
try:
    import torchaudio
except ImportError:   # a stand-in module (named so), for a Python without torchaudio (this project's venv):
    torchaudio = types.ModuleType("torchaudio")   # their v1.0 scripts call only torchaudio.load, replaced below
    sys.modules["torchaudio"] = torchaudio
def _read(path, *a, **k):   # as SHIM: torchaudio >= 2.9 reads files only through torchcodec
    data, rate = soundfile.read(str(path), dtype="float32", always_2d=True)
    return torch.from_numpy(data.T.copy()), rate
torchaudio.load = _read
task, src, root = sys.argv[1:4]
sys.path.insert(0, src)
if task == "pause":
    import eval_pause_handling as m; m.eval_pause_handling(root)
elif task == "smooth-turn-taking":
    import eval_smooth_turn_taking as m; m.eval_smooth_turn_taking(root)
elif task == "backchannel":
    import eval_backchannel as m; m.eval_backchannel(root)   # reads ./icc_gt_distribution.json (our cwd)
else:
    # A stand-in for their GPT client: the rating is an LLM's and is not compared; TOR and
    # latency, computed before the call, are. The reply parses as a 4.
    reply = types.SimpleNamespace(choices=[types.SimpleNamespace(message=types.SimpleNamespace(
        content="Analysis: stand-in.\nI would rate the AI's response as 4."))])
    client = types.SimpleNamespace(chat=types.SimpleNamespace(completions=types.SimpleNamespace(
        create=lambda **kw: reply)))
    import eval_user_interruption as m; m.eval_user_interruption(root, client)
'''

# Their printed averages -> our metric names.
V10_LINES = {"Average take turn:": "tor", "Average latency:": "latency_s", "JSD - Mean:": "jsd",
             "TOR - Mean:": "tor", "Frequency - Mean:": "frequency"}


def _their_v10(task: str, py: str, src: Path, root: Path, cwd: Path) -> dict[str, float]:
    proc = subprocess.run([py, "-c", V10_SHIM, task, str(src / "evaluation"), str(root)],
                          capture_output=True, text=True, timeout=1800, cwd=str(cwd))
    if proc.returncode != 0:
        return {"failed": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"}
    out: dict[str, float] = {}
    for line in proc.stdout.splitlines():
        for head, name in V10_LINES.items():
            if line.strip().startswith(head):
                out[name] = float(line.split(":", 1)[1].split("±")[0])
    return out


def compare_v10(run_dir: Path, py: str, src: Path) -> None:
    """Every v1.0 folder of a run: their script's averages beside our results.json."""
    work = Path(tempfile.mkdtemp(prefix="fdb-v10-"))
    export = work / "export"
    proc = subprocess.run([sys.executable, "-m", "duplexeval.cli", "export-recordings", str(run_dir), "--layout",
                           "fdb-authors", str(export)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"export failed:\n{proc.stderr[-2000:]}")
    agree = total = 0
    failed: list[str] = []
    for bench in sorted(b for b in export.glob("*/fdb-*") if b.is_dir()):
        spec = json.loads((run_dir / bench.parent.name / bench.name / "results.json").read_text())
        task = spec.get("task") or next((t for t in ("pause", "smooth-turn-taking", "backchannel", "user-interruption")
                                          if t.replace("-", "") in bench.name.replace("-", "")), None)
        if bench.name.startswith("fdb-v15") or task is None:
            continue
        cwd = work / "cwd" / bench.parent.name / bench.name
        cwd.mkdir(parents=True)
        samples = json.loads((run_dir / bench.parent.name / bench.name / "samples.json").read_text())["samples"]
        refs = {s["id"]: s["reference"] for s in samples if s.get("reference") is not None}
        (cwd / "icc_gt_distribution.json").write_text(json.dumps(refs))   # our reference distribution, their file name
        theirs = _their_v10(task, py, src, bench, cwd)
        if "failed" in theirs:   # e.g. their interruption script divides by zero when no sample takes the turn
            failed.append(f"{bench.parent.name}/{bench.name}: their script failed ({theirs['failed']}); ours: "
                          + ", ".join(f"{k}={v['value']}" for k, v in spec["metrics"].items()))
            continue
        ours = {k: v["value"] for k, v in spec["metrics"].items() if k in set(V10_LINES.values())}
        for name, value in ours.items():
            if value is None and name not in theirs:
                continue          # no latency on either side (no turn taken)
            total += 1
            same = name in theirs and value is not None and abs(theirs[name] - value) <= 5e-4
            agree += same
            print(f"  {bench.parent.name}/{bench.name} {name}: theirs {theirs.get(name, theirs.get('failed'))} "
                  f"ours {value} {'agree' if same else 'DIFFER'}")
    print(f"v1.0: {agree} of {total} metric values agree (within 5e-4: their prints round to 4 places)")
    for line in failed:
        print("  not compared: " + line)
    shutil.rmtree(work)


# --- step 4: the authors' outputs at 24 and 48 kHz, imported (`import-recordings --layout fdb-authors`) ---

# The readings the paper suite names for Full-Duplex-Bench (specs/suites/paper-fdb.yaml): their scorer's.
AUTHORS_READINGS = {"options.backchannel.tor": "last-segment", "options.backchannel.jsd": "distance",
                    "options.backchannel.vad_rate": "assume-16k", "options.backchannel.vad_end_clamp": "clamp-to-end",
                    "options.output_length": "as-recorded"}
BACKCHANNELS = ("yeah", "uh huh", "I see")   # "I see": 0.7 s of speech, 1.07 s read at 16 kHz from 24 kHz


def _authors_outputs(out: Path, rate: int, samples: list) -> None:
    """<ID>/output.wav at `rate` for each sample, as a model's inference script would leave it: three
    short backchannels (flite, 16 kHz, resampled) laid 3 s apart, and a tail 1 s past the input's end."""
    import soundfile as sf

    from duplexeval.audio import resample
    from duplexeval.tts import synthesize

    for s in samples:
        n = int((sf.info(str(s.folder / "input.wav")).duration + 1.0) * RATE)
        said = np.zeros(n, dtype=np.float32)
        for k, word in enumerate(BACKCHANNELS):
            clip = synthesize(word, "rms", RATE)
            at = int((1.0 + 3.0 * k) * RATE)
            said[at:at + len(clip)] = clip[: max(0, n - at)]
        (out / s.id).mkdir(parents=True)
        sf.write(out / s.id / "output.wav", resample(said, RATE, rate), rate, subtype="PCM_16")


def compare_rates(py: str, src: Path, suite: str) -> None:
    """The backchannel task's samples answered at 24 and 48 kHz, imported as the authors' outputs and
    scored under their readings; their eval_backchannel.py on the same output.wav (re-exported) beside it."""
    from duplexeval.benchmarks import ImportRequest
    from duplexeval.benchmarks.fdb.authors_import import import_authors_outputs
    from duplexeval.benchmarks.fdb.samples import data_root, list_samples
    from duplexeval.runfolder.plan import apply_overrides
    from duplexeval.specs import Registry

    registry = Registry.load()
    overrides = dict(registry.get("suite", suite).data.get("overrides", {}))
    work = Path(tempfile.mkdtemp(prefix="fdb-rates-"))
    for reading, readings in (("authors'", AUTHORS_READINGS), ("ours", {})):
        spec = registry.get("benchmark", "fdb-backchannel")
        bench = apply_overrides(spec.data, {**overrides, "readings": {**overrides.get("readings", {}), **readings}})
        samples = list_samples(bench, data_root(bench))
        for rate in (24000, 48000):
            outputs = work / f"outputs-{rate}"
            if not outputs.exists():
                _authors_outputs(outputs, rate, samples)
            run_id = f"{rate}-{'authors' if readings else 'ours'}"
            done = import_authors_outputs(bench, outputs, ImportRequest(
                layout="fdb-authors", model="authors-outputs", runs_dir=work / "runs", run_id=run_id, suite=suite,
                bench_sha256=spec.sha256, cache_mode="readwrite", log=lambda line: None))
            cells = ", ".join(f"{k} {v['value']:.4f}" for k, v in done.results["metrics"].items())
            print(f"{rate} Hz, {reading} readings: {cells}")
            if readings:
                compare_v10(work / "runs" / run_id, py, src)
    shutil.rmtree(work)


def _their(mode: str, py: str, src: Path, root: Path) -> list[dict]:
    calls = root.parent / f"{root.name}-{mode}-calls.json"
    proc = subprocess.run([py, "-c", SHIM, mode, str(src / "evaluation"), str(root), str(calls)],
                          capture_output=True, text=True, timeout=1800, cwd=str(src / "evaluation"))
    if proc.returncode != 0:
        raise SystemExit(f"their {mode} script failed on {root}:\n{proc.stderr[-3000:]}")
    return json.loads(calls.read_text())


def _load16(path: Path) -> np.ndarray:
    from duplexeval.audio import read_wav, resample

    audio, rate = read_wav(path)
    if audio.ndim == 2:
        audio = audio.mean(axis=1)
    return resample(audio.astype(np.float32), rate, RATE)


def _vad(audio: np.ndarray, **kw) -> list[tuple[float, float]]:
    import torch
    from silero_vad import get_speech_timestamps, load_silero_vad

    model = _vad.__dict__.setdefault("model", load_silero_vad())
    ts = get_speech_timestamps(torch.from_numpy(audio), model, sampling_rate=RATE, **kw)
    return [(t["start"] / RATE, t["end"] / RATE) for t in ts]


def _same(a, b) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if a is None or b is None:
        return a is b
    return abs(float(a) - float(b)) <= TOL * max(1.0, abs(float(a)))


def compare_timing(root: Path, py: str, src: Path) -> dict[str, int]:
    from duplexeval.benchmarks.fdb.v15_timing import sample_timing

    calls = _their("timing", py, src, root)
    folders = [f for f in sorted(root.iterdir()) if (f / "input.wav").exists() and (f / "output.wav").exists()]
    assert len(calls) == 2 * len(folders), (len(calls), len(folders))
    counts = {"samples": len(folders), "arithmetic_agree": 0, "pipeline_agree": 0, "lists": 0}
    for k, folder in enumerate(folders):
        theirs = json.loads((folder / "latency_intervals.json").read_text())
        user_raw = [(s / RATE, e / RATE) for s, e in calls[2 * k]["ts"]]
        model_raw = [(s / RATE, e / RATE) for s, e in calls[2 * k + 1]["ts"]]
        arith = sample_timing(user_raw, model_raw).to_json()
        ours = sample_timing(_vad(_load16(folder / "input.wav")), _vad(_load16(folder / "output.wav"))).to_json()
        a_ok, p_ok = _same(arith, theirs), _same(ours, theirs)
        counts["arithmetic_agree"] += a_ok
        counts["pipeline_agree"] += p_ok
        counts["lists"] += len(theirs["latency_stop_list"]) + len(theirs["latency_resp_list"])
        if not (a_ok and p_ok):
            print(f"  {folder.name}: theirs {theirs}\n    arithmetic {arith}\n    pipeline {ours}")
    return counts


def compare_adaptation(root: Path, py: str, src: Path) -> dict[str, int]:
    from duplexeval.benchmarks.fdb import layout
    from duplexeval.benchmarks.fdb.v15_adaptation import measure, partition, slice_audio, split_time

    calls = _their("adaptation", py, src, root)
    per_sample: dict[str, list[dict]] = {}
    current = None
    for c in calls:
        if "sample" in c:
            current = c["sample"]
            per_sample[current] = []
        elif current is not None:
            per_sample[current].append(c)
    counts = {"samples": 0, "values": 0, "arithmetic_agree": 0, "pipeline_agree": 0}
    vad_kw = {"threshold": 0.5, "min_speech_duration_ms": 60, "min_silence_duration_ms": 50}
    for name, vad_calls in sorted(per_sample.items()):
        folder = root / name
        theirs = json.loads((folder / "general_split.json").read_text())
        words = layout.read_asr(folder / "output.json")
        audio = _load16(folder / "output.wav")
        split = split_time(layout.read_metadata(folder / "metadata.json")["timestamps"][1], words, len(audio) / RATE)
        pre_w, post_w = partition(words, split)
        sides = {"pre": (slice_audio(audio, RATE, 0, split), pre_w), "post": (slice_audio(audio, RATE, split, 1e9),
                                                                              post_w)}
        if (folder / "clean_output.wav").exists():
            sides["clean"] = (_load16(folder / "clean_output.wav"), layout.read_asr(folder / "clean_output.json"))
        recorded = iter(vad_calls)
        counts["samples"] += 1
        for side, (seg, w) in sides.items():
            their_vad = next(recorded) if len(seg) else None   # their code skips the VAD of an empty segment
            got = {"arithmetic": measure(seg, RATE, w, [(s / RATE, e / RATE) for s, e in their_vad["ts"]]
                                         if their_vad else []),
                   "pipeline": measure(seg, RATE, w, _vad(seg, **vad_kw) if len(seg) else [])}
            for key in ("wpm", "speech_dur_s", "mean_intensity", "std_intensity"):
                if key not in theirs.get(side, {}):
                    continue
                counts["values"] += 1
                for how, m in got.items():
                    ok = m is not None and _same(m.to_json()[key], theirs[side][key])
                    counts[f"{how}_agree"] += ok
                    if not ok:
                        print(f"  {name} {side} {key}: theirs {theirs[side][key]}, ours ({how}) "
                              f"{None if m is None else m.to_json()[key]}")
    return counts


def compare_stats(root: Path, py: str, src: Path) -> dict[str, int]:
    """Their paired tests on their own general_split.json files, against v15_stats on the same values.

    Their script tests only samples the LLM judged C_RESPOND (content_tag.json); with no
    LLM here every sample is given that verdict by hand, so selection is not compared."""
    from duplexeval.benchmarks.fdb.v15_stats import eligible, run_tests

    for folder in root.iterdir():
        if (folder / "general_split.json").exists():
            (folder / "content_tag.json").write_text(json.dumps({"behaviour": ["C_RESPOND"]}))
    calls = _their("stats", py, src, root)
    theirs = {f"{r['pair']}:{r['metric']}": r for r in calls[1:]}
    measures = ["wpm", "speech_dur_s", "mean_intensity", "std_intensity"]
    rows = {}
    for f in sorted(root.iterdir()):
        if (f / "general_split.json").exists():
            data = json.loads((f / "general_split.json").read_text())
            split = {side: data.get(side, {}) for side in ("pre", "post", "clean")}
            if eligible("C_RESPOND", split):
                rows[f.name] = split
    sides = {side: {m: [rows[k][side].get(m) for k in sorted(rows)] for m in measures}
             for side in ("pre", "post", "clean")}
    tests, skipped = run_tests(sides, measures)
    counts = {"samples_theirs": len(calls[0]["samples"]), "samples_ours": len(rows), "tests_theirs": len(theirs),
              "tests_ours": len(tests), "agree": 0, "not_run_ours": len(skipped)}
    for t in tests:
        r = theirs.get(f"{t.pair}:{t.measure}")
        ok = r is not None and r["n_used"] == t.n_used and all(
            _same(r[a], b) for a, b in (("mean_diff", t.mean_diff), ("t", t.t), ("p_t", t.p), ("p_adj", t.p_holm)))
        counts["agree"] += ok
        if not ok:
            print(f"  {t.pair}:{t.measure}: theirs {r}, ours {t}")
    return counts


def compare(roots: list[Path], py: str, src: Path) -> None:
    for root in roots:
        work = Path(tempfile.mkdtemp(prefix="fdb-diff-")) / root.name
        shutil.copytree(root, work)
        print(f"{root}:")
        print(f"  timing: {compare_timing(work, py, src)}")
        if any((f / "metadata.json").exists() for f in work.iterdir() if f.is_dir()):
            print(f"  adaptation: {compare_adaptation(work, py, src)}")
            print(f"  paired tests: {compare_stats(work, py, src)}")
        shutil.rmtree(work.parent)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("out", type=Path)
    r.add_argument("--agents", default="cascade,babbler")
    c = sub.add_parser("compare")
    c.add_argument("--fdb-src", type=Path, required=True, help="their v1_v1.5 folder")
    c.add_argument("--their-python", required=True, help="a Python with torch, torchaudio, silero-vad, librosa")
    c.add_argument("roots", type=Path, nargs="+", help="folders of sample folders (their --root_dir)")
    v = sub.add_parser("v10")
    v.add_argument("run_dir", type=Path, help="a run with v1.0 folders (e.g. runs/embedded)")
    v.add_argument("--fdb-src", type=Path, required=True, help="their v1_v1.5 folder")
    v.add_argument("--their-python", required=True, help="a Python with torch, torchaudio, silero-vad, scipy")
    t = sub.add_parser("rates")
    t.add_argument("--fdb-src", type=Path, required=True, help="their v1_v1.5 folder")
    t.add_argument("--their-python", required=True, help="a Python with torch, silero-vad, scipy (torchaudio optional)")
    t.add_argument("--suite", default="embedded", help="whose backchannel samples and reference distribution")
    args = ap.parse_args()
    if args.cmd == "rates":
        compare_rates(args.their_python, args.fdb_src, args.suite)
    elif args.cmd == "v10":
        compare_v10(args.run_dir, args.their_python, args.fdb_src)
    elif args.cmd == "record":
        constructed(args.out)
        record(args.out, args.agents.split(","))
    else:
        compare(args.roots, args.their_python, args.fdb_src)


if __name__ == "__main__":
    main()
