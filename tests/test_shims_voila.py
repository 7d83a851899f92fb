"""The Voila shim's own logic, on a stand-in model and codec (issue 12).

`StandInVoila` is NOT Voila: it has the call signatures `VoilaAutonomousModel.run_generate`
uses (`_prepare_attention_mask_for_generation`, `_prepare_inputs_for_generation`,
`__call__(..., return_dict=True)` -> logits / voila_pred / last_hidden_state /
past_key_values, `audio_transformer.inference`, `_update_model_kwargs_for_generation`)
and upstream's token layout (two channels of `num_codebooks` ids, audio codes offset per
codebook, `<au_token>`, `<|VOILA|>`, EOS). Its "head" fires after it heard loud user codes
followed by quiet ones; it then writes a few text tokens, speaks a few audio steps and ends
with EOS. `StandInCodec` has `VoilaTokenizer`'s encode/decode shapes (codes[n_q, T], one
column per 640 samples). What is tested is the shim: one user codec token per frame, text
steps taking no audio time, incremental encoding/decoding, events, fork, the runaway
guard, and conformance against the spec's declarations.

Run as a script, this file serves the shim on the stand-ins (the conformance test).
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from shim_helpers import BASE_CHECKS, assert_conformance, drive, standin_spec  # noqa: E402

from duplexeval.protocol.server import run_server  # noqa: E402
from duplexeval.shims.codec_loop import IncrementalCodec  # noqa: E402
from duplexeval.shims.voila import SEG_LEN, VoilaLoop, VoilaServer, VoilaTokens  # noqa: E402

NQ, CB = 2, 16
TOK = VoilaTokens(min_audio_token_id=100, audio_token_id=5, assistant_token_id=6, eos_token_id=2, pad_token_id=0,
                  num_codebooks=NQ, codebook_size=CB)
WORDS = {20: "Hi", 21: " there", 22: "!"}
VOCAB = TOK.min_audio_token_id + NQ * CB


class StandInCodec:
    """VoilaTokenizer's shapes: encode(wav) -> codes[n_q, T] (T = len / 640), decode(codes) -> wav.

    `memory` > 0 makes a code depend on the previous frame too (a receptive field), as a
    convolutional codec's do.
    """

    def __init__(self, memory: int = 0) -> None:
        self.memory = memory

    def encode(self, wav):
        frames = np.asarray(wav, dtype=np.float32).reshape(-1, SEG_LEN)
        level = np.sqrt(np.mean(frames ** 2, axis=1))
        if self.memory:
            level = level + 0.5 * np.concatenate([[0.0], level[:-1]])
        c0 = np.minimum((level * 40).astype(np.int64), CB - 1)
        c1 = (np.arange(len(frames)) * 0 + (c0 > 0)).astype(np.int64)
        return torch.as_tensor(np.stack([c0, c1]))

    def decode(self, codes):
        codes = np.asarray(codes)
        t = np.arange(SEG_LEN) / 16000
        return torch.as_tensor(np.concatenate([(c0 / CB) * np.sin(2 * np.pi * 330 * t) for c0 in codes[0]]).astype(np.float32))


class _Cache:
    def __init__(self) -> None:
        self.rows: list[list[int]] = []
        self.phase, self.left, self.loud = "listen", 0, 0

    def get_seq_length(self) -> int:
        return len(self.rows)


class StandInVoila:
    """VoilaAutonomousModel's call signatures (not the model): listen, then text, audio and EOS."""

    def __init__(self, runaway: bool = False) -> None:
        self.config = SimpleNamespace(num_codebooks=NQ, codebook_size=CB)
        self.runaway = runaway
        self.audio_transformer = SimpleNamespace(inference=self._audio)
        self._speak_codes = False

    def new_cache(self) -> _Cache:
        return _Cache()

    def _prepare_attention_mask_for_generation(self, inputs, pad_token_id, eos_token_id):
        return torch.ones(inputs.shape[:2], dtype=torch.long)

    def _prepare_inputs_for_generation(self, input_ids, ref_embs=None, ref_embs_mask=None, past_key_values=None,
                                       attention_mask=None, **kwargs):
        new = input_ids[:, past_key_values.get_seq_length():]
        return {"input_ids": new, "past_key_values": past_key_values, "attention_mask": attention_mask,
                "ref_embs": ref_embs}

    def _update_model_kwargs_for_generation(self, outputs, model_kwargs):
        model_kwargs["past_key_values"] = outputs.past_key_values
        mask = model_kwargs["attention_mask"]
        model_kwargs["attention_mask"] = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=-1)
        return model_kwargs

    def __call__(self, input_ids=None, past_key_values=None, attention_mask=None, return_dict=True, **kwargs):
        cache = past_key_values
        assert attention_mask.shape[1] == cache.get_seq_length() + input_ids.shape[1]
        head = 0
        for row in input_ids[0].tolist():
            cache.rows.append(row)
            user = row[0]
            if user >= TOK.min_audio_token_id and cache.phase == "listen":
                loud = (user - TOK.min_audio_token_id) >= 4
                cache.loud = cache.loud + 1 if loud else (cache.loud if cache.loud >= 2 else 0)
                if not loud and cache.loud >= 2:
                    cache.quiet = getattr(cache, "quiet", 0) + 1
        nxt = TOK.audio_token_id
        if cache.phase == "listen" and getattr(cache, "quiet", 0) >= 3:
            head, cache.phase, cache.loud, cache.quiet = 1, "text", 0, 0
            cache.left = int(torch.randint(1, 4, (1,)))  # sampled: the seed must fix it
        elif cache.phase == "text":
            nxt = 20 + (3 - cache.left) % 3
            cache.left -= 1
            if cache.left <= 0 and not self.runaway:
                cache.phase, cache.left = "audio", int(torch.randint(3, 7, (1,)))
        elif cache.phase == "audio":
            cache.left -= 1
            if cache.left < 0:
                nxt, cache.phase = TOK.eos_token_id, "listen"
        self._speak_codes = cache.phase == "audio"
        logits = torch.full((1, input_ids.shape[1], VOCAB), -100.0)
        logits[0, -1, nxt] = 100.0
        pred = torch.zeros((1, input_ids.shape[1], 2))
        pred[0, -1, head] = 1.0
        return SimpleNamespace(logits=logits, voila_pred=pred, last_hidden_state=torch.zeros(1, input_ids.shape[1], 4),
                               past_key_values=cache)

    def _audio(self, hidden, temperature=0.8, top_k=50):
        if self._speak_codes:
            return torch.randint(4, CB, (1, hidden.shape[1], NQ))
        return torch.zeros((1, hidden.shape[1], NQ), dtype=torch.long)


