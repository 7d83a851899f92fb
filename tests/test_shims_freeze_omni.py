"""The Freeze-Omni shim's own logic, on stand-in cores (issue 12).

The three stand-ins are NOT Freeze-Omni: they are small objects with the call signatures
of upstream's `web/vad.py` `VAD` (`predict`, `reset_vad`, `in_dialog`), `models/pipeline.py`
`inferencePipeline` (`speech_dialogue(audio, role, stat, past_key_values, last_id,
past_tokens, adapter_cache, encoder_cache, pe_index)`, `post_process`,
`model.tokenizer.encode`, `model.llm_decoder.model.embed_tokens`) and
`models/decoder/llm2tts.py` `llm2TTS.run(...)`, and upstream's status strings (sl, cl, el,
ss, cs). The stand-in "state head" says `ss` once it has heard loud chunks followed by
quiet ones; its reply is a few sampled words with punctuation; its TTS yields a quarter second
per hidden state. What is tested is the shim: the state machine wiring, the synchronous
generation and queue, TTS segmentation, interruption, fork by copy + VAD replay, and
conformance against the spec's declarations.

Run as a script, this file serves the shim on the stand-ins (the conformance test).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from shim_helpers import BASE_CHECKS, assert_conformance, drive, standin_spec  # noqa: E402

from duplexeval.protocol.server import run_server  # noqa: E402
from duplexeval.shims.freeze_omni import FreezeOmniServer  # noqa: E402

CHUNK, OUT = 2560, 3840
DIM = 8
PER_STATE = 6000  # stand-in TTS samples per hidden state (a quarter second)
WORDS = ["Hello", " there", ",", " my", " friend", ".", " Nice", " day", "!"]
SERVER_JSON = {"decoder_first_chunk_size": 20, "decoder_chunk_size": 40, "decoder_chunk_overlap_size": 10,
               "decoder_seg_threshold_first_pack": 0.1, "decoder_seg_threshold": 0.01, "decoder_top_k": 2,
               "decoder_penalty_window_size": 20, "decoder_penalty": 1.1, "decoder_N": 2401}


class StandInVAD:
    """web/vad.py's interface; a smoothed-energy detector whose smoothing state is private (like Silero's)."""

    def __init__(self) -> None:
        self.reset_vad()

    def get_chunk_size(self) -> int:
        return CHUNK

    def reset_vad(self) -> None:
        self.__level = 0.0
        self.__quiet = 0
        self.history: list = [[[[0.0] * 4] * 3]] * 10  # upstream's history starts as 10 zero chunks
        self.in_dialog = False

    def predict(self, audio):
        energy = float(np.sqrt(np.mean(np.asarray(audio, dtype=np.float64) ** 2)))
        self.__level = 0.6 * self.__level + 0.4 * energy
        feature = [[[round(energy, 6)] * 4] * 3]  # stands in for the [1, 19, 80] fbank window
        out = {"status": None}
        if self.in_dialog:
            self.__quiet = self.__quiet + 1 if self.__level < 0.01 else 0
            out["status"] = "el" if self.__quiet >= 12 else "cl"
            if out["status"] == "el":
                self.__quiet = 0
        elif self.__level > 0.03:
            out["status"] = "sl"
            self.in_dialog = True
        else:
            self.history = (self.history + [feature])[-10:]
        if out["status"] == "sl":
            out["feature_last_chunk"] = [[f] for f in self.history[-6:]]
            out["feature"] = feature
        elif out["status"] in ("cl", "el"):
            out["feature_last_chunk"] = None
            out["feature"] = feature
        return out


class _Tokenizer:
    def encode(self, text):
        return [ord(c) % 50 for c in text]

    def decode(self, ids, skip_special_tokens=True):
        return "".join(WORDS[i] for i in ids)


class StandInPipeline:
    """inferencePipeline's interface (not the model): KV = what it heard; reply = sampled words."""

    def __init__(self) -> None:
        self.model = type("M", (), {})()
        self.model.tokenizer = _Tokenizer()
        decoder = type("D", (), {})()
        decoder.model = type("E", (), {})()
        decoder.model.embed_tokens = torch.nn.Embedding(64, DIM)
        self.model.llm_decoder = decoder
        self.roles: list = []

    def post_process(self, text):
        return text.strip() if text.strip()[-1:] in ".!?" else text.strip() + "."

    def speech_dialogue(self, audio, role=None, stat="sl", past_key_values=None, last_id=None, past_tokens=None,
                        adapter_cache=None, encoder_cache=None, pe_index=0):
        if stat == "pre":
            self.roles.append(role)
            return dict(past_key_values=[len(role)], stat="sl", last_id=None, adapter_cache=None,
                        encoder_cache=None, pe_index=0)
        kv = list(past_key_values)
        hidden = None
        if stat in ("sl", "cl"):
            energy = float(audio.reshape(-1)[0])
            kv.append(energy)
            pe_index += 1
            heard = [e for e in kv[1:] if isinstance(e, float)]
            loud = [e > 0.05 for e in heard]
            # The stand-in state head: start speaking after >= 3 loud chunks then 3 quiet ones.
            stat = "ss" if sum(loud) >= 3 and len(loud) >= 3 and not any(loud[-3:]) else "cl"
            encoder_cache = (encoder_cache or 0) + 1
            return dict(past_key_values=kv, stat=stat, last_id=None, adapter_cache=adapter_cache,
                        encoder_cache=encoder_cache, pe_index=pe_index)
        # ss: the first token; cs: the next one (length sampled once per reply).
        if stat == "ss":
            n = int(torch.randint(4, len(WORDS) + 1, (1,)))
            kv.append(("reply", n))
            past_tokens = None
        n = [e for e in kv if isinstance(e, tuple)][-1][1]
        done = len(past_tokens or []) >= n
        if done:
            return dict(past_key_values=kv, stat="sl", last_id=None, adapter_cache=adapter_cache,
                        encoder_cache=encoder_cache, pe_index=pe_index)
        token = len(past_tokens or [])
        last_id = torch.tensor([[token]])
        past_tokens = (past_tokens or []) + [last_id[0][0]]
        hidden = torch.full((1, 1, DIM), float(token))
        return dict(past_key_values=kv + [token], stat="cs", last_id=last_id, adapter_cache=adapter_cache,
                    encoder_cache=encoder_cache, pe_index=pe_index, hidden_state=hidden,
                    text=self.model.tokenizer.decode([int(t) for t in past_tokens]), past_tokens=past_tokens)


