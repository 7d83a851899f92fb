"""The VocalNet shim's own logic (VAD endpointing, reply queue, barge-in, fork) on a stand-in (issue 12).

`StandInVocalNet` is NOT VocalNet: it has the interface of upstream's
`omni_speech/infer/vocalnet.py` `VocalNetModel` the shim uses (`set_audio_dir(dir)`,
`__call__([{"role": "user", "content": "<speech>", "path": wav}])` -> `{"text", "audio":
<dir>/<input's basename>}` written at 24 kHz) and answers with a tone as long as half the
user's turn. The VAD is the real Silero model (duplexeval/shims/endpointer.py); the user's
speech is flite's. What is tested is the shim: endpointing, the 24 kHz reply in fixed
frames after the endpoint, barge-in, fork, temp files, and conformance against the spec.

Run as a script, this file serves the shim on the stand-in (the conformance test).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from shim_helpers import BASE_CHECKS, assert_conformance, standin_spec  # noqa: E402

from duplexeval.protocol.server import run_server  # noqa: E402
from duplexeval.shims.endpointer import Endpointer  # noqa: E402
from duplexeval.shims.vocalnet import VocalNetServer  # noqa: E402

IN, OUT = 1280, 1920


class StandInVocalNet:
    """VocalNetModel's call interface (not the model)."""

    def __init__(self) -> None:
        self.audio_dir = None
        self.calls: list[float] = []

    def set_audio_dir(self, audio_dir):
        self.audio_dir = audio_dir

    def __call__(self, messages):
        import soundfile as sf

        path = messages[0]["path"]
        speech, rate = sf.read(path, dtype="float32")
        assert rate == 16000 and messages[0]["content"] == "<speech>"
        seconds = len(speech) / rate
        self.calls.append(seconds)
        t = np.arange(int(24000 * seconds / 2)) / 24000
        out = os.path.join(self.audio_dir, os.path.basename(path).replace(".mp3", ".wav"))
        sf.write(out, (0.3 * np.sin(2 * np.pi * 300 * t)).astype(np.float32), 24000)
        return {"text": f"You spoke for {seconds:.1f} seconds.", "audio": out}


def make_server(**kw) -> VocalNetServer:
    return VocalNetServer(StandInVocalNet(), **kw)


def speech(text: str = "Could you tell me what the weather will be like tomorrow morning?") -> np.ndarray:
    from duplexeval.tts import synthesize

    return synthesize(text, "rms", 16000)


def silence(seconds: float) -> np.ndarray:
    return np.zeros(int(16000 * seconds), dtype=np.float32)