def prompt_ids(instruction: str):
    ids = [10, 11] + [12] * len(instruction.split())
    return torch.tensor(ids)[None, :, None].expand(1, -1, 2 * NQ).clone()


def make_server(runaway: bool = False, memory: int = 0) -> VoilaServer:
    codec = StandInCodec(memory)
    return VoilaServer(StandInVoila(runaway), IncrementalCodec(codec.encode, codec.decode, SEG_LEN, encode_context=4,
                                                               decode_context=4),
                       TOK, prompt_ids, decode_text=lambda ids: "".join(WORDS[i] for i in ids))


def frames(pattern: str) -> list[np.ndarray]:
    t = np.arange(SEG_LEN) / 16000
    loud = (0.3 * np.sin(2 * np.pi * 200 * t)).astype(np.float32)
    return [loud if c == "L" else np.zeros(SEG_LEN, dtype=np.float32) for c in pattern]




def test_one_user_codec_token_per_frame_and_text_steps_take_no_audio_time():
    srv = make_server()
    pattern = "qqLLLqqqq" + "q" * 14
    outs, events = drive(srv, frames(pattern))
    assert all(o.shape == (SEG_LEN,) for o in outs)
    rows = srv.loop.input_ids[0]
    prompt_len = prompt_ids("").shape[1]
    user = rows[prompt_len:, 0].tolist()
    audio_rows = [u for u in user if u >= TOK.min_audio_token_id]
    assert len(audio_rows) == len(pattern)  # every frame's user token went in, once, in order
    assert len(user) > len(pattern)  # ... and the assistant/text/EOS steps in between took no frames
    said = np.concatenate(outs)
    speaking = [i for i, o in enumerate(outs) if np.abs(o).max() > 0]
    assert speaking and not np.any(said[: speaking[0] * SEG_LEN])
    states = [(e["frame_idx"], e["state"]) for e in events if e["type"] == "state"]
    assert states[0][1] == "speak" and states[-1][1] == "listen" and states[0][0] <= speaking[0]
    assert "".join(e["text"] for e in events if e["type"] == "text").startswith("Hi")


