"""Protocol v1 shim for VocalNet (half duplex, shim turn-taking). NOT BUILT OR RUN HERE.

Builds upstream's own inference object (github:SJTU-OmniAgent/VocalNet at commit
bdf01d2d4edcf4c86c193e6b5170cf65a83adadf, `omni_speech/infer/vocalnet.py`):
`VocalNetModel(model_dir, vocoder_path=cosyvoice_dir, s2s=True)` (temperature 0,
top_p 0.1, max_new_tokens 512: its defaults), `__initilize__()`, then serves it through
`duplexeval.shims.vocalnet.VocalNetServer` (VAD endpointing, reply queue, barge-in; tested
there on a stand-in with this interface). The endpointing rules are the model spec's
`endpointer` section, read from `$DUPLEXEVAL_ENDPOINTER` (duplexeval/shims/endpointer.py).

Two adapters to upstream's module, both set before `__initilize__`:
- `PROMPT_SPEECH` (the CosyVoice voice prompt) is a path relative to upstream's working
  folder; the shim sets it to the file in the installed tree (`--prompt-speech` another);
- `whisper.load_audio` (what `__call__` reads the user's turn with) runs ffmpeg, which the
  image does not have (no apt-get at build): the shim replaces it, in that module only,
  with a soundfile reader that returns the same thing for the 16 kHz mono wav files the
  shim writes (float32 samples at 16 kHz).

Weights (`--weights DIR`, else $DUPLEXEVAL_WEIGHTS, else /weights): `VocalNet-8B/` (the
hub repo VocalNet/VocalNet-8B, whose config names the speech encoder; put
openai/whisper-large-v3 where it says, by default `models/speech_encoder/whisper-large-v3`
under the weights folder, see README.md) and `CosyVoice2-0.5B/`
(FunAudioLLM/CosyVoice2-0.5B); `--model` / `--vocoder` name other places.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from duplexeval.protocol.server import run_server  # noqa: E402
from duplexeval.shims.endpointer import rules_from_env  # noqa: E402
from duplexeval.shims.vocalnet import VocalNetServer  # noqa: E402

UPSTREAM = Path(os.environ.get("VOCALNET_UPSTREAM", "/opt/upstream/vocalnet"))


def _load_audio_16k(path: str, sr: int = 16000):
    """whisper.load_audio's result (float32 mono at 16 kHz) for the 16 kHz wavs the shim writes."""
    import numpy as np
    import soundfile as sf

    audio, rate = sf.read(path, dtype="float32", always_2d=True)
    if rate != sr:
        raise ValueError(f"{path}: {rate} Hz; the shim writes {sr} Hz turns")
    return np.ascontiguousarray(audio.mean(axis=1), dtype=np.float32)


def build(args: argparse.Namespace) -> VocalNetServer:
    try:  # the spec's `endpointer` section, which the harness passes as $DUPLEXEVAL_ENDPOINTER
        rules = rules_from_env()
    except ValueError as exc:
        sys.exit(f"vocalnet: {exc}")
    root = Path(args.weights or os.environ.get("DUPLEXEVAL_WEIGHTS") or "/weights")
    model_dir = Path(args.model) if args.model else root / "VocalNet-8B"
    vocoder = Path(args.vocoder) if args.vocoder else root / "CosyVoice2-0.5B"
    for what, path in (("VocalNet model (config.json)", model_dir / "config.json"),
                       ("CosyVoice2 vocoder (cosyvoice.yaml)", vocoder / "cosyvoice.yaml")):
        if not path.is_file():
            sys.exit(f"vocalnet: {what} not found at {path} (images/vocalnet/README.md says how to lay out the weights)")
    os.chdir(root)  # the model's config names its speech encoder by a path relative to here
    from omni_speech.infer import vocalnet as upstream

    upstream.PROMPT_SPEECH = str(Path(args.prompt_speech) if args.prompt_speech
                                 else UPSTREAM / "omni_speech" / "infer" / "cn_prompt.wav")
    upstream.whisper.load_audio = _load_audio_16k
    model = upstream.VocalNetModel(str(model_dir), vocoder_path=str(vocoder), s2s=True)
    model.__initilize__()
    return VocalNetServer(model, barge_in=not args.no_barge_in, endpoint_rules=rules)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--weights", help="folder with VocalNet-8B/ and CosyVoice2-0.5B/ (default $DUPLEXEVAL_WEIGHTS, else /weights)")
    parser.add_argument("--model", help="the VocalNet model folder")
    parser.add_argument("--vocoder", help="the CosyVoice2-0.5B folder")
    parser.add_argument("--prompt-speech", help="CosyVoice voice prompt wav (default upstream's cn_prompt.wav)")
    parser.add_argument("--no-barge-in", action="store_true", help="keep playing a reply when the user starts a new turn")


if __name__ == "__main__":
    run_server(build, description=__doc__, add_arguments=add_arguments)
