"""VAD endpointing for turn-based systems: when has the user started, and finished, a turn?

VocalNet (half-duplex: one whole utterance in, one reply out) and the cascaded baseline
(ASR -> LLM -> TTS) do not decide for themselves when to talk; the shim does, from a
causal voice-activity signal, and every result they get is labelled "shim turn-taking"
(specs/models/vocalnet.yaml, cascaded-baseline.yaml). The rules, all ours and all
parameters of `Endpointer`:

- a frame is speech when its Silero probability (the largest over its 32 ms windows) is
  at least `threshold` (0.5, Silero's default);
- a turn **starts** once `min_speech_s` of speech has accumulated with no silence gap
  longer than `end_silence_s` in between (a cough or a click shorter than that is not a
  turn); the turn's audio then begins `preroll_s` before the first speech frame, so the
  first word is not cut;
- a turn **ends** after `end_silence_s` of silence (0.8 s: longer than the pauses inside
  a sentence of the embedded TTS voices, shorter than the 2 s Freeze-Omni's VAD waits),
  or when it has lasted `max_turn_s`; the returned utterance keeps `tail_s` of the
  trailing silence (Whisper-style encoders like a little context) and drops the rest;
- `user_speaking` is true from the first speech frame of a burst to the end of it, the
  signal a shim uses for barge-in (stop talking when the user talks).

`SileroProbs` is the probability source: the `silero-vad` package's ONNX model (the same
model and 512-sample windows at 16 kHz as the harness's judges), one recurrent state per
stream, resampling nothing (the shims run their VAD at 16 kHz). Its state and the
endpointer's are copyable for a fork snapshot.

The rules' values are the model spec's `endpointer` section (specs/schema/model.schema.json;
its keys are `Endpointer`'s keyword arguments): `spec_env()` carries it to the shim as the
JSON of `$DUPLEXEVAL_ENDPOINTER` (the launch environment, like `launch.env`, for the local
and the docker backend alike), `rules_from_env()` reads it back in the shim. Absent, the
defaults below hold, so a spec without the section runs as before.

Imports numpy (and silero-vad lazily); copied into model images.
"""

from __future__ import annotations

import copy
import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

VAD_RATE = 16000
WINDOW = 512  # samples per Silero step at 16 kHz
EPS = 1e-9     # durations are sums of frame lengths: compare with a tolerance
SPEC_FIELD = "endpointer"           # the model spec's section
ENV = "DUPLEXEVAL_ENDPOINTER"       # how it reaches the shim
RULES = ("threshold", "min_speech_s", "end_silence_s", "preroll_s", "tail_s", "max_turn_s")


def spec_env(model_spec_data: dict) -> dict[str, str]:
    """The launch environment that carries a model spec's `endpointer` section to its shim ({} without one)."""
    rules = model_spec_data.get(SPEC_FIELD)
    return {ENV: json.dumps(rules, sort_keys=True, separators=(",", ":"))} if rules else {}


def rules_from_env(environ: Any = None) -> dict[str, float]:
    """`Endpointer` keyword arguments from `$DUPLEXEVAL_ENDPOINTER`; {} (the defaults) when unset.

    The harness writes it from a schema-checked spec; a hand-set value that is not a JSON
    object of known rules with numbers is a ValueError naming the variable and the key.
    """
    text = (os.environ if environ is None else environ).get(ENV, "").strip()
    if not text:
        return {}
    try:
        rules = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"${ENV}: not JSON ({exc.msg}): {text[:80]!r}") from None
    if not isinstance(rules, dict):
        raise ValueError(f"${ENV}: must be a JSON object of {', '.join(RULES)}, got {text[:80]!r}")
    for key, value in rules.items():
        if key not in RULES:
            raise ValueError(f"${ENV}: unknown rule {key!r} (known: {', '.join(RULES)})")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"${ENV}: {key} must be a number, got {value!r}")
    return {k: float(v) for k, v in rules.items()}