def test_the_user_channel_carries_the_incrementally_encoded_frames():
    srv = make_server()
    pattern = "qLLqLq"
    drive(srv, frames(pattern))
    rows = srv.loop.input_ids[0, prompt_ids("").shape[1]:]
    user = [r[:NQ].tolist() for r in rows if r[0] >= TOK.min_audio_token_id]
    whole = StandInCodec().encode(np.concatenate(frames(pattern))).numpy()
    offsets = np.array([TOK.min_audio_token_id + k * CB for k in range(NQ)])
    assert np.array_equal(np.array(user) - offsets, whole.T)


def test_incremental_codec_equals_the_whole_clip_once_the_window_covers_the_receptive_field():
    rng = np.random.default_rng(0)
    clip = [(rng.random() * 0.3 * np.ones(SEG_LEN)).astype(np.float32) for _ in range(12)]
    codec = StandInCodec(memory=1)
    whole = codec.encode(np.concatenate(clip)).numpy()
    enough = IncrementalCodec(codec.encode, codec.decode, SEG_LEN, encode_context=1)
    assert np.array_equal(np.stack([enough.encode_frame(f) for f in clip], axis=1), whole)
    blind = IncrementalCodec(codec.encode, codec.decode, SEG_LEN, encode_context=0)
    assert not np.array_equal(np.stack([blind.encode_frame(f) for f in clip], axis=1), whole)
    dec = IncrementalCodec(codec.encode, codec.decode, SEG_LEN, decode_context=2)
    out = np.concatenate([dec.decode_frame(c) for c in whole.T])
    assert np.allclose(out, codec.decode(whole).numpy())


def test_fork_restores_cache_input_ids_speaking_flag_and_codec():
    srv = make_server(memory=1)
    drive(srv, frames("qLLLqq"))
    snap = srv.snapshot()
    a, ea = drive(srv, frames("qq" + "q" * 10 + "LLqqq"), start=6, seed=None)
    srv.restore(snap)
    b, eb = drive(srv, frames("qq" + "q" * 10 + "LLqqq"), start=6, seed=None)
    assert all(np.array_equal(x, y) for x, y in zip(a, b)) and ea == eb
    assert np.concatenate(a).any()


def test_same_seed_same_bytes():
    a, _ = drive(make_server(), frames("qLLLqqq" + "q" * 10), seed=4)
    b, _ = drive(make_server(), frames("qLLLqqq" + "q" * 10), seed=4)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))


def test_a_runaway_of_text_tokens_is_an_error_not_a_hang():
    srv = make_server(runaway=True)
    with pytest.raises(RuntimeError, match="non-audio tokens in a row"):
        drive(srv, frames("qLLLqqq" + "q" * 4))


class GradRecordingVoila(StandInVoila):
    """The stand-in with one weight that requires grad (as from_pretrained's do): records
    whether autograd was on at each forward and keeps a tensor made from the weight in its
    cache, as a real KV cache keeps the keys and values."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(1))
        self.grad_modes: list[bool] = []

    def __call__(self, *args, **kwargs):
        self.grad_modes.append(torch.is_grad_enabled())
        out = super().__call__(*args, **kwargs)
        out.past_key_values.keys = out.logits[0, -1, :4] * self.weight  # non-leaf under autograd
        return out


def test_the_model_runs_without_autograd_so_a_fork_can_copy_its_state():
    """A recorded graph would grow with every step and make the cache's tensors non-leaf,
    which `state()`'s deep copy refuses (as on the real model, bench/gpu_check_voila.py)."""
    model = GradRecordingVoila()
    loop = VoilaLoop(model, TOK, prompt_ids(""))
    loop.step(loop.user_tokens(np.zeros(NQ, dtype=np.int64)))
    assert model.grad_modes and not any(model.grad_modes)
    loop.load_state(loop.state())  # the deep copy of the cache works


def test_a_two_dimensional_prompt_is_widened_to_both_channels():
    loop = VoilaLoop(StandInVoila(), TOK, torch.tensor([[10, 11]]))
    assert loop.input_ids.shape == (1, 2, 2 * NQ)


def test_conformance_passes_on_the_stand_in():
    assert_conformance(standin_spec("voila", "tests/test_shims_voila.py"), BASE_CHECKS | {"fork"})


if __name__ == "__main__":
    run_server(lambda args: make_server(), description="Voila shim on stand-ins (tests only)")
