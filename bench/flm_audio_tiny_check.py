"""CPU check of the FLM-Audio shim on FLM-Audio's own code with random tiny weights.

Why: FLM-Audio is not on PyPI and its weights are not here, but its inference code runs
on CPU with a randomly initialised tiny config, like moshi-tiny. This drives
`images/flm-audio/shim.py` (through the Moshi-family adapter) on that code and checks,
one line each (PASS/FAIL), exit 1 on any failure:

- the pinned upstream commit fails on its first step without our patch (TypeError in
  forward_audio), and runs with it (`--unpatched DIR` to check the first part);
- the same seed gives the same output twice (reset replays it);
- fork: snapshot, run, restore in place, run again, twice: bit-identical tokens and PCM
  (the token cache, penalty windows and Mimis in place; the DynamicCache by copy), and
  different from continuing without a restore;
- teacher forcing by the shim's cache write (`--teacher-forcing`): the forced codes of
  frame t come out verbatim at step t+1, and they are what the LM reads back as its own
  audio at the next step.

It proves the code path, not the model: what the real checkpoint says is untouched.

Needs FLM-Audio's source at commit 41d768c9 (extracted and patched by
`python -m duplexeval.upstream install ...`, see images/flm-audio/README.md) and its
pins on sys.path (transformers 4.51.3, tokenizers 0.21, huggingface-hub 0.30, regex),
e.g. in a folder given with --deps:

    pip install --no-deps --target /tmp/flmdeps transformers==4.51.3 tokenizers==0.21.1 \
        huggingface_hub==0.30.2 regex
    python bench/flm_audio_tiny_check.py --upstream /tmp/flm --deps /tmp/flmdeps [--unpatched /tmp/flm-raw]
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEED = 7


def tiny_config() -> dict:
    """A 2-layer FLM-Audio LM of width 64 with the real stream layout (text + 2 x 8 audio)."""
    return dict(vocab_size=1000, aud_vocab_size=2048, aud_channel=8, hidden_size=64, intermediate_size=128,
                num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=4096,
                # pad/emp ids inside the codebook range: a random model may sample them and
                # Mimi must decode whatever comes out (the real config's values are not known here)
                mm_token_info=dict(text_wait_token_id=5, aud_pad_token_id=2046, aud_emp_token_id=2047),
                aud_depthgpt=dict(n_layer=1, n_head=2, n_embd=32, dropout=0.0, bias=False, use_cmlp=False,
                                  use_rmsnorm=True, use_swiglu=False))


def tiny_mimi(device: str):
    """Upstream's `_get_mimi` with the moshi-tiny sizes, randomly initialised (no file)."""
    from flmaudio.models import loaders
    from flmaudio.third_party.moshi.models import MimiModel
    from flmaudio.third_party.moshi.modules import SEANetDecoder, SEANetEncoder, transformer
    from flmaudio.third_party.moshi.quantization import SplitResidualVectorQuantizer

    seanet = dict(loaders._seanet_kwargs, dimension=64, n_filters=8)
    tkw = dict(loaders._transformer_kwargs, d_model=64, num_heads=8, num_layers=1, dim_feedforward=256,
               input_dimension=64, output_dimensions=[64])
    qkw = dict(loaders._quantizer_kwargs, dimension=32, input_dimension=64, output_dimension=64)
    encoder, decoder = SEANetEncoder(**seanet), SEANetDecoder(**seanet)
    model = MimiModel(encoder, decoder, SplitResidualVectorQuantizer(**qkw), channels=1,
                      sample_rate=loaders.SAMPLE_RATE, frame_rate=loaders.FRAME_RATE,
                      encoder_frame_rate=loaders.SAMPLE_RATE / encoder.hop_length, causal=True,
                      resample_method="conv",
                      encoder_transformer=transformer.ProjectedTransformer(device=device, **tkw),
                      decoder_transformer=transformer.ProjectedTransformer(device=device, **tkw)).to(device)
    model.eval()
    model.set_num_codebooks(8)
    return model


