"""Whisper's window memo (duplexeval/judges/asr_backends/whisper_windows.py), side by side in one run.

The clips are the babbler's Duplex-MPE episodes: its loop from frame 0 (24 kHz, through the
harness's s16 wire and soxr to 16 kHz, as the recording holds it), one clip per embedded
conversation length (126-158 s; `--lengths`). Each is transcribed by the offline ASR
(faster-whisper tiny.en, int8, the embedded suite's greedy decoding, word timestamps) twice
over: with the memo off (WINDOW_CALLS = 0: every window runs encoder, decoder and
alignment) and on, each with a freshly loaded model. Printed: CPU seconds of each pass,
their ratio, the memo's hits and misses, and whether every word (text and times) is the same.

    .venv/bin/python bench/bench_asr_windows.py [--lengths 145,139,126,156]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from duplexeval.agents.babbler import BabblerAgent  # noqa: E402
from duplexeval.audio import float_to_s16le, resample, s16le_to_float  # noqa: E402
from duplexeval.judges.asr_backends import faster_whisper_backend, whisper_windows  # noqa: E402

OPTIONS = {"beam_size": 1}  # specs/suites/embedded.yaml


def babble_clip(loop: np.ndarray, seconds: float) -> np.ndarray:
    n = int(seconds * 24000)
    audio = np.take(loop, np.arange(n), mode="wrap")
    return resample(s16le_to_float(float_to_s16le(audio)), 24000, 16000)


def transcribe_all(clips: list[np.ndarray], calls: int) -> tuple[float, list, dict]:
    whisper_windows.WINDOW_CALLS = calls
    whisper_windows.stats.update(hits=0, misses=0)
    faster_whisper_backend._models.clear()
    backend = faster_whisper_backend.FasterWhisperBackend()
    backend._load("tiny.en")  # loading is not what is measured
    options = backend.effective_options(OPTIONS)
    start = time.process_time()
    out = [backend.transcribe(c, "tiny.en", "en", options) for c in clips]
    return time.process_time() - start, out, dict(whisper_windows.stats)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lengths", default="145,139,126,156,146,141,128,158",
                    help="clip lengths in seconds (default: the babbler's 8 embedded conversations)")
    args = ap.parse_args()
    loop = BabblerAgent().loop
    clips = [babble_clip(loop, float(s)) for s in args.lengths.split(",")]
    audio_s = sum(len(c) for c in clips) / 16000
    off, words_off, _ = transcribe_all(clips, 0)
    on, words_on, stats = transcribe_all(clips, whisper_windows.WINDOW_CALLS or 4096)
    same = all(a.text == b.text and a.words == b.words for a, b in zip(words_off, words_on))
    print(f"{len(clips)} babbler clips, {audio_s:.0f} s of audio, ASR threads {faster_whisper_backend.cpu_threads()}")
    print(f"memo off: {off:6.1f} s CPU ({audio_s / off:5.1f}x real time)")
    print(f"memo on:  {on:6.1f} s CPU ({audio_s / on:5.1f}x real time)   calls: {stats['hits']} hits, "
          f"{stats['misses']} misses")
    print(f"on / off: {on / off:.2f}    words identical: {same}")


if __name__ == "__main__":
    main()
