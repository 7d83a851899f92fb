"""Benchmark (not a timed test): Duplex-MPE scoring throughput and VAD-gated judging share.

Builds a run folder from the embedded scenes with the real scheduler and a scripted
"model" that behaves in mixed ways (answers T with the gold answer, backchannels once,
intrudes with content once, starts answering N4Q and yields at N4R for some scenes,
stays silent elsewhere), then times `score_bench_dir` with the spec's causal Silero VAD,
the offline ASR (faster-whisper tiny.en) and the offline judges. Reports:

- throughput in x real time of recorded audio (recorded seconds / scoring seconds), with
  a cold ASR cache, a warm one with no VAD reuse (Silero runs), and warm ASR and
  VAD-episode caches (a re-score);
- the share of windows that needed an ASR call (speech present) and a judge call.

Usage: .venv/bin/python bench/bench_scoring.py [--scenes N] [--spec specs/benchmarks/mpe-explicit.yaml]
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenes", type=int, default=6)
    ap.add_argument("--spec", default=str(ROOT / "specs" / "benchmarks" / "mpe-explicit.yaml"))
    args = ap.parse_args()
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


if __name__ == "__main__":
    main()
