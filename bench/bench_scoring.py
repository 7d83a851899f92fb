"""Benchmark (not a timed test): Duplex-MPE scoring throughput and VAD-gated judging share.

Builds a run folder from the embedded scenes with the real scheduler and a scripted
"model" that behaves in mixed ways (answers T with the gold answer, backchannels once,
intrudes with content once, starts answering N4Q and yields at N4R for some scenes,
stays silent elsewhere), then times `score_bench_dir` with the spec's causal Silero VAD,
the offline ASR (faster-whisper tiny.en) and the offline judges. Reports:

- throughput in x real time of recorded audio (recorded seconds / scoring seconds), with
  a cold ASR cache, a warm one with no VAD reuse (Silero runs), and warm ASR and
  VAD-episode caches (a re-score);
- the share of windows that needed an ASR call (speech present) and a judge call;
- the batched path (issue 26, item 5): Silero VAD over many streams at once (one ONNX call
  steps every stream's next 32 ms window, each stream keeping its own recurrent state)
  against one stream at a time, in x real time per core (onnxruntime on one thread), with
  whether the episodes agree; and Qwen3-ASR (`qwen-asr`, in `.venv-qwen3`) transcribing a
  batch of clips in one `transcribe` call against one call per clip, on a tiny random
  Qwen3-ASR (`duplexeval.judges.tiny_models`: the real code path, not the 1.7B's speed).
  No GPU here: the per-GPU figures are left to a machine that has one (`--device cuda`).

- the scorer itself (issue 38), `--compare-scorer`: the run scored with the job's recordings
  as one Silero batch (`score_bench_dir`'s default) and one recording at a time, each with a
  cold VAD: records.jsonl and results.json byte-identical, and the speed ratio.

Usage: .venv/bin/python bench/bench_scoring.py [--scenes N] [--spec specs/benchmarks/mpe-explicit.yaml]
           [--batched-only] [--batch-sizes 1,8,32] [--compare-scorer]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def scripted_model(frame: int, rate: int, gold: str, scene_no: int):
    """Reacts to label messages like a (partly imperfect) oracle; returns a per-frame callable."""
    from duplexeval.tts import synthesize

    track: dict[int, float] = {}
    state = {"audio": np.zeros(0, dtype=np.float32)}

    def say(at_frame: int, text: str) -> None:
        clip = synthesize(text, "kal16", rate)
        a = at_frame * frame
        audio = state["audio"]
        if len(audio) < a + len(clip):
            audio = np.concatenate([audio, np.zeros(a + len(clip) - len(audio), np.float32)])
        audio[a:a + len(clip)] += clip
        state["audio"] = audio

    seen = {"n2": 0}

    def on_labels(labels: list[dict]) -> None:
        for m in labels:
            if m["label"] == "T" and m["phase"] == "end":
                say(m["frame_idx"], gold + ".")
            elif m["label"] == "N2" and m["phase"] == "start":
                seen["n2"] += 1
                if seen["n2"] == 1 and scene_no % 2 == 0:
                    say(m["frame_idx"] + 5, "Okay.")
                elif seen["n2"] == 2 and scene_no % 3 == 0:
                    say(m["frame_idx"] + 5, "Nine dollars.")
            elif m["label"] == "N4Q" and m["phase"] == "end" and scene_no % 2 == 1:
                say(m["frame_idx"] + 3, "Let me check that for you, one moment please, I am looking it up now.")

    def frame_out(n: int) -> np.ndarray:
        a = n * frame
        seg = state["audio"][a:a + frame]
        out = np.zeros(frame, dtype=np.float32)
        out[:len(seg)] = seg
        # Yield at N4R: cut everything after the N4R start (set by run_item).
        return out

    return on_labels, frame_out, state, track


def run_item(scene, condition: str, spec: dict, item_dir: Path, scene_no: int) -> float:
    from duplexeval.audio import write_wav
    from duplexeval.benchmarks.mpe.scenes.render import render_turns
    from duplexeval.benchmarks.mpe.scenes.scheduler import MPEScheduler
    from duplexeval.io import atomic_write_json, atomic_write_jsonl

    rate = int(spec["audio"]["rate"])
    frame = rate * 80 // 1000
    sch = MPEScheduler(render_turns(scene, condition, rate), spec)
    sch.bind(rate, frame)
    on_labels, frame_out, state, _ = scripted_model(frame, rate, scene.gold_answer, scene_no)
    ins, outs, events, n, cut = [], [], [], 0, None
    while (x := sch.next_input(n)) is not None:
        labels = sch.drain_labels()
        on_labels(labels)
        if any(m["label"] == "N4R" and m["phase"] == "start" for m in labels):
            cut = n + 6  # yields ~0.5 s after N4R starts
            state["audio"][cut * frame:] = 0
        y = frame_out(n)
        sch.observe_output(n, y)
        ins.append(x)
        outs.append(y)
        events += sch.drain_events()
        n += 1
    events += sch.drain_events()
    write_wav(item_dir / "recording.wav", np.stack([np.concatenate(ins), np.concatenate(outs)], axis=1), rate)
    atomic_write_jsonl(item_dir / "events.jsonl", events)
    atomic_write_json(item_dir / "status.json", {"status": "ok", "reason": None})
    return n * frame / rate


def silero_batched(streams_16k: list[np.ndarray]) -> list[np.ndarray]:
    """Silero's speech probability per 32 ms window of every stream, all streams stepped
    together: one ONNX call per window index over a batch of B rows, each row its own state
    and context (the maths of `judges.vad._SileroStream`, B rows at once). A stream shorter
    than the longest is zero-padded; what its row computes past its end is dropped."""
    from duplexeval.judges.vad import CONTEXT, VAD_RATE, WINDOW, silero_session

    session = silero_session()
    counts = [-(-len(a) // WINDOW) for a in streams_16k]
    x = np.zeros((len(streams_16k), max(counts) * WINDOW), np.float32)
    for b, a in enumerate(streams_16k):
        x[b, :len(a)] = a
    state = np.zeros((2, len(streams_16k), 128), np.float32)
    context = np.zeros((len(streams_16k), CONTEXT), np.float32)
    sr = np.array(VAD_RATE, dtype=np.int64)
    probs = np.zeros((len(streams_16k), max(counts)), np.float32)
    for t in range(max(counts)):
        inp = np.concatenate([context, x[:, t * WINDOW:(t + 1) * WINDOW]], axis=1)
        out, state = session.run(None, {"input": inp, "state": state, "sr": sr})
        context = inp[:, -CONTEXT:]
        probs[:, t] = out.reshape(-1)
    return [probs[b, :n] for b, n in enumerate(counts)]


def episodes_of(probs: np.ndarray) -> list[tuple[float, float]]:
    from duplexeval.judges.vad import EpisodeTracker

    tracker = EpisodeTracker()
    for p in probs:
        tracker.push_prob(float(p))
    tracker.finish()
    return tracker.episodes()


def bench_batched_vad(bench: Path, sizes: list[int]) -> None:
    """Every recording's two channels as 16 kHz streams: one at a time vs B at once."""
    import soundfile as sf

    from duplexeval.audio import resample
    from duplexeval.judges import vad

    streams = []
    for rec in sorted(bench.glob("items/*/recording.wav")):
        audio, rate = sf.read(rec, dtype="float32")
        streams += [resample(np.ascontiguousarray(audio[:, c]), rate, vad.VAD_RATE) for c in range(audio.shape[1])]
    seconds = sum(len(a) for a in streams) / vad.VAD_RATE
    vad.TRAJECTORY_WINDOWS = 0  # the model itself, not the memo of repeated histories
    vad.silero_session()
    t0 = time.perf_counter()
    alone = [vad.speech_probabilities(a) for a in streams]
    wall = time.perf_counter() - t0
    print(f"Silero VAD, one stream at a time: {len(streams)} streams, {seconds:.0f} s of audio in {wall:.2f} s "
          f"= {seconds / wall:.0f} x real time per core")
    for size in sizes:
        t0 = time.perf_counter()
        together = [p for k in range(0, len(streams), size) for p in silero_batched(streams[k:k + size])]
        wall_b = time.perf_counter() - t0
        diff = max(float(np.abs(a - b).max()) for a, b in zip(alone, together))
        same = all(episodes_of(a) == episodes_of(b) for a, b in zip(alone, together))
        print(f"Silero VAD, batches of {size}: {seconds / wall_b:.0f} x real time per core "
              f"({wall / wall_b:.2f}x one at a time); largest probability difference {diff:.1e}; "
              f"episodes identical: {'yes' if same else 'no'}")


