"""The Moshi shim and the Moshi-family adapter on moshi 0.2.13's real code path (issue 11).

In process, with random tiny weights (images/moshi/shim.py --tiny): real Mimi encoders
and decoder, real LMGen with its delayed token cache, real KV ring buffers. Nothing of
moshi is replaced; the assertions are on the bytes and tokens it produces.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
import torch
from moshi_helpers import run_frames, same_audio, shim_module, signal


@pytest.fixture(scope="module")
def shim():
    return shim_module()


@pytest.fixture(scope="module")
def server(shim):
    return shim.MoshiShim(tiny=True)


def session(server, seed: int) -> None:
    server.reset()
    server.start_session("lockstep", seed, None)


def test_tiny_model_is_moshis_own_layout_and_hears_its_input(server):
    lm = server.lm_gen.lm_model
    assert (lm.n_q, lm.dep_q, lm.card, lm.text_card) == (16, 8, 2048, 32000)
    assert list(lm.delays) == [0, 0, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1]
    assert set(server.capabilities) == {"teacher_forcing", "fork"}  # no tokenizer in tiny mode: no text_events
    session(server, 1)
    frames = signal(6, seed=4)
    codes = [server.mimi.encode(torch.from_numpy(x)[None, None])[0, :, 0].tolist() for x in frames]
    # Calibrated codebooks: different audio gives different codes (untrained Mimi would give one code).
    assert len({tuple(c) for c in codes}) == len(codes)


def test_first_frame_is_the_acoustic_delay_then_one_frame_per_frame(server):
    session(server, 1)
    outs, tokens = run_frames(server, signal(5, seed=1))
    assert tokens[0] is None and np.array_equal(outs[0], np.zeros(1920, np.float32))
    assert all(t is not None and t.shape == (1, 9, 1) for t in tokens[1:])
    assert all(o.shape == (1920,) and o.dtype == np.float32 and np.any(o != 0) for o in outs[1:])


def test_same_seed_gives_identical_output_in_a_fresh_server(shim, server):
    frames = signal(16, seed=2)
    session(server, 7)
    a, _ = run_frames(server, frames)
    other = shim.MoshiShim(tiny=True)  # its own weights, built from the same seed
    session(other, 7)
    b, _ = run_frames(other, frames)
    assert same_audio(a, b)
    session(server, 8)
    c, _ = run_frames(server, frames)
    assert not same_audio(a, c), "another seed must sample other tokens"


def test_second_session_on_the_same_server_repeats_the_first(server):
    frames = signal(12, seed=3)
    session(server, 5)
    a, ta = run_frames(server, frames)
    session(server, 5)  # hello again: reset_streaming on the same LMGen, no "already streaming"
    b, tb = run_frames(server, frames)
    assert same_audio(a, b)
    assert all(torch.equal(x, y) for x, y in zip(ta[1:], tb[1:]))
    server.reset()  # a reset message alone replays the session's seed
    c, _ = run_frames(server, frames)
    assert same_audio(a, c)


def test_forced_codes_of_frame_t_come_out_verbatim_at_step_t_plus_1(server):
    n_forced, n = 8, 11
    inputs, forced_audio = signal(n, seed=5), signal(n, seed=6)
    session(server, 9)
    forced_codes, tokens = [], []
    for t in range(n):
        server.step(t, inputs[t], forced_audio[t] if t < n_forced else None)
        forced_codes.append(server.last_forced_codes)
        tokens.append(server.last_tokens)
    assert forced_codes[n_forced] is None and all(c is not None for c in forced_codes[:n_forced])
    assert len({tuple(c[0, :, 0].tolist()) for c in forced_codes[:n_forced]}) == n_forced  # not one repeated code
    for t in range(n_forced - 1):
        assert torch.equal(tokens[t + 1][0, 1:, 0], forced_codes[t][0, :, 0]), f"frame {t}"
    # The last forced frame: its codebook 0 is written one step ahead (delay 0), the other
    # seven at the first free step, where the model samples them itself.
    last = n_forced - 1
    assert tokens[last + 1][0, 1, 0] == forced_codes[last][0, 0, 0]
    # And the model is free again: what it says differs from an unforced session's.
    session(server, 9)
    _, free = run_frames(server, inputs)
    assert not torch.equal(free[3], tokens[3])


def test_forced_mimi_keeps_its_own_streaming_state(server):
    """The forced audio goes through the second Mimi: forcing leaves the user encoder's state alone."""
    inputs, forced_audio = signal(6, seed=7), signal(6, seed=8)
    session(server, 3)
    run_frames(server, inputs, forced=dict(enumerate(forced_audio)))
    with_forcing = server.mimi.encode(torch.from_numpy(inputs[0])[None, None])
    session(server, 3)
    run_frames(server, inputs)
    without = server.mimi.encode(torch.from_numpy(inputs[0])[None, None])
    assert torch.equal(with_forcing, without)


def _ring_caches(module) -> list:
    return [s.kv_cache for s in module.get_streaming_state().values() if getattr(s, "kv_cache", None) is not None]


