"""Silero VAD's trajectory memo (duplexeval/judges/vad.py), side by side in one run.

Streams are pushed the way the MPE scheduler pushes a model's channel (80 ms chunks at
16 kHz) through `StreamingVAD`, with the memo off (`TRAJECTORY_WINDOWS = 0`, every window
runs the model) and on. Printed per 32 ms window (best of --repeat, after a warm-up):

- a distinct stream (speech-like noise; with the memo on every window is a miss): what the
  memo costs a real model's channel, whose windows never repeat;
- the same stream again (every window a hit);
- a batch of silent conversations (all-zero channels of --seconds each, as `silent`
  gives): x real time with the memo off and on, and the probabilities compared.

    .venv/bin/python bench/bench_vad_memo.py [--seconds 100] [--conversations 8] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from duplexeval.judges import vad  # noqa: E402

CHUNK = 1280  # 80 ms at 16 kHz


def push_all(audio: np.ndarray) -> np.ndarray:
    stream = vad.StreamingVAD(remember=False)
    for i in range(0, len(audio), CHUNK):
        stream.push(audio[i:i + CHUNK])
    return np.asarray(stream._probs, dtype=np.float32)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=100.0)
    ap.add_argument("--conversations", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    n = int(args.seconds * vad.VAD_RATE) // CHUNK * CHUNK
    windows = n // vad.WINDOW
    rng = np.random.default_rng(0)
    speech = (rng.standard_normal(n) * 0.1).astype(np.float32)
    push_all(speech[: 20 * CHUNK])  # loads the ONNX session

    memo = vad.TRAJECTORY_WINDOWS
    zeros = np.zeros(n, dtype=np.float32)

    def run(fn, memo_windows: int, clear: bool):
        vad.TRAJECTORY_WINDOWS = memo_windows
        if clear:
            vad._trajectory.clear()
        start = time.perf_counter()
        out = fn()
        return time.perf_counter() - start, out

    def silent_batch():
        return [push_all(zeros) for _ in range(args.conversations)]

    # Interleaved rounds, best of each: this machine's speed drifts by tens of percent.
    t = {k: float("inf") for k in ("off", "miss", "hit", "silent_off", "silent_on")}
    outs: dict[str, list] = {k: [] for k in t}
    for _ in range(args.repeat):
        for k, fn, m, clear in (("off", lambda: push_all(speech), 0, True),
                                ("miss", lambda: push_all(speech), memo, True),
                                ("hit", lambda: push_all(speech), memo, False),
                                ("silent_off", silent_batch, 0, True),
                                ("silent_on", silent_batch, memo, True)):
            dt, out = run(fn, m, clear)
            t[k] = min(t[k], dt)
            outs[k].append(out)
    vad.TRAJECTORY_WINDOWS = memo
    same = all(np.array_equal(outs["off"][0], o) for k in ("miss", "hit") for o in outs[k])
    same = same and all(np.array_equal(a, b) for run_ in outs["silent_on"] for a, b in zip(outs["silent_off"][0], run_))
    print(f"Silero trajectory memo, {args.seconds:.0f} s stream ({windows} windows of 32 ms), best of {args.repeat} "
          "interleaved rounds:")
    for k, label, note in (("off", "distinct stream, memo off ", ""),
                           ("miss", "distinct stream, memo on  ", f"  (every window a miss: {t['miss'] / t['off']:.2f}x "
                                                                  "the memo-off cost)"),
                           ("hit", "same stream again, memo on", "  (every window a hit)")):
        print(f"  {label}: {1e6 * t[k] / windows:7.1f} us/window ({args.seconds / t[k]:6.0f}x real time){note}")
    audio_s = args.seconds * args.conversations
    print(f"{args.conversations} silent conversations of {args.seconds:.0f} s (memo cleared first):")
    print(f"  memo off: {t['silent_off']:6.2f} s ({audio_s / t['silent_off']:6.0f}x real time)")
    print(f"  memo on : {t['silent_on']:6.2f} s ({audio_s / t['silent_on']:6.0f}x real time), "
          f"{t['silent_off'] / t['silent_on']:.1f}x faster")
    print(f"probabilities identical with the memo on and off: {same}")


if __name__ == "__main__":
    main()
