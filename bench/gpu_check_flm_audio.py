"""GPU check of the FLM-Audio shim on FLM-Audio's own code at its published size, random weights.

Why random weights: what is measured is the code path (upstream's `FLMAudioForCausalLM`,
`LMGen` and Mimi at commit 41d768c9, driven frame by frame by images/flm-audio/shim.py
through the Moshi-family adapter) at full size: the shapes, the KV cache (an HF
`DynamicCache` that grows by one position per frame) and the kernels are the real ones,
what the model says is not, and no 16 GB download is needed. The same checks as
bench/gpu_check_moshi.py, one line each (PASS/FAIL + figure), exit 1 if any fails:

- speed: ms per 80 ms frame of one session through the shim's `step` (Mimi encode ->
  `LMGen.step` -> forced-code write -> Mimi decode), over `--frames` frames after a
  warm-up; also the mean of the first and of the last quarter (the cache grows, so
  the step does); PASS when the mean fits a frame (real time);
- fork: snapshot after K frames, run M, restore in place, run them again, twice:
  tokens and PCM bit-identical, and different from continuing without a restore;
- teacher forcing: the forced codes of frame t (second Mimi) come out verbatim at step
  t+1 in all 8 codebooks (the shim's cache write);
- memory: GPU memory of the weights and the peak over the run.

Batched widths N > 1 are not measured: the shim steps one session per server
(`max_sessions_supported` 1), because upstream's `LMGen.depformer_step` starts each
frame's audio codes from a `[1, 0]` tensor, so a batch of several rows cannot step
(flmaudio/models/streaming_flmaudio.py). The script says so in one INFO line.
Last, the `launch.gpu_step` block for specs/models/flm-audio.yaml (steps [[1, ms]],
memory_gb, gpu), checked against the spec schema (bench/gpu_step_block.py).

Sizes (FLM_AUDIO_7B below), from the config.json of the hub repo CofeAI/FLM-Audio
(https://huggingface.co/CofeAI/FLM-Audio/blob/main/config.json, read with a search
engine's copy; the file could not be fetched here): Qwen2.5-7B-shaped backbone, 28 layers
of width 3584, 28 query / 4 KV heads, MLP 18944, q/k/v biases, RoPE theta 1e6; depth
transformer 6 layers, width 1024, 16 heads, SwiGLU, RMSNorm, per-codebook MLPs; 8 audio
codebooks of 2050 ids (2048 codes + pad + empty). Not in the part that could be read: the
text vocabulary, taken as 152064 (Qwen2.5-VL-7B's, which the paper says the backbone is
initialised from (arXiv 2509.02521), and which the text ids 151643-151665 above fit).
Mimi: upstream's own sizes (flmaudio/models/loaders.py). A random depth transformer may
sample the pad/empty ids 2048-2049, which no Mimi codebook holds (the real one does not
emit them there); a forward hook on it masks ids >= 2048 - a stand-in guard, not upstream.

    python bench/gpu_check_flm_audio.py --upstream DIR --deps DIR      # CUDA, well under a minute
    python bench/gpu_check_flm_audio.py --tiny --upstream DIR --deps DIR   # dry run on CPU

`--upstream`: FLM-Audio's code, patched (`python -m duplexeval.upstream install`, or
.gpu-carry/upstream/flm-audio from bench/gpu_carry.sh, the default); `--deps`: a folder
with its pins (transformers 4.51.3, tokenizers 0.21.1, huggingface-hub 0.30.2; `pip
install --no-deps --target DIR`), put first on sys.path. Without CUDA (and without
--tiny) it prints SKIP and exits 0. torch.compile is off (TORCHDYNAMO_DISABLE=1) unless
--compile, as in the shim.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from gpu_check_common import forcing_line, peak_memory_gb, run_checks, snapshot_mb  # noqa: E402  (bench/, beside this script)
from gpu_step_block import gpu_short_name, print_block  # noqa: E402

SEED = 1234
FRAME_MS = 80.0
MIMI_CODES = 2048  # Mimi's codebook size (loaders._quantizer_kwargs["bins"])

# CofeAI/FLM-Audio config.json (see the module docstring); vocab_size: not read, Qwen2.5's.
FLM_AUDIO_7B: dict[str, Any] = dict(
    vocab_size=152064, aud_vocab_size=2050, aud_channel=8,
    hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
    num_key_value_heads=4, max_position_embeddings=8192, rms_norm_eps=1e-5, rope_theta=1000000.0,
    rope_scaling={"type": "default", "rope_type": "default", "mrope_section": [16, 24, 24]},
    attention_bias=True, disable_att_o_bias=True, tie_word_embeddings=False,
    bos_token_id=151643, eos_token_id=151645,
    mup_scale_factor=28.0, output_mult=28.0, input_mult=1.0,
    mm_token_info=dict(text_wait_token_id=151665, aud_pad_token_id=2048, aud_emp_token_id=2049),
    aud_depthgpt=dict(n_layer=6, n_head=16, n_embd=1024, dropout=0.0, bias=False, use_cmlp=True,
                      use_rmsnorm=True, use_swiglu=True),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--upstream", type=Path, default=ROOT / ".gpu-carry" / "upstream" / "flm-audio",
                        help="FLM-Audio's code at the pinned commit, patched (default: .gpu-carry/upstream/flm-audio)")
    parser.add_argument("--deps", type=Path, help="folder with transformers 4.51.3 & co. (pip --target), first on sys.path")
    parser.add_argument("--tiny", action="store_true", help="tiny sizes on CPU: a dry run of the script")
    parser.add_argument("--frames", type=int, default=None, help="frames timed for the speed check (default 200; --tiny 12)")
    parser.add_argument("--fork-frames", type=int, default=None, help="M: frames replayed after each restore (default 16; --tiny 6)")
    parser.add_argument("--compile", action="store_true", help="keep upstream's torch.compile (needs a C compiler)")
    return parser


def _mimi(loaders: Any, device: str, tiny: bool) -> Any:
    """Upstream's `_get_mimi` without its file: the same modules, randomly initialised
    (tiny: the moshi-tiny sizes of bench/flm_audio_tiny_check.py)."""
    if tiny:
        from flm_audio_tiny_check import tiny_mimi

        return tiny_mimi(device)
    from flmaudio.third_party.moshi.models import MimiModel
    from flmaudio.third_party.moshi.modules import SEANetDecoder, SEANetEncoder, transformer
    from flmaudio.third_party.moshi.quantization import SplitResidualVectorQuantizer

    encoder, decoder = SEANetEncoder(**loaders._seanet_kwargs), SEANetDecoder(**loaders._seanet_kwargs)
    model = MimiModel(encoder, decoder, SplitResidualVectorQuantizer(**loaders._quantizer_kwargs), channels=1,
                      sample_rate=loaders.SAMPLE_RATE, frame_rate=loaders.FRAME_RATE,
                      encoder_frame_rate=loaders.SAMPLE_RATE / encoder.hop_length, causal=True,
                      resample_method="conv",
                      encoder_transformer=transformer.ProjectedTransformer(device=device, **loaders._transformer_kwargs),
                      decoder_transformer=transformer.ProjectedTransformer(device=device, **loaders._transformer_kwargs))
    model = model.to(device)
    model.eval()
    model.set_num_codebooks(8)
    return model


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    frames = args.frames or (12 if args.tiny else 200)
    fork_frames = args.fork_frames or (6 if args.tiny else 16)
    if not args.compile:
        os.environ.setdefault("TORCHDYNAMO_DISABLE", "1")  # read at torch import, as the shim does
    if not (args.upstream / "flmaudio" / "models" / "streaming_flmaudio.py").is_file():
        print(f"SKIP gpu_check_flm_audio: no FLM-Audio code at {args.upstream} (bench/gpu_carry.sh, or "
              f"python -m duplexeval.upstream install; images/flm-audio/README.md)")
        return 0
    sys.path[:0] = [str(args.upstream)] + ([str(args.deps)] if args.deps else []) + [str(HERE)]
    try:
        import numpy as np
        import torch
        import transformers
    except ImportError as exc:
        print(f"SKIP gpu_check_flm_audio: cannot import {exc.name}")
        return 0
    if not args.tiny and not torch.cuda.is_available():
        print(f"SKIP gpu_check_flm_audio: no CUDA device (torch {torch.__version__})")
        return 0
    try:
        spec = importlib.util.spec_from_file_location("flm_shim", ROOT / "images" / "flm-audio" / "shim.py")
        shim = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(shim)  # type: ignore[union-attr]
        from flm_audio_tiny_check import tiny_config
        from flmaudio.models import FLMAudioForCausalLM, LMGen, loaders
        from flmaudio.models.configuration_flmaudio import FLMAudioConfig

        from duplexeval.shims.moshi_family import FamilyModels
    except ImportError as exc:
        print(f"FAIL setup: cannot import {exc.name or exc} (FLM-Audio's code and its pins; see --help)")
        return 2

    device = "cpu" if args.tiny else "cuda"
    dtype = torch.float32 if args.tiny else torch.bfloat16
    if args.tiny:
        torch.set_num_threads(1)
    where = ("tiny sizes on the CPU" if args.tiny else
             f"FLM-Audio's published sizes on {torch.cuda.get_device_name(0)}, CUDA {torch.version.cuda}")
    print(f"gpu_check_flm_audio: {where}, torch {torch.__version__}, transformers {transformers.__version__}; "
          f"random weights, upstream code at {args.upstream}, torch.compile {'on' if args.compile else 'off'}")
    if transformers.__version__ != "4.51.3":
        print(f"  note: FLM-Audio pins transformers 4.51.3, found {transformers.__version__} (--deps)")

    class Tokenizer:
        """Stands in for FLM-Audio's HF tokenizer (no weights here): decodes ids to letters."""

        def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
            return "".join(chr(0x61 + i % 26) for i in ids)

    def mask_uncodable(module: Any, inputs: Any, output: Any) -> Any:
        """Stand-in guard: a random depth transformer must not sample ids Mimi cannot decode."""
        if output.shape[-1] > MIMI_CODES:
            output = output.clone()
            output[..., MIMI_CODES:] = float("-inf")
        return output

    class RandomFLM(shim.FLMAudioShim):
        model_name = "flm-audio-random"

        def load_models(self) -> FamilyModels:
            torch.manual_seed(SEED)
            config = FLMAudioConfig(**(tiny_config() if args.tiny else FLM_AUDIO_7B))
            previous = torch.get_default_dtype()
            torch.set_default_dtype(dtype)  # built in its own dtype: no fp32 copy of 7B weights
            try:
                with torch.device(device):
                    lm = FLMAudioForCausalLM(config).eval()
            finally:
                torch.set_default_dtype(previous)
            lm.aud_output_layers.register_forward_hook(mask_uncodable)
            mimi = _mimi(loaders, device, args.tiny)
            forced = _mimi(loaders, device, args.tiny)
            forced.load_state_dict(mimi.state_dict())
            return FamilyModels(mimi=mimi, lm_gen=LMGen(lm), forced_mimi=forced, text_tokenizer=Tokenizer(),
                                device=device)

    def sync() -> None:
        if device == "cuda":
            torch.cuda.synchronize()

    t_load = time.perf_counter()
    try:
        server = RandomFLM(device=device, teacher_forcing=True)
        sync()
    except Exception as exc:  # e.g. out of memory: one line, not a traceback
        print(f"FAIL setup: building the random model failed: {type(exc).__name__}: "
              f"{str(exc).splitlines()[0] if str(exc) else ''}")
        return 2
    lm = server.lm_gen.lm_model
    params = sum(p.numel() for p in lm.parameters()) / 1e9
    weights_gb = torch.cuda.memory_allocated() / 2**30 if device == "cuda" else 0.0
    print(f"  built in {time.perf_counter() - t_load:.1f} s: LM {params:.2f} B parameters "
          f"({lm.config._attn_implementation} attention), capabilities {list(server.capabilities)}", flush=True)

    rng = np.random.default_rng(SEED)
    n_total = max(frames + 8, 8 + 3 * fork_frames + 8, 32)
    user = (rng.standard_normal((n_total, 1920)) * 0.1).astype(np.float32)
    forced_audio = (rng.standard_normal((n_total, 1920)) * 0.1).astype(np.float32)

    def session(seed: int) -> None:
        server.reset()
        server.start_session("lockstep", seed, None)

    def run(start: int, count: int, forced: bool = False) -> list[tuple[Any, Any]]:
        out = []
        for i in range(start, start + count):
            pcm = server.step(i, user[i], forced_audio[i] if forced else None)
            tok = server.last_tokens
            out.append((pcm.copy(), None if tok is None else tok.detach().clone().cpu()))
        return out

    def same(a: list, b: list) -> bool:
        return len(a) == len(b) and all(
            np.array_equal(pa, pb) and ((ta is None) == (tb is None)) and (ta is None or torch.equal(ta, tb))
            for (pa, ta), (pb, tb) in zip(a, b))

    step_ms: list[float] = []

    def check_speed() -> str:
        session(SEED)
        for i in range(4):
            server.step(i, user[i], forced_audio[i])
        sync()
        for i in range(4, 4 + frames):
            t0 = time.perf_counter()
            server.step(i, user[i], forced_audio[i])  # teacher forcing on: the dearer step (a second Mimi encode)
            sync()
            step_ms.append(1000 * (time.perf_counter() - t0))
        mean = sum(step_ms) / len(step_ms)
        q = max(1, len(step_ms) // 4)
        first, last = sum(step_ms[:q]) / q, sum(step_ms[-q:]) / q
        verdict = "INFO" if args.tiny else ("PASS" if mean <= FRAME_MS else "FAIL")  # no verdict on a CPU dry run
        return (f"{verdict} speed: {mean:.1f} ms per 80 ms frame at one session "
                f"({1000 / mean:.1f} frames/s, real time needs 12.5) over frames 4-{3 + frames}; first quarter "
                f"{first:.1f} ms, last quarter {last:.1f} ms (the DynamicCache grows a position per frame)")

    def check_fork() -> str:
        session(SEED + 1)
        k, m = 8, fork_frames
        run(0, k)
        snap = server.snapshot()
        size_mb = snapshot_mb(snap)
        first = run(k, m)
        server.restore(snap)
        second = run(k, m)
        server.restore(snap)
        third = run(k, m)
        control = run(k + m, m)
        exact, sensitive = same(first, second) and same(first, third), not same(first, control)
        detail = ("bit-exact" if exact else "DIFFERENT") + f" after 2 in-place restores ({m} frames each, tokens and PCM)"
        if not sensitive:
            detail += "; inconclusive: continuing without restore gave the same output"
        return f"{'PASS' if exact and sensitive else 'FAIL'} fork: {detail}, snapshot {size_mb:.1f} MB after {k} frames"

    def check_forcing() -> str:
        session(SEED + 2)
        return forcing_line(server, user, forced_audio)

    failures = run_checks((("speed", check_speed), ("fork", check_fork), ("teacher forcing", check_forcing)))
    print("INFO batched widths N > 1: not measured: the shim steps one session per server "
          "(upstream's LMGen.depformer_step starts a frame's codes from a [1, 0] tensor, so N rows cannot step)")
    peak = peak_memory_gb(torch, weights_gb, "LM, two Mimis") if device == "cuda" else 0.0
    if step_ms:
        mean = sum(step_ms) / len(step_ms)
        gpu = "CPU (tiny dry run)" if args.tiny else gpu_short_name(torch.cuda.get_device_name(0))
        what = ("tiny sizes: a dry run of the script, not a figure" if args.tiny else
                f"FLM-Audio's code at 41d768c9 at its published size with random weights through the shim, "
                f"teacher forcing on, mean of {len(step_ms)} frames from the start of a session; one session per "
                f"server; memory_gb: the peak")
        failures += not print_block("flm-audio", "gpu_check_flm_audio.py", steps=[(1, mean)], gpu=gpu,
                                    memory_gb=None if args.tiny else peak, what=what)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
