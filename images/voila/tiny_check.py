"""CPU check of the Voila shim's generation loop against upstream's own `run_generate`, with random tiny weights.

Why: Voila's weights are not here, but its model code (github:maitrix-org/Voila at commit
6ba63bf6d20cac0d88b78bb2158ddcb9f94aec26) builds on CPU from a tiny `LlamaConfig`. The
shim replaces upstream's `VoilaAutonomousModel.run_generate` (which pulls user codec
tokens from a generator until it runs out) by its own per-frame step
(`duplexeval.shims.voila.VoilaLoop`), so lockstep can give one output frame per input
frame and fork can copy the state between frames. This script checks, one PASS/FAIL line
each (exit 1 on any failure), that on upstream's real model class:

- with the same seed and the same user codec tokens, the shim's loop produces exactly the
  token sequence upstream's `run_generate` produces (both channels, every step: audio
  steps, `<|VOILA|>` insertions, text, EOS), up to the point where upstream stops because
  its input generator is exhausted;
- fork: a snapshot of the loop (DynamicCache, attention mask, input ids, speaking flag,
  RNG) restored and run again gives the same continuation.

The random model almost never writes `<au_token>` on its own, so a forward hook adds a
fixed bias to the logits of `<au_token>`, EOS and one text token: the same hook for both
loops, so the comparison stays exact. It checks the code path, not what the real
checkpoint says.

Needs the upstream tree (`python -m duplexeval.upstream install --tarball
images/voila/upstream.tar.gz --manifest images/voila/upstream.json --dest /tmp/voila`)
and transformers on sys.path (4.51.3, the image's pin; einops, tqdm too), e.g.:

    pip install --no-deps --target /tmp/voiladeps transformers==4.51.3 tokenizers==0.21.1 \
        huggingface_hub==0.30.2 safetensors regex einops tqdm pyyaml requests filelock packaging
    python images/voila/tiny_check.py --upstream /tmp/voila --deps /tmp/voiladeps
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SEED = 11
NQ, CB = 2, 32
PAD, EOS, AU, VOILA, MIN_AUDIO = 0, 2, 5, 6, 100
TEXT = 20  # a text token the bias makes likely too
VOCAB = 192
FRAMES = 40


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--upstream", required=True, type=Path)
    ap.add_argument("--deps", type=Path)
    args = ap.parse_args(argv)
    for p in (args.deps, args.upstream, ROOT):
        if p:
            sys.path.insert(0, str(p))
    import torch
    from transformers import LlamaConfig

    from duplexeval.shims.voila import Sampling, VoilaLoop, VoilaTokens
    from model import VoilaAutonomousModel

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=512,
                         pad_token_id=PAD, eos_token_id=EOS)
    config.num_codebooks, config.codebook_size = NQ, CB
    config._attn_implementation = "sdpa"
    model = VoilaAutonomousModel(config).eval()

    def bias(module, inputs, output):
        output = output.clone()
        output[..., AU] += 3.0
        output[..., EOS] += 3.0
        output[..., TEXT] += 3.0
        return output

    model.lm_head.register_forward_hook(bias)
    tokens = VoilaTokens(MIN_AUDIO, AU, VOILA, EOS, PAD, NQ, CB)
    prompt = torch.tensor([[10, 11, 12, 13]])[:, :, None].expand(1, -1, 2 * NQ).clone()
    g = torch.Generator().manual_seed(3)
    user = torch.randint(0, CB, (FRAMES, NQ), generator=g) + torch.tensor([MIN_AUDIO + k * CB for k in range(NQ)])
    ref = torch.randn(1, 256, generator=g)
    ref_mask = torch.tensor([1])
    s = Sampling()
    failures = 0

    def report(ok: bool, what: str) -> None:
        nonlocal failures
        failures += 0 if ok else 1
        print(f"{'PASS' if ok else 'FAIL'} {what}")

    with torch.inference_mode():
        torch.manual_seed(SEED)
        upstream = model.run_generate(prompt, iter(user), ref_embs=ref, ref_embs_mask=ref_mask, max_new_tokens=10_000,
                                      pad_token_id=PAD, eos_token_id=EOS, llm_audio_token_id=AU,
                                      min_audio_token_id=MIN_AUDIO, llm_assistant_token_id=VOILA,
                                      temperature=s.temperature, top_k=s.top_k, audio_temperature=s.audio_temperature,
                                      audio_top_k=s.audio_top_k)
        torch.manual_seed(SEED)
        loop = VoilaLoop(model, tokens, prompt, ref, ref_mask, s)
        snap_at, snap, after = FRAMES // 2, None, []
        for t in range(FRAMES):
            if t == snap_at:
                snap = (loop.state(), torch.get_rng_state())
            codes, _ = loop.step(user[t][None, None, :])
            if t >= snap_at:
                after.append(codes)
        ours = loop.input_ids
        n = ours.shape[1]
        steps = n - prompt.shape[1]
        rows = ours[0, prompt.shape[1]:]
        new = rows[:, NQ]  # the assistant channel's first codebook
        audio_steps = int((rows[:, 0] >= MIN_AUDIO).sum())  # user codes: only audio steps put them in
        starts, stops = int((new == VOILA).sum()), int((new == EOS).sum())
        report(upstream.shape[1] >= n and torch.equal(upstream[:, :n], ours),
               f"the shim's loop = upstream run_generate, token for token ({steps} steps: {audio_steps} audio "
               f"steps for {FRAMES} frames, {starts} <|VOILA|> starts, {stops} EOS stops, "
               f"{int((new == TEXT).sum())} text tokens)")
        report(starts > 0 and stops > 0, "the check saw the head start speaking and EOS stop it")
        report(audio_steps == FRAMES, "one audio step per frame")
        state, rng = snap
        loop.load_state(state)
        torch.set_rng_state(rng)
        again = [loop.step(user[t][None, None, :])[0] for t in range(snap_at, FRAMES)]
        report(all((a == b).all() for a, b in zip(after, again)) and torch.equal(loop.input_ids, ours),
               f"fork: restore at frame {snap_at} and run again -> identical codes and tokens")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