def bench_batched_asr(bench: Path, sizes: list[int]) -> None:
    """Qwen3-ASR in .venv-qwen3 (its own venv: qwen-asr pins transformers 4.57.6): clips of
    the recordings' model channels, one per call vs a batch per call."""
    import subprocess

    import soundfile as sf

    from duplexeval.audio import resample

    python = ROOT / ".venv-qwen3" / "bin" / "python"
    if not python.exists():
        print(f"Qwen3-ASR batched: skipped ({python} is missing: make qwen3-venv)")
        return
    clips = []
    for rec in sorted(bench.glob("items/*/recording.wav")):
        audio, rate = sf.read(rec, dtype="float32")
        x = resample(np.ascontiguousarray(audio[:, 0]), rate, 16000)  # the user's speech: words to transcribe
        clips += [x[k:k + 4 * 16000] for k in range(0, len(x) - 4 * 16000, 8 * 16000)][:4]
    npz = bench.parent / "asr-clips.npz"
    np.savez(npz, *clips)
    proc = subprocess.run([str(python), __file__, "--qwen3-child", str(npz), "--batch-sizes",
                           ",".join(map(str, sizes))], cwd=ROOT, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    print(proc.stdout.strip() or f"Qwen3-ASR batched failed:\n{proc.stderr[-3000:]}")


def qwen3_child(npz: Path, sizes: list[int]) -> None:
    """In .venv-qwen3: a tiny random Qwen3-ASR on CPU, one thread."""
    import torch
    from qwen_asr import Qwen3ASRModel

    from duplexeval.judges.tiny_models import write_tiny_qwen3_asr

    torch.set_num_threads(1)
    data = np.load(npz)
    clips = [data[k] for k in data.files]
    seconds = sum(len(c) for c in clips) / 16000
    folder = write_tiny_qwen3_asr(Path(tempfile.mkdtemp(prefix="tiny-qwen3-")) / "asr", seed=0)
    model = Qwen3ASRModel.from_pretrained(str(folder), dtype=torch.float32, device_map="cpu", max_new_tokens=32)
    model.transcribe(audio=(clips[0], 16000), language="English")  # warm-up
    t0 = time.perf_counter()
    alone = [model.transcribe(audio=(c, 16000), language="English")[0].text for c in clips]
    wall = time.perf_counter() - t0
    print(f"Qwen3-ASR (tiny random weights, CPU, 1 thread), one clip per call: {len(clips)} clips, "
          f"{seconds:.0f} s in {wall:.2f} s = {seconds / wall:.1f} x real time per core")
    for size in sizes:
        if size == 1:
            continue
        t0 = time.perf_counter()
        together = [r.text for k in range(0, len(clips), size)
                    for r in model.transcribe(audio=[(c, 16000) for c in clips[k:k + size]], language="English")]
        wall_b = time.perf_counter() - t0
        same = sum(a == b for a, b in zip(alone, together))
        print(f"Qwen3-ASR (tiny random weights), batches of {size}: {seconds / wall_b:.1f} x real time per core "
              f"({wall / wall_b:.2f}x one per call); transcripts identical to one per call: {same}/{len(clips)}")


def compare_batched(bench: Path, spec: dict, judges: dict, audio_s: float) -> None:
    """The scorer one recording at a time against a job's recordings as one Silero batch
    (`score_bench_dir(vad_batch=...)`), each from a cold VAD (no episode cache, no memo, no
    live stream to replay) and warm ASR and judge caches: the records must be byte-identical."""
    from collections import OrderedDict

    from duplexeval.benchmarks.mpe.results import score_bench_dir
    from duplexeval.judges import vad, vad_batch

    score_bench_dir(bench, spec, judges)  # fills the ASR and judge caches
    out, walls = {}, {}
    for label, width in (("one at a time", 1), ("batched", vad_batch.BATCH_STREAMS)):
        shutil.rmtree(Path(os.environ["DUPLEXEVAL_CACHE"]) / "vad", ignore_errors=True)
        vad._recent.clear()
        vad._trajectory = OrderedDict()
        t0 = time.perf_counter()
        score_bench_dir(bench, spec, judges, vad_batch=width)
        walls[label] = time.perf_counter() - t0
        out[label] = (bench / "records.jsonl").read_bytes(), (bench / "results.json").read_bytes()
        print(f"scoring, Silero {label} (cold VAD, warm ASR and judges): {audio_s:.1f} s of recordings in "
              f"{walls[label]:.2f} s = {audio_s / walls[label]:.1f} x real time")
    same = out["one at a time"] == out["batched"]
    print(f"records.jsonl and results.json identical: {'yes' if same else 'NO'}; batched is "
          f"{walls['one at a time'] / walls['batched']:.2f}x as fast as one at a time "
          f"({len(list((bench / 'items').iterdir()))} conversations)")
    if not same:
        raise SystemExit(1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenes", type=int, default=6)
    ap.add_argument("--spec", default=str(ROOT / "specs" / "benchmarks" / "mpe-explicit.yaml"))
    ap.add_argument("--batched-only", action="store_true", help="only the batched VAD / ASR comparison")
    ap.add_argument("--compare-scorer", action="store_true",
                    help="only the scorer batched vs one at a time: identical records, the speed ratio")
    ap.add_argument("--batch-sizes", default="1,8,32")
    ap.add_argument("--qwen3-child", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    sizes = [int(x) for x in args.batch_sizes.split(",")]
    if args.qwen3_child:
        qwen3_child(args.qwen3_child, sizes)
        return
    os.environ.setdefault("DUPLEXEVAL_CACHE", tempfile.mkdtemp(prefix="mpe-bench-cache-"))
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    from duplexeval.benchmarks.mpe.results import score_bench_dir
    from duplexeval.benchmarks.mpe.scenes import load_scenes
    from duplexeval.judges.llm import Judge
    from duplexeval.specs import load_spec, repo_root

    spec = load_spec(Path(args.spec), "benchmark").data
    # Offline components: the paper's ASR and judges need weights / keys this machine lacks.
    spec["asr"] = {"backend": "faster-whisper", "model": "tiny.en", "language": "en"}
    spec["judges"] = {"answer": "mpe-answer-offline", "backchannel": "mpe-backchannel-offline"}
    judges = {role: Judge.from_spec(s.data, s.path) for role, s in
              ((r, load_spec(repo_root() / "specs" / "judges" / f"{j}.yaml", "judge")) for r, j in spec["judges"].items())}
    bench = Path(tempfile.mkdtemp(prefix="mpe-bench-")) / "scripted" / spec["id"]
    audio_s = 0.0
    for k, scene in enumerate(load_scenes()[: args.scenes]):
        audio_s += run_item(scene, spec["condition"], spec, bench / "items" / scene.id, k)
    from duplexeval.judges import vad

    if args.compare_scorer:
        compare_batched(bench, spec, judges, audio_s)
        return
    if args.batched_only:
        bench_batched_vad(bench, [n for n in sizes if n > 1])
        bench_batched_asr(bench, sizes)
        return
    # 1: scored in the process that played the sessions (the scheduler's live VAD streams
    # are replayed); 2: as a new process would, with the episodes cache cleared (Silero
    # runs); 3: a re-score (episodes read back from the cache).
    for label in ("cold ASR cache", "warm ASR cache, no VAD reuse", "warm ASR and VAD caches"):
        if label == "warm ASR cache, no VAD reuse":
            shutil.rmtree(Path(os.environ["DUPLEXEVAL_CACHE"]) / "vad", ignore_errors=True)
            vad._recent.clear()
        t0 = time.perf_counter()
        res = score_bench_dir(bench, spec, judges)
        wall = time.perf_counter() - t0
        calls = res["calls"]
        judge_share = calls["judge_requests"] / calls["windows"]
        print(f"{label}: {audio_s:.1f} s of recordings scored in {wall:.2f} s = {audio_s / wall:.1f} x real time; "
              f"windows {calls['windows']}, needing ASR {calls['windows_needing_asr']} "
              f"({calls['share_needing_asr']:.1%}), ASR requests {calls['asr_requests']}, "
              f"judge requests {calls['judge_requests']} ({judge_share:.1%} of windows)")
    m = res["metrics"]
    print("metrics:", {k: (m[k]["value"], m[k]["numerator"], m[k]["denominator"]) for k in m})
    print("run folder:", bench)
    bench_batched_vad(bench, [n for n in sizes if n > 1])
    bench_batched_asr(bench, sizes)


if __name__ == "__main__":
    main()
