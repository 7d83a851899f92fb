"""Reference agent `oracle`: reads the scene's labels and behaves perfectly (every score ~1.0).

It is an end-to-end check of the scoring pipeline, so it only ever knows what the
runner's label side channel tells it (capability `labels`; no other model gets labels):

- T ends        -> speak the gold answer, starting ANSWER_DELAY_S later (Start: fresh onset < 5 s)
- N4Q ends      -> start a long (> 4 s) reply within 1 s (Stop eligibility)
- N4R starts    -> stop at once (Stop: silent within 2 s)
- anything else -> stay silent (Shush)
Forced frames (teacher forcing, MTR) are echoed as what it said.
"""

from __future__ import annotations

import copy

import numpy as np

from duplexeval.audio import trim_silence
from duplexeval.protocol.server import DuplexServer, run_server
from duplexeval.tts import synthesize

VOICE = "slt"
# 3 frames after the frame in which T ends: the onset lands 0.16-0.24 s after T's end, so
# it sits >= 0.16 s from Duplex-MPE's Start boundary (no speech at T's end: a reply begun
# within ~50 ms of it read as "already speaking" when the ASR/VAD timing moved, issue 35)
# and >= 0.26 s before the 0.5 s turn gap ends; MTR and Full-Duplex-Bench latencies read
# ~0.2 s, inside their golden bounds with the same margin (`duplexeval timing-margin`).
ANSWER_DELAY_S = 0.25
N4_REPLY_DELAY_S = 0.4
N4_REPLY = (
    "Sure, let me walk you through it step by step, starting with the first part, "
    "then the second part, and after that the remaining details one at a time"
)


class OracleAgent(DuplexServer):
    model_name = "oracle"
    in_rate = 16000
    out_rate = 16000
    frame_ms = 80.0
    capabilities = ("labels", "teacher_forcing", "fork")
    # Batched sessions (--max-sessions N): reset() reassigns every per-session field; the long reply is shared read-only.
    max_sessions_supported = 64

    def __init__(self) -> None:
        super().__init__()
        self.long_reply = self._speech(N4_REPLY)
        assert len(self.long_reply) > 4.5 * self.out_rate, "N4 reply must last > 4 s"
        self.reset()

    def reset(self) -> None:
        self.utterance: np.ndarray | None = None
        self.start_frame = 0
        self.stop_frame: int | None = None
        self.stop_sample = 0
        self.gold: dict[object, str] = {}

    def _speech(self, text: str) -> np.ndarray:
        return trim_silence(synthesize(text, VOICE, self.out_rate), self.out_rate)

    def _frames(self, seconds: float) -> int:
        return round(seconds * 1000.0 / self.frame_ms)

    def _say(self, audio: np.ndarray, start_frame: int) -> None:
        self.utterance, self.start_frame, self.stop_frame = audio, start_frame, None

    def on_label(self, msg: dict) -> None:
        label, phase, frame = msg["label"], msg["phase"], msg["frame_idx"]
        if "gold_answer" in msg:
            self.gold[msg.get("turn_id")] = msg["gold_answer"]
        if label == "T" and phase == "end":
            answer = msg.get("gold_answer") or self.gold.get(msg.get("turn_id"))
            if answer:
                self._say(self._speech(answer), frame + self._frames(ANSWER_DELAY_S))
        elif label == "N4Q" and phase == "end":
            self._say(self.long_reply, frame + self._frames(N4_REPLY_DELAY_S))
        elif label == "N4R" and phase == "start" and self.utterance is not None:
            # Yield at the exact sample the human starts resolving it, not a frame early.
            self.stop_frame = frame
            self.stop_sample = round(float(msg.get("offset_s", 0.0)) * self.out_rate)

    def step(self, frame_idx: int, input_audio: np.ndarray, forced: np.ndarray | None) -> np.ndarray:
        n = self.out_frame_samples
        out = np.zeros(n, dtype=np.float32)
        if forced is not None:
            out = forced
        elif self.utterance is not None and frame_idx >= self.start_frame:
            pos = (frame_idx - self.start_frame) * n
            chunk = self.utterance[pos : pos + n]
            out[: len(chunk)] = chunk
            if self.stop_frame is not None and frame_idx >= self.stop_frame:
                out[self.stop_sample if frame_idx == self.stop_frame else 0:] = 0.0
                self.utterance = None
            elif pos + n >= len(self.utterance):
                self.utterance = None
        return out

    def snapshot(self) -> dict:
        # The utterance array is never written to, so sharing it is safe.
        return copy.copy({"utterance": self.utterance, "start_frame": self.start_frame, "gold": dict(self.gold),
                          "stop_frame": self.stop_frame, "stop_sample": self.stop_sample})

    def restore(self, state: dict) -> None:
        self.utterance, self.start_frame = state["utterance"], state["start_frame"]
        self.stop_frame, self.stop_sample = state["stop_frame"], state["stop_sample"]
        self.gold = dict(state["gold"])


def main(argv: list[str] | None = None) -> None:
    run_server(lambda args: OracleAgent(), argv, description=__doc__)


if __name__ == "__main__":
    main()
