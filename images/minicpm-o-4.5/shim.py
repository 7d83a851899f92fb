"""Protocol v1 shim for MiniCPM-o 4.5 (duplex mode). NOT BUILT OR RUN HERE (no GPU, no weights).

Loads the model the way upstream's duplex examples do, read from the model code that
the hub snapshot ships (MiniCPMO45/modeling_minicpmo.py as mirrored in
github:OpenBMB/minicpm-o-4_5-pytorch-simple-demo at commit
c7e16605c3ae9623a0caee5845bd0183b1d6d5b3, class `MiniCPMODuplex`, and the hub's model
card): `AutoModel.from_pretrained(path, trust_remote_code=True,
attn_implementation="sdpa", torch_dtype=torch.bfloat16, init_vision=False,
init_audio=True, init_tts=True)`, `.eval().cuda()`, `init_tts()`, `as_duplex()`. The
frame loop, buffering, PCM check and events are `duplexeval.shims.minicpm_o.MiniCPMOServer`
(tested there on a stand-in core with these call signatures).

The voice (`prompt_wav_path`, also given as the 16 kHz `ref_audio`): `--voice WAV`, by
default `assets/HT_ref_audio.wav` of the weights folder (the file public duplex scripts
load from the snapshot; the shim refuses to start when it is missing, since upstream
then produces no audio at all). Weights: `--weights DIR`, else $DUPLEXEVAL_WEIGHTS,
else /weights (the runner's read-only mount of a hub snapshot of openbmb/MiniCPM-o-4_5).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before transformers is imported

from duplexeval.protocol.server import run_server  # noqa: E402
from duplexeval.shims.minicpm_o import DEFAULT_SYSTEM_PROMPT, STUCK_LISTEN_S, MiniCPMOServer  # noqa: E402

DEFAULT_VOICE = "assets/HT_ref_audio.wav"


def weights_dir(args: argparse.Namespace) -> Path:
    return Path(args.weights or os.environ.get("DUPLEXEVAL_WEIGHTS") or "/weights")


def load_duplex(folder: Path, attn: str):
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(folder), trust_remote_code=True, attn_implementation=attn,
                                      torch_dtype=torch.bfloat16, init_vision=False, init_audio=True, init_tts=True,
                                      local_files_only=True)
    model.eval().cuda()
    model.init_tts()
    return model.as_duplex()


def build(args: argparse.Namespace) -> MiniCPMOServer:
    folder = weights_dir(args)
    if not (folder / "config.json").is_file():
        sys.exit(f"minicpm-o-4.5: no model at {folder} (config.json missing): place a snapshot of "
                 "openbmb/MiniCPM-o-4_5 there or pass --weights (images/minicpm-o-4.5/README.md)")
    voice = Path(args.voice) if args.voice else folder / DEFAULT_VOICE
    if not voice.is_file():
        sys.exit(f"minicpm-o-4.5: no voice file at {voice}: pass --voice WAV (without one MiniCPM-o speaks no audio)")
    import librosa

    ref_audio, _ = librosa.load(str(voice), sr=16000, mono=True)
    duplex = load_duplex(folder, args.attn)
    return MiniCPMOServer(duplex, prompt_wav_path=str(voice), ref_audio=ref_audio,
                          system_prompt=args.system_prompt, decode_mode=args.decode_mode,
                          max_new_speak_tokens_per_chunk=args.max_new_speak_tokens, stuck_listen_s=args.stuck_listen_s)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--weights", help="hub snapshot folder (default $DUPLEXEVAL_WEIGHTS, else /weights)")
    parser.add_argument("--voice", help=f"voice wav (default <weights>/{DEFAULT_VOICE})")
    parser.add_argument("--system-prompt", default=DEFAULT_SYSTEM_PROMPT, help="used when hello has no prompt")
    parser.add_argument("--decode-mode", default="sampling", choices=["sampling", "greedy"])
    parser.add_argument("--max-new-speak-tokens", type=int, default=20)
    parser.add_argument("--stuck-listen-s", type=float, default=STUCK_LISTEN_S)
    parser.add_argument("--attn", default="sdpa", choices=["sdpa", "flash_attention_2"])


if __name__ == "__main__":
    run_server(build, description=__doc__, add_arguments=add_arguments)
