"""The listen/speak scheduler of a lockstep shim whose model generates a reply in one go.

Freeze-Omni's own server listens in one thread and, when its state head says "start
speaking" (`ss`), generates the reply in another thread while a third streams the TTS
segments out as they come (bin/server.py: `llm_prefill` -> `generate` -> `decoder` ->
`tts_data` queue). VocalNet and the cascaded baseline answer a whole user turn at once.
In lockstep (one output frame per input frame, virtual time) there is no second thread
to run alongside: the shim **generates synchronously** at the frame where the model (or
the endpointer) decides to speak, queues all of the reply's audio, and then plays it out
one frame per input frame while it goes on listening. So:

- in lockstep, the compute time of the reply is **not** part of the timing: the reply
  starts at the frame after the decision, as if generation were instant (the specs say
  so in their notes; compare realtime runs for latency that includes compute);
- in realtime the same code runs with the wall clock: the step that generates blocks,
  the harness keeps sending, and the delay shows up as latency.

`SpeechScheduler` is that queue: `generate(chunks)` drains a reply generator into a
`FrameFifo`, `interrupt()` drops what is left (barge-in, or a new reply replacing an
old one, as Freeze-Omni's `interrupt()` does), and `next_frame()` returns the frame to
send plus the listen/speak state change, for `state` events. Its state copies for fork.

`TurnTakingServer` is the protocol side of a half-duplex system (VocalNet, the cascaded
baseline): a VAD endpointer decides when the user's turn ends, the subclass's `respond`
makes the whole reply, the scheduler plays it, and a new user turn barges in.

Imports numpy and the protocol package; copied into model images.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from duplexeval.protocol.server import DuplexServer
from duplexeval.shims.framing import FrameFifo

LISTEN, SPEAK = "listen", "speak"


class SpeechScheduler:
    def __init__(self, out_frame_samples: int) -> None:
        self.fifo = FrameFifo(out_frame_samples)
        self.state_name = LISTEN
        self.replies = 0          # replies generated this session
        self.interrupted = 0      # replies cut short

    @property
    def speaking(self) -> bool:
        """Reply audio is still queued."""
        return len(self.fifo) > 0

    def generate(self, chunks: Iterable[Any], where: str = "reply audio") -> int:
        """Runs the reply generator to the end now (synchronously) and queues its audio; returns samples queued."""
        queued = 0
        for chunk in chunks:
            queued += self.fifo.push(chunk, where)
        self.replies += 1
        return queued

    def interrupt(self) -> int:
        """Drops the rest of the current reply; returns the samples dropped."""
        dropped = self.fifo.clear()
        if dropped:
            self.interrupted += 1
        return dropped

    def next_frame(self) -> tuple[np.ndarray, str | None]:
        """(the frame to send, the new state when it changed with this frame, else None)."""
        had_audio = len(self.fifo) > 0
        frame = self.fifo.pop()
        new = SPEAK if had_audio else LISTEN
        changed = new if new != self.state_name else None
        self.state_name = new
        return frame, changed

    def reset(self) -> None:
        self.fifo.clear()
        self.fifo.underrun_frames = self.fifo.pushed_samples = 0
        self.state_name, self.replies, self.interrupted = LISTEN, 0, 0

    def state(self) -> dict:
        return {"fifo": self.fifo.state(), "state": self.state_name, "replies": self.replies,
                "interrupted": self.interrupted}

    def load_state(self, state: dict) -> None:
        self.fifo.load_state(state["fifo"])
        self.state_name, self.replies, self.interrupted = state["state"], state["replies"], state["interrupted"]


class TurnTakingServer(DuplexServer):
    """A half-duplex system behind protocol v1: VAD endpointing -> a whole reply -> played out, with barge-in.

    Subclasses set the audio attributes and write `respond(turn_audio, frame_idx) -> (text,
    reply audio at out_rate)`; `make_endpointer()` returns the VAD endpointer (a
    `duplexeval.shims.endpointer.VadEndpointer` at 16 kHz). Barge-in: when the endpointer
    starts a new user turn while a reply is playing, the reply stops (`barge_in=False`
    keeps talking over the user). The endpointer, the reply queue and `extra_state()` are
    the fork state; a subclass whose model keeps other state adds it there.
    """

    capabilities: tuple[str, ...] = ("fork", "text_events", "state_events")

    def __init__(self, *, barge_in: bool = True) -> None:
        super().__init__()
        self.barge_in = barge_in
        self.scheduler = SpeechScheduler(self.out_frame_samples)
        self.endpointer = self.make_endpointer()
        self.turns = 0

    # ---- what a subclass writes ---------------------------------------------------------
    def make_endpointer(self) -> Any:
        raise NotImplementedError

    def respond(self, turn_audio: np.ndarray, frame_idx: int) -> tuple[str, np.ndarray | None]:
        raise NotImplementedError

    def extra_state(self) -> Any:
        return None

    def load_extra_state(self, state: Any) -> None:
        pass

    def reset_model(self) -> None:
        """Forget the model's own per-session state (a conversation history)."""

    # ---- the protocol -----------------------------------------------------------------
    def reset(self) -> None:
        self.scheduler.reset()
        self.endpointer.reset()
        self.turns = 0
        self.reset_model()

    def step(self, frame_idx: int, input_audio: np.ndarray, forced: np.ndarray | None) -> np.ndarray:
        event = self.endpointer.push(input_audio)
        if event.started and self.barge_in and self.scheduler.speaking:
            self.scheduler.interrupt()
        if event.ended is not None and (self.barge_in or not self.scheduler.speaking):
            # (Without barge-in a turn that ends while the reply plays was never heard: half duplex.)
            self.turns += 1
            text, audio = self.respond(event.ended.audio, frame_idx)
            self.scheduler.interrupt()
            if audio is not None:
                self.scheduler.generate([audio])
            if text:
                self.emit({"type": "text", "frame_idx": frame_idx, "text": text})
        frame, changed = self.scheduler.next_frame()
        if changed:
            self.emit({"type": "state", "frame_idx": frame_idx, "state": changed})
        return frame

    def snapshot(self) -> dict:
        return {"endpointer": self.endpointer.state(), "scheduler": self.scheduler.state(), "turns": self.turns,
                "extra": self.extra_state()}

    def restore(self, state: dict) -> None:
        self.endpointer.load_state(state["endpointer"])
        self.scheduler.load_state(state["scheduler"])
        self.turns = state["turns"]
        self.load_extra_state(state["extra"])
