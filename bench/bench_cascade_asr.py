"""Benchmark (not a timed test): the cascade agent's ASR on the utterances it heard in a run,
through Whisper's padded 30 s window and through shorter windows (duplexeval/agents/whisper_window.py).

It replays channel 0 of every cascade recording of a run (what the agent heard) through the
agent's own VAD endpointing (CascadeAgent.listen, replies not synthesised), collects each
utterance once, then decodes every utterance with each path, one thread, in this process,
and prints the CPU seconds per path and every utterance whose text differs from the 30 s
path's. The reply rule (duplexeval.agents.responder.reply_to) decides what the agent says:
a differing text that gives the same reply changes nothing in a run.

Usage (a run with cascade recordings, e.g. after `make reproduce`):
  .venv/bin/python bench/bench_cascade_asr.py runs/embedded --windows 30,10,5 [--verbose]
(2026-12-04, a cold run's 388 utterances: docs/agents.md, "The cascade's ASR window")
Timing on a shared machine is noisy: compare figures taken in one invocation.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
import wave
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def read_heard(path: Path) -> np.ndarray:
    """Channel 0 (what the model heard) of a 16 kHz s16 recording, as float32."""
    with wave.open(str(path)) as w:
        if w.getframerate() != 16000:
            raise SystemExit(f"{path}: {w.getframerate()} Hz, the cascade hears 16000")
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").reshape(-1, w.getnchannels())
    return pcm[:, 0].astype(np.float32) / 32768.0


def utterances(run_dir: Path) -> list[np.ndarray]:
    """Each distinct utterance the cascade's endpointing cuts from the run's recordings."""
    from duplexeval.agents import cascade

    heard: dict[str, np.ndarray] = {}
    agent = cascade.CascadeAgent.__new__(cascade.CascadeAgent)  # no Whisper load: only the endpointing

    def collect(audio: np.ndarray) -> str:
        heard.setdefault(hashlib.sha256(audio.astype(np.float32).tobytes()).hexdigest(), audio.copy())
        return ""

    agent.transcribe = collect  # type: ignore[method-assign]
    recordings = sorted(run_dir.glob("cascade/*/items/*/recording.wav"))
    if not recordings:
        raise SystemExit(f"{run_dir}: no cascade/*/items/*/recording.wav")
    for path in recordings:
        agent.reset()
        audio = read_heard(path)
        frame = 1280
        for start in range(0, len(audio) - frame + 1, frame):
            agent.listen(audio[start:start + frame])
    print(f"{len(recordings)} recordings, {len(heard)} distinct utterances, "
          f"{sum(len(a) for a in heard.values()) / 16000:.0f} s of speech")
    return list(heard.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--windows", default="30,10,5", help="comma-separated windows in s (30: Whisper's own)")
    parser.add_argument("--limit", type=int, help="at most this many utterances")
    parser.add_argument("--verbose", action="store_true", help="print every text that differs")
    parser.add_argument("--no-timestamps-too", action="store_true",
                        help="also decode without timestamp tokens (the agent samples them, as faster-whisper does)")
    args = parser.parse_args()

    from duplexeval.agents.cascade import ASR_OPTIONS, load_asr
    from duplexeval.agents.responder import reply_to
    from duplexeval.agents.whisper_window import WindowedWhisper

    clips = utterances(args.run_dir)[: args.limit]
    whisper = load_asr()
    t0 = time.process_time()
    padded = [" ".join(" ".join(s.text.strip() for s in whisper.transcribe(a, **ASR_OPTIONS)[0]).split()) for a in clips]
    print(f"faster-whisper transcribe (30 s padded, timestamps): {time.process_time() - t0:6.1f} s CPU")
    modes = (True, False) if args.no_timestamps_too else (True,)
    for window, stamps in [(float(w), ts) for w in args.windows.split(",") for ts in modes]:
        model = WindowedWhisper(whisper, window, timestamps=stamps)
        t0 = time.process_time()
        texts = [model.transcribe(a) for a in clips]
        cpu = time.process_time() - t0
        differ = [(p, t) for p, t in zip(padded, texts) if p != t]
        replies = sum(reply_to(p) != reply_to(t) for p, t in differ)
        print(f"window {window:4g} s, timestamps {stamps}: {cpu:6.1f} s CPU, {len(differ)} of {len(clips)} texts differ, "
              f"{replies} replies differ")
        for p, t in (differ if args.verbose else []):
            print(f"    30 s: {p!r}\n    {window:g} s: {t!r}")


if __name__ == "__main__":
    main()
