"""Speed of the judging chain's audio stages, as a multiple of real time (lower is faster).

Builds ~60 s of flite speech (the four embedded-suite voices, with pauses), then times
Silero VAD (causal and offline) and the offline default ASR (faster-whisper tiny.en,
int8 CPU) on it. The ASR cache is bypassed so the model really runs.

    DUPLEXEVAL_ASR_THREADS=2 .venv/bin/python bench/bench_vad_asr.py
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from duplexeval.judges.asr import transcribe
from duplexeval.judges.vad import detect_episodes, silero_session
from duplexeval.tts import FLITE_VOICES, synthesize

RATE = 16000
LINES = [
    "Okay, so we have three options for dinner tonight.",
    "The taco place is nine dollars a head and it takes cards.",
    "Karaoke is fifteen dollars, but we get the room for two hours.",
    "Aria, out of those three, which one is the cheapest per person?",
    "Hey Siri, how long is the bus ride to the city center?",
    "I really should stop spending money on takeout every week.",
]


def build_audio(seconds: float) -> np.ndarray:
    parts, total, i = [], 0.0, 0
    while total < seconds:
        speech = synthesize(LINES[i % len(LINES)], FLITE_VOICES[i % len(FLITE_VOICES)], RATE)
        pause = np.zeros(int(RATE * (0.5 + 0.25 * (i % 3))), dtype=np.float32)
        parts += [speech, pause]
        total += (len(speech) + len(pause)) / RATE
        i += 1
    return np.concatenate(parts)


def timed(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    audio = build_audio(args.seconds)
    duration = len(audio) / RATE
    silero_session()  # load once, outside the timing
    transcribe(audio[:RATE], RATE, cache=False)  # load the ASR model outside the timing
    rows = [
        ("Silero VAD causal (MPE rules)", timed(lambda: detect_episodes(audio, RATE, mode="causal"), args.repeat)),
        ("Silero VAD offline", timed(lambda: detect_episodes(audio, RATE, mode="offline"), args.repeat)),
        ("faster-whisper tiny.en int8", timed(lambda: transcribe(audio, RATE, cache=False), 1)),
    ]
    threads = os.environ.get("DUPLEXEVAL_ASR_THREADS", "min(4, cpus)")
    print(f"audio: {duration:.1f} s of flite speech at 16 kHz; cpus={os.cpu_count()}, ASR threads={threads}")
    for name, seconds in rows:
        print(f"{name:34s} {seconds:7.2f} s  {seconds / duration:.4f} x real time")


if __name__ == "__main__":
    main()