def run(srv, audio: np.ndarray, start: int = 0, seed: int | None = 0):
    if seed is not None:
        srv.start_session("lockstep", seed, None)
        srv.reset()
    n = -(-len(audio) // IN)
    audio = np.concatenate([audio, np.zeros(n * IN - len(audio), dtype=np.float32)])
    outs, events = [], []
    for i in range(n):
        srv._pending = []
        outs.append(srv.step(start + i, audio[i * IN:(i + 1) * IN], None))
        events += srv._pending
    return outs, events


def test_a_turn_is_answered_after_the_endpoint_in_24k_frames():
    srv = make_server()
    user = speech()
    outs, events = run(srv, np.concatenate([silence(0.5), user, silence(4.0)]))
    assert all(o.shape == (OUT,) for o in outs)
    assert len(srv.model.calls) == 1
    # The turn went in whole (pre-roll before, 0.2 s of trailing silence after), not cut.
    assert abs(srv.model.calls[0] - len(user) / 16000) < 0.6
    said = np.concatenate(outs)
    onset = int(np.argmax(np.abs(said) > 0.01)) / 24000
    user_end = 0.5 + len(user) / 16000
    assert user_end + 0.6 < onset < user_end + 1.3  # 0.8 s of silence ends the turn, then the reply
    assert np.count_nonzero(np.abs(said) > 0) >= 0.9 * int(24000 * srv.model.calls[0] / 2)
    texts = [e for e in events if e["type"] == "text"]
    assert len(texts) == 1 and texts[0]["text"].startswith("You spoke for")
    assert [e["state"] for e in events if e["type"] == "state"] == ["speak", "listen"]
    assert os.listdir(srv.in_dir) == [] and os.listdir(srv.out_dir) == []  # temp files removed


def test_a_new_turn_barges_in_and_without_barge_in_the_reply_plays_on():
    long_turn = np.concatenate([speech(), speech()])
    audio = np.concatenate([long_turn, silence(1.2), speech("Stop, please."), silence(3.0)])
    srv = make_server()
    run(srv, audio)
    assert srv.scheduler.interrupted == 1 and len(srv.model.calls) == 2
    calm = make_server(barge_in=False)
    run(calm, audio)
    assert calm.scheduler.interrupted == 0 and len(calm.model.calls) == 1  # the second turn was never heard


def test_fork_restores_vad_endpointer_and_queue():
    srv = make_server()
    head = np.concatenate([silence(0.3), speech()[:16000]])
    run(srv, head)  # mid-turn: the endpointer is collecting
    snap = srv.snapshot()
    tail = np.concatenate([speech()[16000:], silence(3.0)])
    a, ea = run(srv, tail, start=100, seed=None)
    srv.restore(snap)
    b, eb = run(srv, tail, start=100, seed=None)
    assert all(np.array_equal(x, y) for x, y in zip(a, b)) and ea == eb
    assert np.concatenate(a).any() and len(srv.model.calls) == 2


# ---- the endpointer's rules, on hand-made probabilities ------------------------------------
def push_all(ep: Endpointer, probs: list[float]):
    events = []
    for i, p in enumerate(probs):
        ev = ep.push(np.full(4, float(i), dtype=np.float32), p)
        if ev.started or ev.ended:
            events.append((i, ev))
    return events


def test_endpointer_needs_min_speech_and_ends_after_the_silence():
    ep = Endpointer(0.1, min_speech_s=0.3, end_silence_s=0.5, preroll_s=0.2, tail_s=0.1)
    probs = [0, 0, 0.9, 0, 0, 0, 0, 0, 0.9, 0.9, 0.9, 0.9, 0.2, 0.9, 0, 0, 0, 0, 0, 0, 0]
    events = push_all(ep, probs)
    assert [(i, bool(e.started), e.ended is not None) for i, e in events] == [(10, True, False), (18, False, True)]
    turn = events[1][1].ended
    # 0.5 s of silence (frames 14-18) ends it; its audio: 2 pre-roll frames before the first
    # speech frame 8, the speech through frame 13, and 1 of the 5 silent frames (tail_s).
    assert turn.audio.reshape(-1, 4)[:, 0].tolist() == [6, 7, 8, 9, 10, 11, 12, 13, 14]
    assert turn.reason == "silence" and turn.start_frame == 6


def test_endpointer_cuts_at_max_turn_and_a_click_is_no_turn():
    ep = Endpointer(0.1, min_speech_s=0.3, end_silence_s=0.5, max_turn_s=1.0)
    events = push_all(ep, [0.9] * 25)
    ends = [e.ended for _, e in events if e.ended]
    assert ends and ends[0].reason == "max_turn" and len(ends[0].audio) == 10 * 4
    click = Endpointer(0.1, min_speech_s=0.3, end_silence_s=0.5)
    assert push_all(click, [0.9, 0.9, 0, 0, 0, 0, 0, 0, 0.9, 0, 0, 0, 0, 0, 0]) == []


def test_endpointer_state_copies():
    ep = Endpointer(0.1, min_speech_s=0.2)
    push_all(ep, [0.9, 0.9, 0.9])
    state = ep.state()
    push_all(ep, [0] * 20)
    ep.load_state(state)
    assert ep.in_turn


def test_conformance_passes_on_the_stand_in():
    assert_conformance(standin_spec("vocalnet", "tests/test_shims_vocalnet.py"), BASE_CHECKS | {"fork"})


if __name__ == "__main__":
    run_server(lambda args: make_server(), description="VocalNet shim on a stand-in (tests only)")
