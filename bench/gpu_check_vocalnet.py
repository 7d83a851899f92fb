"""GPU check of an endpointing model's shim: VocalNet's, at VocalNet-8B's sizes, random weights.

Why this one: the endpointing (half-duplex) models cost nothing like Moshi. A server listens
(Silero VAD on the CPU, every 80 ms frame) and only at a turn's end does the whole reply in
one go; its compute is its latency (`latency_clock: realtime`). Issue 38's projection needs,
per GPU: how much memory one server holds, how long one reply takes, and how that time
grows when several servers on the same GPU answer at once. VocalNet's own code is not on
PyPI and its weights are gated behind three hub repos, so this drives the real shim
(`duplexeval.shims.vocalnet.VocalNetServer`: the Silero endpointer, the reply queue, the
24 kHz frames) with a **stand-in model of VocalNet-8B's published sizes** behind VocalNet's
call interface (`set_audio_dir`, `__call__(messages)`): a Whisper-large-v3 encoder (the
input padded to 30 s, as Whisper's encoder requires), a 5x frame downsampler and a 2-layer
projector into Llama-3.1-8B, which decodes `--reply-tokens` tokens greedily (KV cache, the
`transformers` generate loop VocalNet also uses). VocalNet's MTP speech decoder and the
CosyVoice2 flow + HiFT vocoder are NOT modelled: the reply times are a lower bound, and the
script says so on every line that uses them. Random weights: the shapes, KV sizes and
kernels are the real ones; what the model says is not.

Lines (PASS/FAIL, INFO), exit 1 if a check fails:

- turn: a spoken question (a 16 kHz wav) and silence through `VocalNetServer.step` frame by
  frame: the endpointer fires, the reply is made, 24 kHz frames of 1920 samples come out
  with sound in them; INFO the reply's wall time (the step that ran it) and the listening
  frames' median cost (the VAD on the CPU);
- memory: GPU memory one server holds (weights, and the peak during a reply);
- servers per GPU: K servers (processes, each its own model, as `--max-sessions 1` servers
  would be) answer the same turn at the same moment, `--reps` times; one INFO line per K
  with the mean reply time and its real-time factor (reply compute / the reply's audio,
  taken as `--reply-tokens` / `--tokens-per-s` seconds of speech), and the last line how
  many servers keep a factor <= 1 (the widest K measured);
- last, the `launch.gpu_step` block (`servers`, `memory_gb`) for specs/models/vocalnet.yaml,
  checked against the spec schema (bench/gpu_step_block.py).

    python bench/gpu_check_vocalnet.py --speech speech16k.wav          # on a CUDA machine, < 5 min
    python bench/gpu_check_vocalnet.py --tiny --speech speech16k.wav   # dry run on CPU, tiny sizes

Needs torch, transformers, numpy, soundfile, silero-vad (+ onnxruntime) and the package's
shims (duplexeval on sys.path). Without CUDA (and without --tiny) it prints SKIP and exits 0.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from gpu_step_block import gpu_short_name, print_block  # noqa: E402  (bench/, beside this script)

IN_RATE, OUT_RATE, IN_FRAME, OUT_FRAME = 16000, 24000, 1280, 1920  # the shim's 80 ms frames
DOWNSAMPLE = 5  # VocalNet's speech projector stacks 5 encoder frames (LLaMA-Omni's adapter)

# VocalNet-8B's parts at their published sizes (Whisper-large-v3; Llama-3.1-8B-Instruct).
WHISPER_LARGE_V3 = dict(d_model=1280, encoder_layers=32, encoder_attention_heads=20, encoder_ffn_dim=5120,
                        num_mel_bins=128, max_source_positions=1500)
LLAMA_31_8B = dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                   num_key_value_heads=8, vocab_size=128256, rope_theta=500000.0, max_position_embeddings=8192)
WHISPER_TINY = dict(d_model=64, encoder_layers=2, encoder_attention_heads=4, encoder_ffn_dim=128,
                    num_mel_bins=128, max_source_positions=1500)
LLAMA_TINY = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, vocab_size=1024, max_position_embeddings=2048)


class RandomVocalNet:
    """VocalNet's call interface (`set_audio_dir`, `__call__(messages) -> {text, audio}`) over a
    random model of VocalNet-8B's sizes: a stand-in for the compute, not VocalNet."""

    def __init__(self, tiny: bool, device: str, reply_tokens: int, tokens_per_s: float, seed: int = 1234) -> None:
        import torch
        from transformers import LlamaConfig, LlamaForCausalLM, WhisperConfig, WhisperFeatureExtractor
        from transformers.models.whisper.modeling_whisper import WhisperEncoder

        self.torch, self.device = torch, device
        self.dtype = torch.float32 if tiny else torch.bfloat16
        self.reply_tokens, self.tokens_per_s = reply_tokens, tokens_per_s
        torch.manual_seed(seed)
        wcfg = WhisperConfig(**(WHISPER_TINY if tiny else WHISPER_LARGE_V3))
        lcfg = LlamaConfig(**(LLAMA_TINY if tiny else LLAMA_31_8B))
        previous = torch.get_default_dtype()
        torch.set_default_dtype(self.dtype)  # built in its own dtype: no fp32 copy of 8B weights
        try:
            with torch.device(device):
                self.encoder = WhisperEncoder(wcfg).eval()
                self.projector = torch.nn.Sequential(
                    torch.nn.Linear(wcfg.d_model * DOWNSAMPLE, 2048), torch.nn.ReLU(),
                    torch.nn.Linear(2048, lcfg.hidden_size)).eval()
                self.llm = LlamaForCausalLM(lcfg).eval()
        finally:
            torch.set_default_dtype(previous)
        self.features = WhisperFeatureExtractor(feature_size=wcfg.num_mel_bins)
        self.audio_dir: str | None = None
        self.calls = 0

    def set_audio_dir(self, audio_dir: str) -> None:
        self.audio_dir = audio_dir

    def __call__(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        import numpy as np
        import soundfile as sf

        torch = self.torch
        speech, rate = sf.read(messages[0]["path"], dtype="float32")
        if rate != IN_RATE:
            raise RuntimeError(f"turn audio at {rate} Hz; VocalNet reads 16 kHz")
        mel = self.features(speech, sampling_rate=IN_RATE, return_tensors="pt").input_features  # padded to 30 s
        with torch.inference_mode():
            enc = self.encoder(mel.to(self.device, self.dtype)).last_hidden_state  # [1, 1500, d]
            b, t, d = enc.shape
            stacked = enc[:, : t - t % DOWNSAMPLE].reshape(b, t // DOWNSAMPLE, d * DOWNSAMPLE)
            prefix = self.projector(stacked)
            out = self.llm.generate(inputs_embeds=prefix, attention_mask=torch.ones(prefix.shape[:2], device=self.device,
                                                                                  dtype=torch.long),
                                    max_new_tokens=self.reply_tokens, min_new_tokens=self.reply_tokens,
                                    do_sample=False, pad_token_id=0, eos_token_id=None)
        tokens = int(out.shape[-1])
        self.calls += 1
        seconds = self.reply_tokens / self.tokens_per_s
        rng = np.random.default_rng(self.calls)
        audio = (0.05 * rng.standard_normal(int(OUT_RATE * seconds))).astype(np.float32)
        assert self.audio_dir is not None
        path = os.path.join(self.audio_dir, os.path.basename(messages[0]["path"]))
        sf.write(path, audio, OUT_RATE)
        return {"text": f"<{tokens} random tokens>", "audio": path}


def sync(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def load_turn(path: str):
    import numpy as np
    import soundfile as sf

    speech, rate = sf.read(path, dtype="float32", always_2d=True)
    speech = speech.mean(axis=1)
    if rate != IN_RATE:
        raise SystemExit(f"gpu_check_vocalnet: {path} is at {rate} Hz; give a 16 kHz wav")
    tail = np.zeros(int(IN_RATE * 2.0), dtype=np.float32)  # > the endpointer's 0.8 s of silence
    return np.concatenate([np.zeros(IN_RATE // 2, dtype=np.float32), speech, tail])


def check_turn(model: RandomVocalNet, audio, device: str) -> tuple[str, float]:
    """The shim on the turn: endpoint, reply, 24 kHz frames with sound."""
    import numpy as np

    from duplexeval.shims.vocalnet import VocalNetServer

    server = VocalNetServer(model, workdir=tempfile.mkdtemp(prefix="vocalnet-gpu-"))
    server.start_session("lockstep", 0, None)
    server.reset()
    n = len(audio) // IN_FRAME
    listen_ms, reply_s, sound_frames, bad_frames = [], 0.0, 0, 0
    for i in range(n + 200):  # + room for the reply to play out
        frame = audio[i * IN_FRAME:(i + 1) * IN_FRAME] if i < n else np.zeros(IN_FRAME, dtype=np.float32)
        calls = model.calls
        t0 = time.perf_counter()
        out = server.step(i, frame, None)
        sync(device)
        dt = time.perf_counter() - t0
        if model.calls > calls:
            reply_s = dt
        else:
            listen_ms.append(1000 * dt)
        bad_frames += out.shape != (OUT_FRAME,)
        sound_frames += bool(np.abs(out).max() > 0)
    ok = model.calls == 1 and sound_frames > 0 and bad_frames == 0
    line = (f"{'PASS' if ok else 'FAIL'} turn: {model.calls} endpoint(s) -> reply of {model.reply_tokens} tokens in "
            f"{reply_s:.2f} s (lower bound: no speech decoder or vocoder), {sound_frames} frames of sound, "
            f"{bad_frames} frames not {OUT_FRAME} samples; listening frames {statistics.median(listen_ms):.2f} ms "
            f"median (Silero on the CPU, of an 80 ms frame)")
    return line, reply_s


def _worker(args: tuple) -> None:
    """One server of K: build its own model, wait for the others, answer the turn `reps` times."""
    tiny, device, reply_tokens, tokens_per_s, turn_path, reps, barrier, queue = args
    try:
        if not tiny:
            import torch

            torch.cuda.set_device(0)
        model = RandomVocalNet(tiny, device, reply_tokens, tokens_per_s)
        model.set_audio_dir(tempfile.mkdtemp(prefix="vocalnet-k-"))
        messages = [{"role": "user", "content": "<speech>", "path": turn_path}]
        model(messages)  # warm-up: kernels, allocator
        sync(device)
        barrier.wait(timeout=600)
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            model(messages)
            sync(device)
            times.append(time.perf_counter() - t0)
        queue.put(("ok", times))
    except Exception as exc:  # e.g. out of memory at a large K: reported, not a traceback
        queue.put(("error", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"))
        try:
            barrier.abort()
        except Exception:
            pass


def servers_per_gpu(widths: list[int], tiny: bool, device: str, reply_tokens: int, tokens_per_s: float,
                    turn_path: str, reps: int) -> int:
    """One INFO line per K; returns the widest K whose replies kept real time (0: none)."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    audio_s = reply_tokens / tokens_per_s
    keeps = 0
    for k in widths:
        barrier, queue = ctx.Barrier(k), ctx.Queue()
        procs = [ctx.Process(target=_worker, args=((tiny, device, reply_tokens, tokens_per_s, turn_path, reps,
                                                    barrier, queue),)) for _ in range(k)]
        for p in procs:
            p.start()
        results = [queue.get(timeout=900) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        errors = [r[1] for r in results if r[0] == "error"]
        if errors:
            print(f"INFO servers per GPU: K={k}: stopped: {errors[0]}", flush=True)
            break
        times = [t for _, ts in results for t in ts]
        mean = statistics.mean(times)
        rtf = mean / audio_s
        keeps = k if rtf <= 1.0 else keeps
        print(f"INFO servers per GPU: K={k}: {mean:.2f} s per reply (max {max(times):.2f}) with all {k} answering at "
              f"once; real-time factor {rtf:.2f} against {audio_s:.1f} s of reply audio (lower bound: no speech "
              f"decoder or vocoder)", flush=True)
    print(f"INFO servers per GPU at real-time factor <= 1 when all answer at once: {keeps} (widest K measured)")
    return keeps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--speech", required=True, help="a 16 kHz wav of one spoken question (the user's turn)")
    parser.add_argument("--tiny", action="store_true", help="tiny sizes on the CPU: a dry run of the script")
    parser.add_argument("--reply-tokens", type=int, default=40, help="tokens the LLM decodes per reply")
    parser.add_argument("--tokens-per-s", type=float, default=3.3,
                        help="text tokens per second of speech (English, ~2.5 words/s): the reply audio's length")
    parser.add_argument("--servers", default=None, help="K servers per GPU to measure (default 1,2,4,6; --tiny: 1,2)")
    parser.add_argument("--reps", type=int, default=3, help="replies per server at each K")
    args = parser.parse_args()
    try:
        import torch
        import transformers
    except ImportError as exc:
        print(f"SKIP gpu_check_vocalnet: cannot import {exc.name}")
        return 0
    if not args.tiny and not torch.cuda.is_available():
        print(f"SKIP gpu_check_vocalnet: no CUDA device (torch {torch.__version__})")
        return 0
    device = "cpu" if args.tiny else "cuda"
    if args.tiny:
        torch.set_num_threads(1)
    where = "tiny sizes on the CPU" if args.tiny else f"VocalNet-8B's sizes on {torch.cuda.get_device_name(0)}"
    print(f"gpu_check_vocalnet: {where}, torch {torch.__version__}, transformers {transformers.__version__}; "
          f"random weights, stand-in model behind VocalNet's call interface")
    turn = load_turn(args.speech)
    turn_path = os.path.join(tempfile.mkdtemp(prefix="vocalnet-turn-"), "turn.wav")
    import soundfile as sf

    sf.write(turn_path, turn, IN_RATE)

    t0 = time.perf_counter()
    model = RandomVocalNet(args.tiny, device, args.reply_tokens, args.tokens_per_s)
    sync(device)
    weights_gb = torch.cuda.memory_allocated() / 2**30 if device == "cuda" else 0.0
    print(f"  built in {time.perf_counter() - t0:.1f} s: LLM {sum(p.numel() for p in model.llm.parameters()) / 1e9:.2f} B "
          f"+ encoder {sum(p.numel() for p in model.encoder.parameters()) / 1e9:.2f} B parameters", flush=True)
    failures = 0
    try:
        line, _ = check_turn(model, turn, device)
    except Exception as exc:
        line = f"FAIL turn: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    failures += line.startswith("FAIL")
    print(line, flush=True)
    peak = 0.0
    if device == "cuda":
        peak = torch.cuda.max_memory_allocated() / 2**30
        print(f"INFO memory: one server holds {weights_gb:.1f} GiB of weights, {peak:.1f} GiB at its peak in a reply "
              f"(of {torch.cuda.get_device_properties(0).total_memory / 2**30:.0f} GiB)", flush=True)
    del model
    if device == "cuda":
        torch.cuda.empty_cache()
    widths = [int(k) for k in (args.servers or ("1,2" if args.tiny else "1,2,4,6")).split(",")]
    keeps = 0
    try:
        keeps = servers_per_gpu(widths, args.tiny, device, args.reply_tokens, args.tokens_per_s, turn_path, args.reps)
    except Exception as exc:
        print(f"INFO servers per GPU: stopped: {type(exc).__name__}: {exc}")
    if keeps:
        gpu = "CPU (tiny dry run)" if args.tiny else gpu_short_name(torch.cuda.get_device_name(0))
        what = ("tiny sizes: a dry run of the script, not a figure" if args.tiny else
                "the VocalNet shim with a random stand-in of VocalNet-8B's sizes (Whisper-large-v3 encoder, "
                "Llama-3.1-8B); its MTP speech decoder and vocoder not modelled, so a lower bound on the reply's compute")
        failures += not print_block("vocalnet", "gpu_check_vocalnet.py", servers=keeps, gpu=gpu,
                                    memory_gb=None if args.tiny else peak, what=what)
    else:
        print("INFO no launch.gpu_step block: no K kept real time")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
