"""GPU check of the Voila shim on Voila's own model class at an 8B size, random weights.

Why random weights: what is measured is the code path - the shim's per-frame loop
(`duplexeval.shims.voila.VoilaServer` / `VoilaLoop`, the step upstream's `run_generate`
takes, reproduced token for token by images/voila/tiny_check.py) over upstream's
`VoilaAutonomousModel` (github:maitrix-org/Voila at 6ba63bf6: a Llama backbone, its
4-layer audio transformer, the Voila head) and an Encodec codec driven one 40 ms frame at a
time (`IncrementalCodec`, a sliding window of 1 s as the shim's default) - at full size,
bf16 on CUDA. What the model says is not measured. One line each (PASS/FAIL + figure),
exit 1 if any fails:

- speed: ms per 40 ms frame (Voila's frame: one codec token) of one session through
  `VoilaServer.step`, over `--frames` frames after a warm-up, split into codec encode /
  model steps / codec decode; PASS when the mean fits a frame. A random model almost never
  writes `<au_token>`, so a forward hook adds a bias to its logit (a stand-in, as in
  tiny_check.py): every step is an audio step, i.e. one model step per frame, the floor;
  each text token the real model writes while it speaks adds one more step (INFO gives its
  cost: one model forward, no codec);
- fork: snapshot after K frames, run M, restore, run again, twice: identical output audio
  and tokens, and different from continuing without a restore;
- memory: GPU memory after building and at the peak.

No batched widths: the shim steps one session per server (`VoilaServer` keeps one loop).
No teacher forcing: the shim does not declare it. Last, the `launch.gpu_step` block for
specs/models/voila.yaml (steps [[1, ms per 40 ms frame]], memory_gb, gpu), checked against
the spec schema (bench/gpu_step_block.py).

Sizes (VOILA_8B below): the model class is transformers' `LlamaModel` plus Voila's heads
(model.py), its audio transformer's sizes are fixed in audio_transformer.py (4 layers,
width 1024, 32 heads, MLP 2816). The hub config of maitrix-org/Voila-autonomous-preview
could not be read here, so the backbone is ASSUMED to have Llama-3.1-8B's shapes (32 layers
of 4096, 32 / 8 heads, MLP 14336, RoPE theta 5e5): the spec's 20 GB download for model +
tokenizer fits an 8B bf16 model. The vocabulary: Llama-3's 128256 + 256 special ids + 4 x
2048 audio ids (ASSUMED layout). The codec: Voila-Tokenizer is transformers'
`EncodecModel` at 16 kHz (voila_tokenizer.py) at 1.1 kbps; 640 samples per token
(tokenize_func.py SEG_LEN) make 25 tokens/s, and 1.1 kbps at 25 tokens/s with 2048-entry
codebooks makes 4 codebooks (Encodec's own rule: floor(1100 / (25 x 11))); the rest of its
config is ASSUMED to be EncodecModel's defaults (32 filters, 2 LSTM layers).

    python bench/gpu_check_voila.py --upstream DIR --deps DIR          # CUDA, well under a minute
    python bench/gpu_check_voila.py --tiny --upstream DIR --deps DIR   # dry run on CPU

`--upstream`: Voila's code (`python -m duplexeval.upstream install`, or
.gpu-carry/upstream/voila from bench/gpu_carry.sh, the default); `--deps`: a folder with
the image's pins (transformers 4.51.3, tokenizers 0.21.1, huggingface-hub 0.30.2), put
first on sys.path. Without CUDA (and without --tiny) it prints SKIP and exits 0.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from gpu_check_common import peak_memory_gb, run_checks  # noqa: E402  (bench/, beside this script)
from gpu_step_block import gpu_short_name, print_block  # noqa: E402

SEED = 1234
FRAME_MS = 40.0
SEG_LEN = 640  # tokenize_func.py: samples per codec token at 16 kHz
PROMPT_TOKENS = 64  # ASSUMED length of the system/task prompt before the user's audio

# Llama-3.1-8B's shapes (ASSUMED for Voila-autonomous-preview's backbone; module docstring).
VOILA_8B: dict[str, Any] = dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                                num_attention_heads=32, num_key_value_heads=8, rope_theta=500000.0,
                                max_position_embeddings=8192, rms_norm_eps=1e-5)
VOILA_TINY: dict[str, Any] = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                  num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=2048)
# Codec and token layout: (codebooks, codebook size, first audio id, vocabulary, Encodec config).
FULL_LAYOUT = dict(nq=4, cb=2048, min_audio=128256 + 256, vocab=128256 + 256 + 4 * 2048,
                   au=128300, voila=128301, eos=128009, pad=128004,
                   encodec=dict(sampling_rate=16000, upsampling_ratios=[8, 5, 4, 4], codebook_size=2048,
                                target_bandwidths=[1.1], audio_channels=1))
TINY_LAYOUT = dict(nq=2, cb=1024, min_audio=128, vocab=128 + 2 * 1024, au=5, voila=6, eos=2, pad=0,
                   encodec=dict(sampling_rate=16000, upsampling_ratios=[8, 5, 4, 4], codebook_size=1024,
                                target_bandwidths=[0.5], audio_channels=1, num_filters=4, hidden_size=16,
                                num_lstm_layers=1, codebook_dim=16))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--upstream", type=Path, default=ROOT / ".gpu-carry" / "upstream" / "voila",
                        help="Voila's code at the pinned commit (default: .gpu-carry/upstream/voila)")
    parser.add_argument("--deps", type=Path, help="folder with transformers 4.51.3 & co. (pip --target), first on sys.path")
    parser.add_argument("--tiny", action="store_true", help="tiny sizes on CPU: a dry run of the script")
    parser.add_argument("--frames", type=int, default=None, help="frames timed for the speed check (default 250; --tiny 12)")
    parser.add_argument("--fork-frames", type=int, default=None, help="M: frames replayed after each restore (default 16; --tiny 6)")
    parser.add_argument("--codec-context", type=int, default=25, help="codec window in frames (the shim's default, 1 s)")
    return parser


class RandomVoilaCodec:
    """Voila-Tokenizer's call interface (`encode(wav, sr) -> codes[n_q, T]`, `decode(codes)`,
    as voila_tokenizer.py wraps transformers' EncodecModel) over a random EncodecModel of
    the assumed config: a stand-in for the weights, not for the code."""

    def __init__(self, config: dict, bandwidth: float, device: str) -> None:
        import torch
        from transformers import EncodecConfig, EncodecModel

        self.torch, self.device, self.bandwidth = torch, device, bandwidth
        self.model = EncodecModel(EncodecConfig(**config)).to(device).eval()  # fp32, as VoilaTokenizer loads it

    def encode(self, wav: Any, sr: int = 16000) -> Any:
        torch = self.torch
        with torch.inference_mode():
            x = torch.as_tensor(wav, dtype=torch.float32, device=self.device)[None, None, :]
            return self.model.encode(x, bandwidth=self.bandwidth).audio_codes[0, 0]

    def decode(self, codes: Any) -> Any:
        torch = self.torch
        with torch.inference_mode():
            codes = torch.as_tensor(codes, dtype=torch.long, device=self.device)
            return self.model.decode(codes[None, None], [None])[0][0, 0]


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    frames = args.frames or (12 if args.tiny else 250)
    fork_frames = args.fork_frames or (6 if args.tiny else 16)
    if not (args.upstream / "model.py").is_file() or not (args.upstream / "audio_transformer.py").is_file():
        print(f"SKIP gpu_check_voila: no Voila code at {args.upstream} (bench/gpu_carry.sh, or "
              f"python -m duplexeval.upstream install; images/voila/README.md)")
        return 0
    sys.path[:0] = [str(args.upstream)] + ([str(args.deps)] if args.deps else [])
    try:
        import numpy as np
        import torch
        import transformers
    except ImportError as exc:
        print(f"SKIP gpu_check_voila: cannot import {exc.name}")
        return 0
    if not args.tiny and not torch.cuda.is_available():
        print(f"SKIP gpu_check_voila: no CUDA device (torch {torch.__version__})")
        return 0
    try:
        from model import VoilaAutonomousModel
        from transformers import LlamaConfig

        from duplexeval.shims.codec_loop import IncrementalCodec
        from duplexeval.shims.voila import VoilaServer, VoilaTokens
    except ImportError as exc:
        print(f"FAIL setup: cannot import {exc.name or exc} (Voila's code and its pins; see --help)")
        return 2

    device = "cpu" if args.tiny else "cuda"
    dtype = torch.float32 if args.tiny else torch.bfloat16
    layout = TINY_LAYOUT if args.tiny else FULL_LAYOUT
    if args.tiny:
        torch.set_num_threads(1)
    where = ("tiny sizes on the CPU" if args.tiny else
             f"an 8B Voila (assumed Llama-3.1-8B shapes) on {torch.cuda.get_device_name(0)}, CUDA {torch.version.cuda}")
    print(f"gpu_check_voila: {where}, torch {torch.__version__}, transformers {transformers.__version__}; "
          f"random weights, upstream code at {args.upstream}")
    if transformers.__version__ != "4.51.3":
        print(f"  note: the image pins transformers 4.51.3, found {transformers.__version__} (--deps)")

    def sync() -> None:
        if device == "cuda":
            torch.cuda.synchronize()

    nq, cb = layout["nq"], layout["cb"]
    tokens = VoilaTokens(min_audio_token_id=layout["min_audio"], audio_token_id=layout["au"],
                         assistant_token_id=layout["voila"], eos_token_id=layout["eos"],
                         pad_token_id=layout["pad"], num_codebooks=nq, codebook_size=cb)

    def bias_audio(module: Any, inputs: Any, output: Any) -> Any:
        """Stand-in: makes `<au_token>` the likely next token, so each step is an audio step."""
        output = output.clone()
        output[..., layout["au"]] += 30.0
        return output

    t_load = time.perf_counter()
    try:
        torch.manual_seed(SEED)
        config = LlamaConfig(vocab_size=layout["vocab"], pad_token_id=layout["pad"], eos_token_id=layout["eos"],
                             **(VOILA_TINY if args.tiny else VOILA_8B))
        config.num_codebooks, config.codebook_size = nq, cb
        config._attn_implementation = "sdpa"  # the shim's default (flash-attn only with --flash-attn)
        previous = torch.get_default_dtype()
        torch.set_default_dtype(dtype)  # built in its own dtype: no fp32 copy of 8B weights
        try:
            with torch.device(device):
                model = VoilaAutonomousModel(config).eval()
        finally:
            torch.set_default_dtype(previous)
        model.lm_head.register_forward_hook(bias_audio)
        codec = RandomVoilaCodec(layout["encodec"], layout["encodec"]["target_bandwidths"][0], device)
        sync()
    except Exception as exc:  # e.g. out of memory: one line, not a traceback
        print(f"FAIL setup: building the random model failed: {type(exc).__name__}: "
              f"{str(exc).splitlines()[0] if str(exc) else ''}")
        return 2
    weights_gb = torch.cuda.memory_allocated() / 2**30 if device == "cuda" else 0.0
    params = sum(p.numel() for p in model.parameters()) / 1e9
    print(f"  built in {time.perf_counter() - t_load:.1f} s: model {params:.2f} B parameters, codec "
          f"{sum(p.numel() for p in codec.model.parameters()) / 1e6:.1f} M ({nq} codebooks of {cb})", flush=True)

    prompt = torch.randint(layout["voila"] + 1, layout["min_audio"], (1, PROMPT_TOKENS),
                           generator=torch.Generator().manual_seed(SEED)).to(device)
    ref_embs = torch.randn(1, 256, generator=torch.Generator().manual_seed(SEED + 1)).to(device)
    ref_mask = torch.tensor([1], device=device)
    incremental = IncrementalCodec(lambda wav: codec.encode(wav, sr=16000), codec.decode, SEG_LEN,
                                   encode_context=args.codec_context, decode_context=args.codec_context)
    server = VoilaServer(model, incremental, tokens, lambda instruction: prompt, ref_embs=ref_embs,
                         ref_embs_mask=ref_mask, decode_text=lambda ids: "".join(chr(0x61 + i % 26) for i in ids))

    # Per-part timers around the shim's own calls (encode, model steps, decode).
    parts: dict[str, float] = {"encode": 0.0, "model": 0.0, "decode": 0.0}
    model_steps = [0]

    def timed(name: str, fn: Any) -> Any:
        def wrapper(*a: Any, **k: Any) -> Any:
            t0 = time.perf_counter()
            out = fn(*a, **k)
            sync()
            parts[name] += time.perf_counter() - t0
            return out
        return wrapper

    incremental.encode_frame = timed("encode", incremental.encode_frame)  # type: ignore[method-assign]
    incremental.decode_frame = timed("decode", incremental.decode_frame)  # type: ignore[method-assign]

    def session(seed: int) -> None:
        server.start_session("lockstep", seed, None)
        loop = server.loop
        one_step = loop._one_step

        def counted() -> Any:
            model_steps[0] += 1
            return one_step()
        loop._one_step = counted  # type: ignore[method-assign]
        loop.step = timed("model", loop.step)  # type: ignore[method-assign]

    rng = np.random.default_rng(SEED)
    n_total = max(frames + 8, 8 + 3 * fork_frames + 8)
    user = (rng.standard_normal((n_total, SEG_LEN)) * 0.1).astype(np.float32)
    step_ms: list[float] = []

    def check_speed() -> str:
        session(SEED)
        for i in range(4):
            server.step(i, user[i], None)
        sync()
        for key in parts:
            parts[key] = 0.0
        model_steps[0] = 0
        for i in range(4, 4 + frames):
            t0 = time.perf_counter()
            server.step(i, user[i], None)
            sync()
            step_ms.append(1000 * (time.perf_counter() - t0))
        mean = sum(step_ms) / len(step_ms)
        q = max(1, len(step_ms) // 4)
        first, last = sum(step_ms[:q]) / q, sum(step_ms[-q:]) / q
        split = ", ".join(f"{k} {1000 * v / frames:.1f}" for k, v in parts.items())
        per_step = 1000 * parts["model"] / max(1, model_steps[0])
        print(f"INFO model steps: {model_steps[0]} for {frames} frames ({per_step:.1f} ms each: the cost of one "
              f"more step for each text token the real model writes)", flush=True)
        verdict = "INFO" if args.tiny else ("PASS" if mean <= FRAME_MS else "FAIL")  # no verdict on a CPU dry run
        return (f"{verdict} speed: {mean:.1f} ms per 40 ms frame at one session "
                f"({split} ms) over frames 4-{3 + frames}; first quarter {first:.1f} ms, last quarter {last:.1f} ms "
                f"(one model step per frame, the floor)")

    def run(start: int, count: int) -> list[tuple[Any, Any]]:
        out = []
        for i in range(start, start + count):
            pcm = server.step(i, user[i], None)
            out.append((pcm.copy(), server.loop.input_ids[0, -1].detach().clone().cpu()))
        return out

    def same(a: list, b: list) -> bool:
        return len(a) == len(b) and all(np.array_equal(pa, pb) and torch.equal(ta, tb) for (pa, ta), (pb, tb) in zip(a, b))

    def check_fork() -> str:
        session(SEED + 1)
        k, m = 8, fork_frames
        run(0, k)
        snap = server.snapshot()
        first = run(k, m)
        server.restore(snap)
        second = run(k, m)
        server.restore(snap)
        third = run(k, m)
        control = run(k + m, m)
        exact, sensitive = same(first, second) and same(first, third), not same(first, control)
        detail = ("identical" if exact else "DIFFERENT") + f" audio and tokens after 2 restores ({m} frames each)"
        if not sensitive:
            detail += "; inconclusive: continuing without restore gave the same output"
        return f"{'PASS' if exact and sensitive else 'FAIL'} fork: {detail}"

    failures = run_checks((("speed", check_speed), ("fork", check_fork)))
    peak = peak_memory_gb(torch, weights_gb, "model, codec") if device == "cuda" else 0.0
    if step_ms:
        mean = sum(step_ms) / len(step_ms)
        gpu = "CPU (tiny dry run)" if args.tiny else gpu_short_name(torch.cuda.get_device_name(0))
        what = ("tiny sizes: a dry run of the script, not a figure" if args.tiny else
                f"Voila's model class at 6ba63bf6 with random weights at assumed Llama-3.1-8B shapes and an assumed "
                f"Encodec, through the shim; ms per 40 ms frame at one model step per frame (each text token adds "
                f"one), mean of {len(step_ms)} frames; memory_gb: the peak")
        failures += not print_block("voila", "gpu_check_voila.py", steps=[(1, mean)], gpu=gpu,
                                    memory_gb=None if args.tiny else peak, what=what)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
