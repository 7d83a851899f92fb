"""CPU check of the PersonaPlex shim on PersonaPlex's own code with random tiny weights.

Why: PersonaPlex's code (its fork of moshi) is not on PyPI and its weights are gated, but
its inference path runs on CPU with a randomly initialised tiny config. This builds a
weights folder of tiny random files under the real names (model.safetensors, the Mimi
file, a sentencepiece model, voices.tgz with a voice embedding made by PersonaPlex's own
`save_voice_prompt_embeddings` path), shrinks PersonaPlex's loader configs in process,
and runs `images/personaplex/shim.py` unchanged (its `load_models` included) through the
Moshi-family adapter. One line per check (PASS/FAIL), exit 1 on any failure:

- system prompts: a session runs the voice prompt and the text prompt (`hello.prompt`);
  a different prompt changes the output; the cached prompt state restored on reset gives
  the same bytes as stepping the prompts afresh;
- the same seed gives the same output;
- fork: restore in place twice, bit-identical, and different from continuing;
- teacher forcing (PersonaPlex's `moshi_tokens`): the forced codes of frame t come out
  verbatim at step t+1.

It proves the code path, not the model.

    python bench/personaplex_tiny_check.py --upstream /tmp/personaplex   # duplexeval.upstream install output
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEED = 11
TEXT_CARD = 256


def shrink_loaders(loaders) -> None:
    """PersonaPlex's get_mimi / get_moshi_lm read these module dicts at call time."""
    loaders._seanet_kwargs.update(dimension=64, n_filters=8)
    loaders._quantizer_kwargs.update(dimension=32, input_dimension=64, output_dimension=64)
    loaders._transformer_kwargs.update(d_model=64, num_heads=8, num_layers=1, dim_feedforward=256,
                                       input_dimension=64, output_dimensions=[64])
    loaders._lm_kwargs.update(dim=64, num_heads=4, num_layers=2, text_card=TEXT_CARD, depformer_dim=32,
                              depformer_num_heads=4, depformer_num_layers=2,
                              depformer_dim_feedforward=int(4.125 * 32), context=512)


def build_weights(folder: Path) -> None:
    """Tiny random files under the names the shim reads."""
    import numpy as np
    import sentencepiece as spm
    import torch
    from moshi.models import LMGen, loaders
    from moshi.models.lm import LMModel
    from safetensors.torch import save_file

    torch.manual_seed(SEED)
    mimi = build_mimi(loaders)
    save_file({k: v.contiguous() for k, v in mimi.state_dict().items()}, str(folder / "tokenizer-e351c8d8-checkpoint125.safetensors"))
    kwargs = dict(loaders._lm_kwargs, dep_q=16)
    lm = LMModel(device="cpu", dtype=torch.float32, **kwargs)
    save_file({k: v.contiguous() for k, v in lm.state_dict().items()}, str(folder / "model.safetensors"))
    syllables = [a + b for a in "bcdfghklmnprstvz" for b in "aeiou"]
    pick = np.random.default_rng(SEED).integers(0, len(syllables), size=(3000, 3))
    sentences = [" ".join("".join(syllables[j] for j in row[: 1 + i % 3]) for i, row in enumerate(pick[k:k + 12]))
                 for k in range(0, 3000, 12)]
    spm.SentencePieceTrainer.train(sentence_iterator=iter(sentences), model_prefix=str(folder / "spm"),
                                   vocab_size=TEXT_CARD, model_type="unigram", character_coverage=1.0,
                                   minloglevel=2)
    (folder / "spm.model").rename(folder / "tokenizer_spm_32k_3.model")
    # A voice embedding the way PersonaPlex makes its own: save_voice_prompt_embeddings=True.
    lm.eval()
    gen = LMGen(lm, audio_silence_frame_cnt=2, sample_rate=mimi.sample_rate, device="cpu",
                frame_rate=mimi.frame_rate, save_voice_prompt_embeddings=True)
    voice_dir = folder / "voices-src"
    voice_dir.mkdir()
    gen.voice_prompt = str(voice_dir / "NATF2.wav")
    t = np.arange(int(0.8 * mimi.sample_rate)) / mimi.sample_rate
    gen.voice_prompt_audio = (0.3 * np.sin(2 * np.pi * 220 * t))[None].astype(np.float32)
    gen.text_prompt_tokens = []
    mimi.streaming_forever(1)
    gen.streaming_forever(1)
    with torch.no_grad():
        gen.step_system_prompts(mimi)
    with tarfile.open(folder / "voices.tgz", "w:gz") as tar:
        tar.add(voice_dir / "NATF2.pt", arcname="voices/NATF2.pt")


