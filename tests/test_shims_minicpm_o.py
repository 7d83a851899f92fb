"""The MiniCPM-o 4.5 shim's own logic, on a stand-in core (issue 12).

`StandInDuplex` is NOT MiniCPM-o: it is a few lines with the call signatures of upstream's
duplex object (`prepare`, `streaming_prefill`, `streaming_generate`, from
MiniCPMO45/modeling_minicpmo.py, `MiniCPMODuplex`) and its output shapes: a listening unit
returns a second of zeros, a speaking unit a 24 kHz waveform of variable length (None,
joined chunks, a left-padded second, a short last chunk). It speaks a tone after it heard
sound followed by a quiet second. What is tested is the shim: fixed 1 s frames from
variable-length output, nothing lost or invented, events, the PCM dtype check, the
stuck-listening watch, and `duplexeval conformance` against the spec's declarations.

Run as a script, this file serves the shim on the stand-in (the conformance test starts it
that way, from a plain-dict spec).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from shim_helpers import BASE_CHECKS, assert_conformance, standin_spec  # noqa: E402

from duplexeval.protocol.server import run_server  # noqa: E402
from duplexeval.shims.framing import FrameFifo, PcmError, pcm_float32  # noqa: E402
from duplexeval.shims.minicpm_o import MiniCPMOServer, StuckListenWatch  # noqa: E402

OUT = 24000


class StandInDuplex:
    """A stand-in with the upstream duplex object's call signatures (not the model)."""

    SAMPLE_RATE, CHUNK_MS, FIRST_CHUNK_MS = 16000, 1000, 1035

    def __init__(self, mode: str = "normal") -> None:
        self.mode = mode
        self.prepared = []

    def prepare(self, prefix_system_prompt=None, suffix_system_prompt=None, ref_audio=None, prompt_wav_path=None,
                context_previous_marker="\n\nprevious: "):
        self.prepared.append(prefix_system_prompt)
        self.voice = prompt_wav_path
        self.buffer = np.zeros(0, dtype=np.float32)
        self.chunk_idx = 0
        self.pending = None
        self.heard_sound = False
        self.reply_units = 0

    def streaming_prefill(self, audio_waveform=None, frame_list=None, text_list=None, max_slice_nums=1,
                          batch_vision_feed=False):
        self.buffer = np.concatenate([self.buffer, audio_waveform])
        need = int((self.FIRST_CHUNK_MS if self.chunk_idx == 0 else self.CHUNK_MS) * self.SAMPLE_RATE / 1000)
        if self.chunk_idx == 0 and len(self.buffer) < need:  # upstream pads the first unit in front
            self.buffer = np.concatenate([np.zeros(need - len(self.buffer), dtype=np.float32), self.buffer])
        unit, self.buffer = self.buffer[:need], self.buffer[need:]
        self.chunk_idx += 1
        self.pending = float(np.sqrt(np.mean(unit ** 2)))
        return {"success": True, "reason": "", "cost_all": 0.0}

    def streaming_generate(self, prompt_wav_path=None, max_new_speak_tokens_per_chunk=20, decode_mode="sampling",
                           temperature=0.7, top_k=20, top_p=0.8, **kwargs):
        import torch

        silence = {"is_listen": True, "text": "", "audio_waveform": np.zeros(OUT, dtype=np.float32), "end_of_turn": False}
        energy, self.pending = self.pending, None
        if energy is None or self.mode == "stuck":
            return silence
        if self.reply_units == 0:
            if energy > 0.02:
                self.heard_sound = True
                return silence
            if not self.heard_sound:
                return silence
            self.heard_sound = False
            self.reply_units = 4
        k = 4 - self.reply_units
        self.reply_units -= 1
        # None (token2wav not flushed yet), 1.25 s joined, 1 s left-padded, a short last chunk.
        length = [None, 30000, OUT, 9000][k]
        jitter = float(torch.rand(1))  # sampled: the session seed must fix it
        audio = None
        if length is not None:
            t = np.arange(length) / OUT
            audio = (0.3 * np.sin(2 * np.pi * (300 + 100 * jitter) * t)).astype(np.float32)
            if self.mode == "int16-as-float":
                audio = audio * 32767.0
            elif self.mode == "int16":
                audio = (audio * 32767).astype(np.int16)
        return {"is_listen": False, "text": ["Sure,", " here", " it", " is."][k], "audio_waveform": audio,
                "end_of_turn": k == 3}


def server(mode: str = "normal", **kw) -> MiniCPMOServer:
    srv = MiniCPMOServer(StandInDuplex(mode), prompt_wav_path="/stand-in/voice.wav", **kw)
    return srv


def session(srv: MiniCPMOServer, inputs: list[np.ndarray], seed: int = 0, prompt=None):
    srv.reset()
    srv.start_session("lockstep", seed, prompt)
    outs, events = [], []
    for i, x in enumerate(inputs):
        srv._pending = []
        outs.append(srv.step(i, x, None))
        events += srv._pending
    return outs, events