class SileroProbs:
    """Causal Silero speech probabilities of a 16 kHz stream, per 512-sample window.

    `push(frame)` returns the probabilities of the windows completed by the frame (a
    remainder waits for the next push). `model` may be any callable `(window, 16000) ->
    probability` with `reset_states()`; by default the `silero-vad` package's ONNX model.
    """

    def __init__(self, model: Any = None) -> None:
        if model is None:
            from silero_vad import load_silero_vad

            model = load_silero_vad(onnx=True)
        self.model = model
        self.reset()

    def reset(self) -> None:
        self.model.reset_states()
        self._pending = np.zeros(0, dtype=np.float32)

    def push(self, audio_16k: np.ndarray) -> list[float]:
        import torch

        buf = np.concatenate([self._pending, np.asarray(audio_16k, dtype=np.float32).reshape(-1)])
        usable = len(buf) - len(buf) % WINDOW
        probs = []
        for i in range(0, usable, WINDOW):
            out = self.model(torch.from_numpy(buf[i:i + WINDOW].copy()), VAD_RATE)
            probs.append(float(out.reshape(-1)[0]) if hasattr(out, "reshape") else float(out))
        self._pending = buf[usable:]
        return probs

    def state(self) -> dict:
        keys = ("_state", "_context", "_last_sr", "_last_batch_size")
        model_state = {k: copy.deepcopy(getattr(self.model, k)) for k in keys if hasattr(self.model, k)}
        return {"model": model_state, "pending": self._pending.copy()}

    def load_state(self, state: dict) -> None:
        for k, v in state["model"].items():
            setattr(self.model, k, copy.deepcopy(v))
        self._pending = state["pending"].copy()


@dataclass
class Turn:
    """A finished user turn: its audio (16 kHz unless the endpointer was told otherwise) and where it was."""

    audio: np.ndarray
    start_frame: int
    end_frame: int
    reason: str  # "silence" | "max_turn"


@dataclass
class EndpointEvent:
    started: bool = False          # a turn started at this frame
    ended: Turn | None = None      # a turn ended at this frame


@dataclass
class _State:
    frame: int = 0
    in_turn: bool = False
    user_speaking: bool = False
    speech_run_s: float = 0.0       # speech accumulated by a candidate (not yet a turn)
    silence_run_s: float = 0.0      # silence since the last speech frame
    candidate_start: int | None = None
    turn_start: int | None = None
    preroll: list = field(default_factory=list)
    turn_frames: list = field(default_factory=list)