def build_mimi(loaders):
    """get_mimi without a file (PersonaPlex's needs one): the same construction."""
    from moshi.models import MimiModel
    from moshi.modules import SEANetDecoder, SEANetEncoder, transformer
    from moshi.quantization import SplitResidualVectorQuantizer

    encoder, decoder = SEANetEncoder(**loaders._seanet_kwargs), SEANetDecoder(**loaders._seanet_kwargs)
    model = MimiModel(encoder, decoder, SplitResidualVectorQuantizer(**loaders._quantizer_kwargs), channels=1,
                      sample_rate=loaders.SAMPLE_RATE, frame_rate=loaders.FRAME_RATE,
                      encoder_frame_rate=loaders.SAMPLE_RATE / encoder.hop_length, causal=True,
                      resample_method="conv",
                      encoder_transformer=transformer.ProjectedTransformer(device="cpu", **loaders._transformer_kwargs),
                      decoder_transformer=transformer.ProjectedTransformer(device="cpu", **loaders._transformer_kwargs))
    model.eval()
    model.set_num_codebooks(8)
    return model


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--upstream", type=Path, required=True, help="PersonaPlex's moshi/ folder (duplexeval.upstream install)")
    parser.add_argument("--frames", type=int, default=10)
    args = parser.parse_args()
    sys.path[:0] = [str(args.upstream), str(ROOT)]  # PersonaPlex's `moshi` shadows any installed one

    import numpy as np
    import torch
    from moshi.models import loaders

    torch.set_num_threads(1)
    shrink_loaders(loaders)
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="personaplex-tiny-") as tmp:
        folder = Path(tmp)
        build_weights(folder)
        spec = importlib.util.spec_from_file_location("pp_shim", ROOT / "images" / "personaplex" / "shim.py")
        shim = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(shim)  # type: ignore[union-attr]
        rng = np.random.default_rng(SEED)
        user = (rng.standard_normal((64, 1920)) * 0.1).astype(np.float32)
        forced_audio = (rng.standard_normal((64, 1920)) * 0.1).astype(np.float32)

        def run(server, start: int, count: int) -> list:
            out = []
            for i in range(start, start + count):
                pcm = server.step(i, user[i], None)
                tok = server.last_tokens
                out.append((pcm.copy(), None if tok is None else tok.clone()))
            return out

        def same(a: list, b: list) -> bool:
            return len(a) == len(b) and all(
                np.array_equal(pa, pb) and ((ta is None) == (tb is None)) and (ta is None or torch.equal(ta, tb))
                for (pa, ta), (pb, tb) in zip(a, b))

        def hello(server, seed: int, prompt: str | None) -> None:
            server.reset()
            server.start_session("lockstep", seed, prompt)

        try:
            server = shim.PersonaPlexShim(weights=str(folder), voice="NATF2", device="cpu")
            caps = list(server.capabilities)
            prompt = "You are a wise and friendly teacher."
            hello(server, 1, prompt)
            offset_after_prompts = server.lm_gen._streaming_state.offset
            a = run(server, 0, args.frames)
            server._prompt_key = server._prompt_state = None  # forget the cache: step the prompts afresh
            hello(server, 1, prompt)
            b = run(server, 0, args.frames)
            hello(server, 1, prompt)  # from the cache this time
            c = run(server, 0, args.frames)
            hello(server, 1, "Answer questions with clear advice.")
            d = run(server, 0, args.frames)
            ok = same(a, b) and same(a, c) and not same(a, d)
            lines.append(f"{'PASS' if ok else 'FAIL'} system prompts: {offset_after_prompts} prompt steps before "
                         f"frame 0; fresh == cached: {same(a, b) and same(a, c)}; another prompt differs: "
                         f"{not same(a, d)} (capabilities {caps})")

            hello(server, 2, None)
            e = run(server, 0, args.frames)
            hello(server, 2, None)
            f = run(server, 0, args.frames)
            lines.append(f"{'PASS' if same(e, f) else 'FAIL'} same seed, same output over {args.frames} frames")

            hello(server, 3, prompt)
            run(server, 0, 4)
            snap = server.snapshot()
            first = run(server, 4, args.frames)
            server.restore(snap)
            second = run(server, 4, args.frames)
            server.restore(snap)
            third = run(server, 4, args.frames)
            control = run(server, 4 + args.frames, args.frames)
            exact, sensitive = same(first, second) and same(first, third), not same(first, control)
            lines.append(f"{'PASS' if exact and sensitive else 'FAIL'} fork: {'bit-exact' if exact else 'DIFFERENT'} "
                         f"after 2 restores ({args.frames} frames each)"
                         + ("" if sensitive else "; inconclusive: continuing gave the same output"))

            hello(server, 4, prompt)
            codes, toks = [], []
            for t in range(args.frames):
                server.step(t, user[t], forced_audio[t])
                codes.append(server.last_forced_codes.clone())
                toks.append(None if server.last_tokens is None else server.last_tokens.clone())
            ok_frames = [torch.equal(toks[t + 1][:, 1:9, :], codes[t]) for t in range(args.frames - 1)
                         if toks[t + 1] is not None]
            ok = bool(ok_frames) and all(ok_frames)
            lines.append(f"{'PASS' if ok else 'FAIL'} teacher forcing (moshi_tokens): forced codes of frame t verbatim "
                         f"at step t+1 in {sum(ok_frames)}/{len(ok_frames)} frames")
        except Exception as exc:  # one line, not a traceback
            import traceback

            where = traceback.extract_tb(exc.__traceback__)[-1]
            lines.append(f"FAIL shim on tiny PersonaPlex: {type(exc).__name__}: "
                         f"{str(exc).splitlines()[0] if str(exc) else ''} ({Path(where.filename).name}:{where.lineno})")
    for line in lines:
        print(line)
    return 1 if any(line.startswith("FAIL") for line in lines) else 0


if __name__ == "__main__":
    sys.exit(main())
