"""Protocol v1 shim for Voila (Voila-autonomous-preview, full duplex). NOT BUILT OR RUN HERE.

Loads what upstream's `infer.py` loads (github:maitrix-org/Voila at commit
6ba63bf6d20cac0d88b78bb2158ddcb9f94aec26: `load_model`, `eval_model`), for the
"autonomous" model type: `VoilaAutonomousModel.from_pretrained(dir, torch_dtype=bfloat16,
use_cache=True)` on CUDA, its `AutoTokenizer`, `VoilaTokenizer(model_path=..., device="cuda")`
(Encodec at 16 kHz), the token ids `eval_model` looks up (`<|0|>`, `<au_token>`,
`<|VOILA|>`, eos, pad) and the prompt `voila_input_format` builds for task
`chat_aiao_auto` (here with an empty user recording: the shim feeds the user's audio
itself, frame by frame). The speaker embedding (`ref_embs`) is one of the precomputed
voices in upstream's `examples/character_ref_emb_demo.pkl` (`--voice`, as its
gradio_demo.py offers them). The generation loop is the shim's
(`duplexeval.shims.voila.VoilaServer`, tested there on stand-ins with these signatures).

Differences from upstream, each for a reason: `attn_implementation="sdpa"` instead of
`use_flash_attention_2=True` (flash-attn needs a compiler at image build; `--flash-attn`
asks for it where installed); no `max_new_tokens` stop (a scene is as long as it is).

Weights (`--weights DIR`, else $DUPLEXEVAL_WEIGHTS, else /weights): `Voila-autonomous-preview/`
and `Voila-Tokenizer/` (snapshots of maitrix-org/Voila-autonomous-preview and
maitrix-org/Voila-Tokenizer) side by side; `--model` / `--tokenizer` name other places.
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

from duplexeval.protocol.server import run_server  # noqa: E402
from duplexeval.shims.codec_loop import IncrementalCodec  # noqa: E402
from duplexeval.shims.voila import SEG_LEN, VoilaServer, VoilaTokens  # noqa: E402

UPSTREAM = Path(os.environ.get("VOILA_UPSTREAM", "/opt/upstream/voila"))
VOICES = UPSTREAM / "examples" / "character_ref_emb_demo.pkl"


def build(args: argparse.Namespace) -> VoilaServer:
    root = Path(args.weights or os.environ.get("DUPLEXEVAL_WEIGHTS") or "/weights")
    model_dir = Path(args.model) if args.model else root / "Voila-autonomous-preview"
    codec_dir = Path(args.tokenizer) if args.tokenizer else root / "Voila-Tokenizer"
    for what, path in (("model", model_dir), ("audio tokenizer", codec_dir)):
        if not (path / "config.json").is_file():
            sys.exit(f"voila: no {what} at {path} (config.json missing; images/voila/README.md)")
    import torch
    from transformers import AutoTokenizer

    from model import VoilaAutonomousModel
    from tokenize_func import AUDIO_TOKEN_FORMAT, DEFAULT_ASSISTANT_TOKEN, DEFAULT_AUDIO_TOKEN, voila_input_format
    from voila_tokenizer import VoilaTokenizer

    model = VoilaAutonomousModel.from_pretrained(
        str(model_dir), torch_dtype=torch.bfloat16, use_cache=True, local_files_only=True,
        attn_implementation="flash_attention_2" if args.flash_attn else "sdpa").cuda().eval()
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    codec = VoilaTokenizer(model_path=str(codec_dir), device="cuda")
    cfg = model.config
    tokens = VoilaTokens(
        min_audio_token_id=tokenizer.convert_tokens_to_ids(AUDIO_TOKEN_FORMAT.format(0)),
        audio_token_id=tokenizer.convert_tokens_to_ids(DEFAULT_AUDIO_TOKEN),
        assistant_token_id=tokenizer.convert_tokens_to_ids(DEFAULT_ASSISTANT_TOKEN),
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
        num_codebooks=cfg.num_codebooks, codebook_size=cfg.codebook_size)
    data_cfg = {"input_type": "autonomous", "task_type": "chat_aiao_auto", "num_codebooks": cfg.num_codebooks,
                "codebook_size": cfg.codebook_size}

    def initial_input_ids(instruction: str):
        history = {"instruction": instruction, "conversations": [
            {"from": "user", "audio": {"array": np.zeros(SEG_LEN, dtype=np.float32), "sr": 16000}},
            {"from": "assistant"}]}
        input_ids, _, _, _ = voila_input_format(history, tokenizer, codec, data_cfg)
        channels = [torch.as_tensor([ids]).transpose(1, 2).cuda() for ids in input_ids]
        return torch.cat(channels, dim=2)  # [1, seq, 2 * num_codebooks], as infer.py builds it

    voices = pickle.load(open(VOICES, "rb"))
    voice = args.voice or next(iter(voices))
    if voice not in voices:
        sys.exit(f"voila: no voice {voice!r} in {VOICES}; choose one of {', '.join(list(voices)[:20])}")
    ref_embs = torch.tensor(voices[voice], dtype=torch.float32, device="cuda")
    ref_embs_mask = torch.tensor([1], device="cuda")
    incremental = IncrementalCodec(lambda wav: codec.encode(wav, sr=16000),
                                   lambda codes: codec.decode(torch.as_tensor(codes, device="cuda")),
                                   SEG_LEN, encode_context=args.codec_context, decode_context=args.codec_context)
    return VoilaServer(model, incremental, tokens, initial_input_ids, ref_embs=ref_embs, ref_embs_mask=ref_embs_mask,
                       decode_text=lambda ids: tokenizer.decode(ids), instruction=args.instruction)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--weights", help="folder with Voila-autonomous-preview/ and Voila-Tokenizer/")
    parser.add_argument("--model", help="the Voila-autonomous-preview folder")
    parser.add_argument("--tokenizer", help="the Voila-Tokenizer folder")
    parser.add_argument("--voice", help=f"a voice of {VOICES.name} (default: its first)")
    parser.add_argument("--instruction", default="", help="system instruction when hello has no prompt")
    parser.add_argument("--codec-context", type=int, default=25, help="frames of context for the codec windows (1 s)")
    parser.add_argument("--flash-attn", action="store_true", help="upstream's flash attention (needs flash-attn)")


if __name__ == "__main__":
    run_server(build, description=__doc__, add_arguments=add_arguments)