class Endpointer:
    """Turn start/end from one speech probability per frame (see the module docstring for the rules)."""

    def __init__(self, frame_s: float, *, threshold: float = 0.5, min_speech_s: float = 0.25,
                 end_silence_s: float = 0.8, preroll_s: float = 0.32, tail_s: float = 0.2,
                 max_turn_s: float = 20.0) -> None:
        if frame_s <= 0:
            raise ValueError("frame_s must be positive")
        if not 0 < threshold <= 1:
            raise ValueError(f"threshold must be in (0, 1], got {threshold}")
        if end_silence_s <= 0 or max_turn_s <= 0:
            raise ValueError(f"end_silence_s and max_turn_s must be positive, got {end_silence_s}, {max_turn_s}")
        if min(min_speech_s, preroll_s, tail_s) < 0:
            raise ValueError(f"min_speech_s, preroll_s and tail_s must be >= 0, got {min_speech_s}, {preroll_s}, {tail_s}")
        self.frame_s = float(frame_s)
        self.threshold = threshold
        self.min_speech_s = min_speech_s
        self.end_silence_s = end_silence_s
        self.preroll_frames = max(0, int(round(preroll_s / frame_s)))
        self.tail_frames = max(0, int(round(tail_s / frame_s)))
        self.max_turn_s = max_turn_s
        self.s = _State()

    # ---- what a shim reads --------------------------------------------------------------
    @property
    def in_turn(self) -> bool:
        return self.s.in_turn

    @property
    def user_speaking(self) -> bool:
        return self.s.user_speaking

    @property
    def frame(self) -> int:
        return self.s.frame

    def reset(self) -> None:
        self.s = _State()

    def state(self) -> _State:
        return copy.deepcopy(self.s)

    def load_state(self, state: _State) -> None:
        self.s = copy.deepcopy(state)

    # ---- the rules ----------------------------------------------------------------------
    def push(self, frame: np.ndarray, speech_prob: float) -> EndpointEvent:
        s = self.s
        idx = s.frame
        s.frame += 1
        frame = np.asarray(frame, dtype=np.float32)
        speech = speech_prob >= self.threshold
        event = EndpointEvent()
        s.user_speaking = speech or (s.user_speaking and s.silence_run_s + self.frame_s < self.end_silence_s)
        if speech:
            s.silence_run_s = 0.0
        else:
            s.silence_run_s += self.frame_s

        if s.in_turn:
            s.turn_frames.append(frame)
            duration = len(s.turn_frames) * self.frame_s
            if s.silence_run_s >= self.end_silence_s - EPS or duration >= self.max_turn_s - EPS:
                reason = "silence" if s.silence_run_s >= self.end_silence_s - EPS else "max_turn"
                event.ended = self._finish(idx, reason)
            return event

        # Not in a turn: keep the pre-roll, grow or drop a candidate.
        s.preroll.append(frame)
        keep = self.preroll_frames + max(1, int(np.ceil(self.min_speech_s / self.frame_s))) + \
            int(np.ceil(self.end_silence_s / self.frame_s))
        if len(s.preroll) > keep:
            s.preroll = s.preroll[-keep:]
        if speech:
            if s.candidate_start is None:
                s.candidate_start = idx
            s.speech_run_s += self.frame_s
            if s.speech_run_s >= self.min_speech_s - EPS:
                # A turn: its audio starts preroll frames before the candidate's first speech.
                back = (idx - s.candidate_start) + 1 + self.preroll_frames
                s.turn_frames = list(s.preroll[-back:])
                s.turn_start = idx - len(s.turn_frames) + 1
                s.in_turn, s.preroll = True, []
                s.candidate_start, s.speech_run_s = None, 0.0
                event.started = True
        elif s.candidate_start is not None and s.silence_run_s >= self.end_silence_s - EPS:
            s.candidate_start, s.speech_run_s = None, 0.0
        return event

    def _finish(self, idx: int, reason: str) -> Turn:
        s = self.s
        frames = s.turn_frames
        if reason == "silence":
            silent = int(round(s.silence_run_s / self.frame_s))
            keep = len(frames) - max(0, silent - self.tail_frames)
            frames = frames[:max(keep, 1)]
        audio = np.concatenate(frames) if frames else np.zeros(0, dtype=np.float32)
        turn = Turn(audio=audio, start_frame=int(s.turn_start or 0), end_frame=idx, reason=reason)
        s.in_turn, s.turn_frames, s.turn_start = False, [], None
        s.user_speaking = False if reason == "silence" else s.user_speaking
        return turn


class VadEndpointer:
    """`SileroProbs` + `Endpointer` for 16 kHz frames: `push(frame) -> EndpointEvent`."""

    def __init__(self, frame_s: float, probs: SileroProbs | None = None,
                 prob_of: Callable[[list[float]], float] = max, **rules: Any) -> None:
        self.probs = probs or SileroProbs()
        self.endpointer = Endpointer(frame_s, **rules)
        self.prob_of = prob_of
        self._last_prob = 0.0

    def push(self, frame_16k: np.ndarray) -> EndpointEvent:
        probs = self.probs.push(frame_16k)
        # A frame shorter than a window may complete none: it repeats the last decision.
        p = self.prob_of(probs) if probs else self._last_prob
        self._last_prob = p
        return self.endpointer.push(frame_16k, p)

    @property
    def user_speaking(self) -> bool:
        return self.endpointer.user_speaking

    @property
    def in_turn(self) -> bool:
        return self.endpointer.in_turn

    def reset(self) -> None:
        self.probs.reset()
        self.endpointer.reset()
        self._last_prob = 0.0

    def state(self) -> dict:
        return {"probs": self.probs.state(), "endpointer": self.endpointer.state(), "last": self._last_prob}

    def load_state(self, state: dict) -> None:
        self.probs.load_state(state["probs"])
        self.endpointer.load_state(state["endpointer"])
        self._last_prob = state["last"]