def test_fork_and_restore_is_bit_identical_to_a_replay(server):
    """Snapshots before and after Mimi's KV rings wrap (context 250 steps at 25 Hz = 125
    frames); restoring the older one after the newer; forced history in the trunk."""
    trunk, branch = 130, 12
    inputs, forced_audio = signal(trunk + branch, seed=10), signal(20, seed=11)
    forced = dict(enumerate(forced_audio))  # frames 0..19 teacher-forced, like an MTR history
    session(server, 21)
    run_frames(server, inputs[:20], 0, forced)
    early = server.snapshot()
    a_early, _ = run_frames(server, inputs[20:20 + branch], 20)
    run_frames(server, inputs[20 + branch:trunk], 20 + branch)
    rings = _ring_caches(server.mimi)
    assert rings and all(int(r.end_offset.max()) > r.capacity for r in rings), "premise: Mimi's rings have wrapped"
    late = server.snapshot()
    a_late, t_late = run_frames(server, inputs[trunk:], trunk)
    server.restore(late)
    b_late, u_late = run_frames(server, inputs[trunk:], trunk)
    assert same_audio(a_late, b_late)
    assert all(torch.equal(x, y) for x, y in zip(t_late, u_late))
    server.restore(early)  # back past a later snapshot: the RNG and every cache go back too
    b_early, _ = run_frames(server, inputs[20:20 + branch], 20)
    assert same_audio(a_early, b_early)
    # A replay: a fresh session fed the same frames gives the same continuation.
    session(server, 21)
    run_frames(server, inputs[:20], 0, forced)
    run_frames(server, inputs[20:trunk], 20)
    replay, _ = run_frames(server, inputs[trunk:], trunk)
    assert same_audio(a_late, replay)


def test_restore_writes_into_the_live_buffers(server):
    """In place: CUDA graphs read the KV caches by address, so restore must not swap tensors."""
    session(server, 2)
    run_frames(server, signal(4, seed=12))
    snap = server.snapshot()
    lm_rings = _ring_caches(server.lm_gen.lm_model)
    before = [(r.cache.data_ptr(), r.end_offset.data_ptr()) for r in lm_rings]
    run_frames(server, signal(3, seed=13), 4)
    server.restore(snap)
    assert [(r.cache.data_ptr(), r.end_offset.data_ptr()) for r in _ring_caches(server.lm_gen.lm_model)] == before
    assert all(int(r.end_offset.max()) == 4 for r in lm_rings)


# ---- the real-checkpoint path, offline: a tiny checkpoint written the way kyutai's are ---------

CORPUS = """The quick brown fox jumps over the lazy dog. A full duplex model listens while it speaks.
Moshi streams audio in frames of eighty milliseconds. The harness records both channels of every session.
Teacher forcing replaces the model's own audio with the ground truth. Fork lets one session serve many rounds.
What should I cook for dinner tonight? A simple pasta with garlic and olive oil is quick and tasty.""".split("\n")


@pytest.fixture(scope="module")
def checkpoint(shim, tmp_path_factory):
    """model.safetensors + Mimi + sentencepiece tokenizer + config.json in a folder, as a
    hub snapshot of a Moshi repo holds them; the shim loads it through moshi's CheckpointInfo."""
    import sentencepiece as spm
    from moshi.models import loaders
    from safetensors.torch import save_file

    folder = tmp_path_factory.mktemp("moshi-weights")
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(CORPUS * 20), model_writer=buf, vocab_size=100,
                                   model_type="unigram", minloglevel=2)
    (folder / "tok.model").write_bytes(buf.getvalue())
    mimi_cfg, lm_kwargs = shim.tiny_configs()
    lm_kwargs = dict(lm_kwargs, text_card=100)
    torch.manual_seed(0)
    mimi = loaders.get_mimi(None, mimi_cfg, num_codebooks=8)
    shim.calibrate_codebooks(mimi)
    lm = loaders.get_moshi_lm(None, lm_kwargs=lm_kwargs, dtype=torch.float32)
    save_file(dict(mimi.state_dict()), str(folder / "mimi.safetensors"))
    save_file({k: v.contiguous() for k, v in lm.state_dict().items()}, str(folder / "lm.safetensors"))
    (folder / "mimi_config.json").write_text(json.dumps(mimi_cfg))
    config = dict(lm_kwargs, moshi_name="lm.safetensors", mimi_name="mimi.safetensors", tokenizer_name="tok.model",
                  mimi_config_name="mimi_config.json", lm_gen_config={"temp": 0.8, "temp_text": 0.7})
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_checkpoint_mode_loads_local_files_offline_and_emits_text_events(shim, checkpoint):
    server = shim.MoshiShim(tiny=False, weights=str(checkpoint), device="cpu")
    assert set(server.capabilities) == {"teacher_forcing", "fork", "text_events"}
    assert server.lm_gen.lm_model.text_card == 100  # config.json was read, not the 7B defaults
    session(server, 4)
    texts, expected = [], []
    for t, x in enumerate(signal(40, seed=14)):
        server._pending = []
        server.step(t, x, None)
        texts += [m["text"] for m in server._pending]
        if server.last_tokens is not None:
            tid = int(server.last_tokens[0, 0, 0])
            if tid not in (0, 3):  # the LM's padding ids (existing_text_[end_]padding_id)
                expected.append(server.text_tokenizer.id_to_piece(tid).replace("\u2581", " "))
    assert texts == expected and texts, "every non-padding inner-monologue token becomes one text event"


def test_checkpoint_mode_names_the_missing_file(shim, tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(FileNotFoundError, match="tokenizer-e351c8d8-checkpoint125.safetensors"):
        shim.MoshiShim(tiny=False, weights=str(tmp_path), device="cpu")