class StandInTTS:
    """llm2TTS.run's interface: PER_STATE samples per hidden state, the first few quiet (the shim trims them)."""

    def __init__(self) -> None:
        self.calls: list[dict] = []

    def run(self, hidden, top_k, prefix, codec_chunk_size=40, codec_padding_size=10, penalty_window_size=-1,
            penalty=1.1, N=2401, seg_threshold=0.01):
        self.calls.append({"text_tokens": hidden.shape[1], "states": prefix.shape[1], "chunk": codec_chunk_size,
                           "threshold": seg_threshold})
        n = PER_STATE * prefix.shape[1]
        t = torch.arange(n) / 24000
        seg = 0.3 * torch.sin(2 * torch.pi * 440 * t)
        seg[:50] = 0.001
        yield seg[: n // 2].reshape(1, 1, -1)
        yield seg[n // 2:].reshape(1, 1, -1)


def make_server(**kw) -> FreezeOmniServer:
    return FreezeOmniServer(StandInPipeline(), StandInTTS(), StandInVAD(), SERVER_JSON, device="cpu", **kw)


def chunks(pattern: str) -> list[np.ndarray]:
    """L = a loud chunk (speech-level tone), q = a quiet one."""
    t = np.arange(CHUNK) / 16000
    loud = (0.2 * np.sin(2 * np.pi * 250 * t)).astype(np.float32)
    return [loud if c == "L" else np.zeros(CHUNK, dtype=np.float32) for c in pattern]




def test_a_reply_is_generated_at_ss_queued_and_played_in_fixed_frames():
    srv = make_server()
    outs, events = drive(srv, chunks("qqLLLLqqq" + "q" * 20))
    assert all(o.shape == (OUT,) for o in outs)
    said = np.concatenate(outs)
    states = [(e["frame_idx"], e["state"]) for e in events if e["type"] == "state"]
    # sl at the first loud chunk (the stand-in VAD's smoothing), the third quiet chunk -> ss: the reply starts there.
    assert states[0][1] == "speak" and states[-1][1] == "listen"
    first = states[0][0]
    assert not np.any(said[: first * OUT]) and np.abs(said[first * OUT:(first + 1) * OUT]).max() > 0.2
    # Every TTS sample is queued once, except the first segment's quiet lead (< 0.03: cut, as upstream).
    produced = sum(PER_STATE * c["states"] for c in srv.tts.calls)
    assert srv.scheduler.fifo.pushed_samples == produced - 50
    assert abs(np.count_nonzero(said) - (produced - 50)) <= 2
    text = [e for e in events if e["type"] == "text"]
    assert len(text) == 1 and text[0]["frame_idx"] == first and text[0]["text"].startswith("Hello there,")
    assert srv.vad.in_dialog is False  # ss leaves the dialogue, as upstream


def test_tts_segments_split_at_punctuation_with_first_and_later_chunk_sizes():
    srv = make_server()
    drive(srv, chunks("LLLLqqq" + "q" * 4))
    calls = srv.tts.calls
    assert calls, "no reply"
    assert calls[0]["chunk"] == 20 and calls[0]["threshold"] == 0.1
    assert all(c["chunk"] == 40 and c["threshold"] == 0.01 for c in calls[1:])
    n_tokens = next(n for n in range(len(WORDS) + 1) if "".join(WORDS[:n]) == srv.whole_text)
    assert sum(c["states"] for c in calls) == n_tokens  # every hidden state is spoken once
    if n_tokens >= 6:  # "Hello there," has 3 states (< 4: no cut); "... my friend." is the first segment
        assert calls[0]["states"] == 6


def test_a_new_ss_during_playback_interrupts_the_reply():
    srv = make_server(role="stand-in role")
    outs, events = drive(srv, chunks("LLLLqqq" + "LLLqqq" + "q" * 40))
    assert srv.scheduler.replies == 2
    assert srv.scheduler.interrupted == 1
    assert srv.pipeline.roles == ["stand-in role"]  # prefilled once, then copied per session


def test_the_vad_timeout_leaves_the_dialogue():
    srv = make_server()
    drive(srv, chunks("LL" + "q" * 16))
    assert srv.vad.in_dialog is False and srv.scheduler.replies == 0


def test_fork_restores_outputs_queue_rng_and_vad_by_replay():
    srv = make_server()
    head = chunks("qLLLLqq")
    drive(srv, head)
    level = srv.vad._StandInVAD__level  # the VAD's private state, never copied by the shim
    snap = srv.snapshot()
    tail = chunks("q" + "q" * 6 + "LLLLqqq" + "q" * 10)
    a, ea = drive(srv, tail, start=len(head), seed=None)
    assert srv.vad._StandInVAD__level != level
    srv.restore(snap)
    assert srv.vad._StandInVAD__level == level  # rebuilt by replaying the session's chunks
    b, eb = drive(srv, tail, start=len(head), seed=None)
    assert all(np.array_equal(x, y) for x, y in zip(a, b)) and ea == eb
    assert np.concatenate(a).any()


def test_same_seed_same_reply_other_seed_may_differ_in_length():
    lengths = set()
    for seed in range(6):
        srv = make_server()
        drive(srv, chunks("LLLLqqq"), seed=seed)
        lengths.add(len(srv.whole_text))
        again = make_server()
        drive(again, chunks("LLLLqqq"), seed=seed)
        assert again.whole_text == srv.whole_text
    assert len(lengths) > 1


def test_conformance_passes_on_the_stand_in():
    assert_conformance(standin_spec("freeze-omni", "tests/test_shims_freeze_omni.py"), BASE_CHECKS | {"fork"})


if __name__ == "__main__":
    run_server(lambda args: make_server(), description="Freeze-Omni shim on stand-in cores (tests only)")