def first_step_error(upstream: Path, deps: Path | None) -> str:
    """Run one LMGen.step of a tiny model in a fresh process; '' when it runs, else the error."""
    code = f"""
import os, sys, torch
os.environ['TORCHDYNAMO_DISABLE'] = '1'
sys.path[:0] = [{str(upstream)!r}] + ([{str(deps)!r}] if {bool(deps)!r} else [])
from flmaudio.models import FLMAudioForCausalLM, LMGen
from flmaudio.models.configuration_flmaudio import FLMAudioConfig
sys.path.insert(0, {str(ROOT / 'bench')!r})
from flm_audio_tiny_check import tiny_config
torch.manual_seed(0)
lm = FLMAudioForCausalLM(FLMAudioConfig(**tiny_config())).eval()
gen = LMGen(lm)
gen.streaming_forever(1)
with torch.no_grad():
    for _ in range(3):
        gen.step(torch.zeros(1, 8, 1, dtype=torch.long))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    if proc.returncode == 0:
        return ""
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else f"exit {proc.returncode}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--upstream", type=Path, required=True, help="FLM-Audio source, patched (duplexeval.upstream install)")
    parser.add_argument("--unpatched", type=Path, help="the same source without our patch (checks that it fails)")
    parser.add_argument("--deps", type=Path, help="folder with transformers 4.51.3 & co. (pip --target)")
    parser.add_argument("--frames", type=int, default=12)
    args = parser.parse_args()
    sys.path[:0] = [str(args.upstream)] + ([str(args.deps)] if args.deps else []) + [str(ROOT)]

    lines: list[str] = []
    if args.unpatched:
        err = first_step_error(args.unpatched, args.deps)
        ok = "TypeError" in err and "forward_audio" in err
        lines.append(f"{'PASS' if ok else 'FAIL'} unpatched upstream fails on its first step: {err or 'it ran'}")
    err = first_step_error(args.upstream, args.deps)
    lines.append(f"{'PASS' if not err else 'FAIL'} patched upstream steps: {err or 'LMGen.step ran 3 frames'}")

    import numpy as np
    import torch

    spec = importlib.util.spec_from_file_location("flm_shim", ROOT / "images" / "flm-audio" / "shim.py")
    shim = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(shim)  # type: ignore[union-attr]
    from flmaudio.models import FLMAudioForCausalLM, LMGen
    from flmaudio.models.configuration_flmaudio import FLMAudioConfig

    from duplexeval.shims.moshi_family import FamilyModels

    class Tokenizer:
        """Stands in for the HF tokenizer (the tiny vocabulary has no real one)."""

        def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
            return "".join(chr(0x61 + i % 26) for i in ids)

    class TinyFLM(shim.FLMAudioShim):
        model_name = "flm-audio-tiny"

        def load_models(self) -> FamilyModels:
            torch.manual_seed(SEED)
            lm = FLMAudioForCausalLM(FLMAudioConfig(**tiny_config())).eval()
            mimi = tiny_mimi("cpu")
            forced = tiny_mimi("cpu")
            forced.load_state_dict(mimi.state_dict())
            return FamilyModels(mimi=mimi, lm_gen=LMGen(lm, use_sampling=True, top_k_audio=50, top_k_text=50),
                                forced_mimi=forced if self.teacher_forcing else None, text_tokenizer=Tokenizer(),
                                device="cpu")

    torch.set_num_threads(1)
    rng = np.random.default_rng(SEED)
    user = (rng.standard_normal((64, 1920)) * 0.1).astype(np.float32)
    forced_audio = (rng.standard_normal((64, 1920)) * 0.1).astype(np.float32)

    def run(server, start: int, count: int, forced: bool = False) -> list:
        out = []
        for i in range(start, start + count):
            pcm = server.step(i, user[i], forced_audio[i] if forced else None)
            tok = server.last_tokens
            out.append((pcm.copy(), None if tok is None else tok.clone()))
        return out

    def same(a: list, b: list) -> bool:
        return len(a) == len(b) and all(
            np.array_equal(pa, pb) and ((ta is None) == (tb is None)) and (ta is None or torch.equal(ta, tb))
            for (pa, ta), (pb, tb) in zip(a, b))

    def session(server, seed: int) -> None:
        server.reset()
        server.start_session("lockstep", seed, None)

    try:
        server = TinyFLM(teacher_forcing=True)
        caps = list(server.capabilities)
        session(server, 1)
        a = run(server, 0, args.frames)
        session(server, 1)
        b = run(server, 0, args.frames)
        lines.append(f"{'PASS' if same(a, b) else 'FAIL'} same seed, same output over {args.frames} frames "
                     f"(capabilities {caps})")

        session(server, 2)
        run(server, 0, 5)
        snap = server.snapshot()
        first = run(server, 5, args.frames)
        server.restore(snap)
        second = run(server, 5, args.frames)
        server.restore(snap)
        third = run(server, 5, args.frames)
        control = run(server, 5 + args.frames, args.frames)
        exact, sensitive = same(first, second) and same(first, third), not same(first, control)
        lines.append(f"{'PASS' if exact and sensitive else 'FAIL'} fork: "
                     f"{'bit-exact' if exact else 'DIFFERENT'} after 2 restores ({args.frames} frames each)"
                     + ("" if sensitive else "; inconclusive: continuing gave the same output"))

        session(server, 3)
        codes, toks, inputs = [], [], []
        gen = server.lm_gen
        for t in range(args.frames):
            server.step(t, user[t], forced_audio[t])
            state = gen._streaming_state
            codes.append(server.last_forced_codes.clone())
            toks.append(None if server.last_tokens is None else server.last_tokens.clone())
            inputs.append(state.cache[:, 1:9, state.offset % state.cache.shape[2]].clone())  # read at the next step
        out_ok = [torch.equal(toks[t + 1][:, 1:9, :], codes[t]) for t in range(args.frames - 1) if toks[t + 1] is not None]
        delays = list(gen.delays[1:9])
        in_ok = []
        for t in range(1, args.frames):
            want = torch.stack([codes[t - d][0, k, 0] for k, d in enumerate(delays)])[None]
            in_ok.append(torch.equal(inputs[t], want))
        ok = bool(out_ok) and all(out_ok) and all(in_ok)
        lines.append(f"{'PASS' if ok else 'FAIL'} teacher forcing (cache write): forced codes of frame t verbatim at "
                     f"step t+1 in {sum(out_ok)}/{len(out_ok)} frames; next-step input holds them with the "
                     f"delays {delays} in {sum(in_ok)}/{len(in_ok)}")
    except Exception as exc:  # one line, not a traceback
        lines.append(f"FAIL shim on tiny FLM-Audio: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    for line in lines:
        print(line)
    return 1 if any(line.startswith("FAIL") for line in lines) else 0


if __name__ == "__main__":
    sys.exit(main())