def talk_then_quiet(n: int = 8) -> list[np.ndarray]:
    t = np.arange(16000) / 16000
    loud = (0.2 * np.sin(2 * np.pi * 200 * t)).astype(np.float32)
    return [loud, loud] + [np.zeros(16000, dtype=np.float32)] * (n - 2)


def test_variable_length_output_becomes_exact_seconds_with_nothing_lost():
    srv = server()
    outs, _ = session(srv, talk_then_quiet(9))
    assert all(o.shape == (OUT,) and o.dtype == np.float32 for o in outs)
    said = np.concatenate(outs)
    produced = 30000 + OUT + 9000
    assert srv.fifo.pushed_samples == produced
    # Units 0-1 loud, 2 quiet -> it starts speaking (audio None: not flushed yet), 3.. audio;
    # the 63000 samples play out back to back from frame 3, then silence.
    start = 3 * OUT
    assert not np.any(said[:start]) and np.abs(said[start:start + 10]).max() > 0
    assert np.count_nonzero(np.abs(said[start:start + produced]) > 1e-4) > 0.9 * produced
    assert not np.any(said[start + produced:])


def test_text_and_state_events_follow_the_model():
    _, events = session(server(), talk_then_quiet(9))
    states = [(e["frame_idx"], e["state"]) for e in events if e["type"] == "state"]
    assert states == [(2, "speak"), (6, "listen")]
    assert "".join(e["text"] for e in events if e["type"] == "text") == "Sure, here it is."


def test_the_session_prompt_reaches_prepare_and_reset_repeats_it():
    srv = server(system_prompt="default prompt")
    session(srv, talk_then_quiet(2), prompt="be brief")
    session(srv, talk_then_quiet(2))
    assert srv.core.prepared == ["be brief", "default prompt"]


def test_same_seed_same_bytes_other_seed_other_bytes():
    a, _ = session(server(), talk_then_quiet(9), seed=5)
    b, _ = session(server(), talk_then_quiet(9), seed=5)
    c, _ = session(server(), talk_then_quiet(9), seed=6)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))


def test_int16_output_is_scaled_and_int16_values_in_float_are_refused():
    a, _ = session(server("int16"), talk_then_quiet(9))
    b, _ = session(server(), talk_then_quiet(9))
    assert np.abs(np.concatenate(a) - np.concatenate(b)).max() < 1e-3
    with pytest.raises(PcmError, match="int16 PCM read as float"):
        session(server("int16-as-float"), talk_then_quiet(9))


def test_pcm_float32_checks():
    assert pcm_float32(np.array([[0.5, -0.5]], dtype=np.float64)).tolist() == [0.5, -0.5]
    assert pcm_float32(np.array([16384], dtype=np.int16)).tolist() == [0.5]
    with pytest.raises(PcmError, match="NaN"):
        pcm_float32(np.array([0.1, np.nan]))
    with pytest.raises(PcmError, match="mono"):
        pcm_float32(np.zeros((2, 10)))
    import torch

    assert pcm_float32(torch.tensor([0.25], dtype=torch.bfloat16)).tolist() == [0.25]


def test_frame_fifo_pads_and_counts_underruns_and_copies_state():
    fifo = FrameFifo(4)
    fifo.push(np.ones(6, dtype=np.float32))
    snap = fifo.state()
    assert fifo.pop().tolist() == [1, 1, 1, 1] and fifo.pop().tolist() == [1, 1, 0, 0] and fifo.underrun_frames == 1
    assert not fifo.pop().any() and fifo.underrun_frames == 1  # nothing queued: silence, not an underrun
    fifo.load_state(snap)
    assert len(fifo) == 6 and fifo.clear() == 6


def test_stuck_listening_is_reported_once():
    lines = []
    srv = server("stuck", stuck_listen_s=3, log=lines.append)
    session(srv, [np.full(16000, 0.1, dtype=np.float32)] * 8)
    assert len(lines) == 1 and "stuck listening" in lines[0]
    watch = StuckListenWatch(2)
    quiet = np.zeros(10, dtype=np.float32)
    assert [watch.update(True, quiet) for _ in range(5)] == [False] * 5  # silence never counts


def test_no_voice_file_is_refused_at_start():
    with pytest.raises(ValueError, match="voice file"):
        MiniCPMOServer(StandInDuplex(), prompt_wav_path="")


def test_conformance_passes_on_the_stand_in():
    assert_conformance(standin_spec("minicpm-o-4.5", "tests/test_shims_minicpm_o.py"), BASE_CHECKS)


if __name__ == "__main__":
    run_server(lambda args: server(), description="MiniCPM-o shim on a stand-in core (tests only)")
