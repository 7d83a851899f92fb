"""Protocol v1 shim for PersonaPlex (NVIDIA), on its own fork of moshi. NOT BUILT OR RUN HERE.

Written against github:NVIDIA/personaplex at commit
3428dfd95309a7f3c84fd93259ded0f810d1ff91 (2026-03-02; the last change under moshi/ is
c64f62a6, 2026-01-23), read with `git show` in a mirror of that repository:

- `moshi/moshi/server.py` (`main`, `ServerState`): two Mimis from the same file
  (`loaders.get_mimi`), `loaders.get_moshi_lm`, a sentencepiece tokenizer, and
  `LMGen(lm, audio_silence_frame_cnt=int(0.5 * frame_rate), sample_rate, device,
  frame_rate, save_voice_prompt_embeddings=False)`; per connection `reset_streaming()` on
  all three, `seed_all(seed)`, then `lm_gen.step_system_prompts(mimi)` (voice prompt,
  0.5 s silence, text prompt, 0.5 s silence) and `mimi.reset_streaming()`; the frame loop
  decodes `tokens[:, 1:9]` (its LM predicts 16 audio codebooks, `dep_q = 16`: its own 8
  and the user's 8) and skips text ids 0 and 3; `wrap_with_system_tags` (copied below:
  importing `moshi.server` would run its `main()`, which the module calls at import);
- `moshi/moshi/models/lm.py` (`LMGen.step(input_tokens, moshi_tokens=, text_token=)`,
  `prepare_step_input`: `moshi_tokens` are the assistant's 8 codes of *this* frame, laid
  into the delayed cache by LMGen itself, marked `provided`, and kept instead of the
  sampled ones; `load_voice_prompt_embeddings(path.pt)`; `step_system_prompts`; the
  `_LMGenState` cache/provided/offset and its `CUDAGraphed` members);
- `moshi/moshi/modules/streaming.py` (this fork's LMGen does not detach its LM: the LM's
  streaming states are inside `lm_gen.get_streaming_state()`) and
  `moshi/moshi/modules/transformer.py` (`RingKVCache`: cache, end_offset, capacity).

Everything shared with Moshi (frame loop, delay, forcing with a second Mimi, fork in
place, seeding, text events) is `duplexeval.shims.moshi_family`; this file fills its hooks:

- teacher forcing is PersonaPlex's own: `step(user_codes, moshi_tokens=F_t)` with the
  undelayed codes of frame t (so `own_delays` is all zeros: LMGen applies the delays);
  forced codes of frame t come out verbatim at step t+1, as with Moshi;
- prompt (capability `prompt`): `hello.prompt` is the text system prompt, wrapped in
  `<system>` tags as the upstream server does; the voice prompt is fixed per server
  (`--voice`, default NATF2, the upstream README's assistant example), read from the
  repo's `voices.tgz` in the weights folder. A hello without a prompt runs no text prompt
  (upstream would iterate over None). The system-prompt state of the last (seed, prompt)
  is kept as a fork snapshot, so a reset or a new hello with the same pair restores it
  instead of stepping the prompts again (same bytes: the RNG is part of the snapshot).

Differences from upstream, each for a reason: float32 on CPU (upstream always loads bf16;
CPU bf16 matmuls are slow or missing), and the voice embeddings cast to the LM's dtype
(they feed its transformer directly). Checked on CPU with random tiny weights, on the
upstream code at the pinned commit: bench/personaplex_tiny_check.py.

Weights (`specs/models/personaplex.yaml`, gated on the hub: accept the licence, export
HF_TOKEN, `duplexeval weights fetch personaplex`): model.safetensors,
tokenizer-e351c8d8-checkpoint125.safetensors, tokenizer_spm_32k_3.model and voices.tgz,
read from `--weights DIR`, else $DUPLEXEVAL_WEIGHTS, else /weights (the read-only mount).
"""

from __future__ import annotations

import argparse
import os
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

# Before torch/moshi/huggingface_hub are imported: they read these at import time.
os.environ["HF_HUB_OFFLINE"] = "1"

import torch  # noqa: E402

from duplexeval.protocol.server import run_server  # noqa: E402
from duplexeval.shims.moshi_family import FamilyModels, MoshiFamilyServer, disable_torch_compile_on_cpu  # noqa: E402

HF_REPO = "nvidia/personaplex-7b-v1"
MOSHI_NAME = "model.safetensors"  # personaplex moshi/moshi/models/loaders.py
MIMI_NAME = "tokenizer-e351c8d8-checkpoint125.safetensors"
TEXT_TOKENIZER_NAME = "tokenizer_spm_32k_3.model"
VOICES_NAME = "voices.tgz"
VOICES = [f"NAT{g}{i}" for g in "FM" for i in range(4)] + [f"VAR{g}{i}" for g in "FM" for i in range(5)]
TEXT_SKIP_IDS = (0, 3)  # server.py: `if text_token not in (0, 3)`


def wrap_with_system_tags(text: str) -> str:
    """server.py's `wrap_with_system_tags`: the model was trained on prompts in <system> tags."""
    cleaned = text.strip()
    if cleaned.startswith("<system>") and cleaned.endswith("<system>"):
        return cleaned
    return f"<system> {cleaned} <system>"


def weights_folder(arg: str | None) -> Path:
    for candidate in (arg, os.environ.get("DUPLEXEVAL_WEIGHTS"), "/weights"):
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    raise FileNotFoundError(f"no weights folder: pass --weights DIR or set DUPLEXEVAL_WEIGHTS "
                            f"(the files of {HF_REPO}; `duplexeval weights fetch personaplex`)")


def weight_file(folder: Path, name: str) -> Path:
    path = folder / name
    if not path.is_file():
        raise FileNotFoundError(f"weights folder {folder}: no file {name!r} (PersonaPlex needs it; "
                                f"`duplexeval weights fetch personaplex` places the files of {HF_REPO} there)")
    return path


def extract_voice(voices_tgz: Path, voice: str, dest: Path) -> Path:
    """voices/<voice>.pt from the repo's voices.tgz into `dest` (the weights mount is read-only)."""
    wanted = f"voices/{voice}.pt"
    with tarfile.open(voices_tgz, "r:gz") as tar:
        for member in tar.getmembers():
            if member.isfile() and member.name.lstrip("./") == wanted:
                out = dest / f"{voice}.pt"
                with tar.extractfile(member) as src:  # type: ignore[union-attr]
                    out.write_bytes(src.read())
                return out
    raise FileNotFoundError(f"{voices_tgz}: no {wanted} (voices: {', '.join(VOICES)})")


class PersonaPlexShim(MoshiFamilyServer):
    model_name = "personaplex"

    def __init__(self, *, weights: str | None = None, voice: str = "NATF2", device: str | None = None,
                 warmup_frames: int = 4) -> None:
        self.weights_arg = weights
        self.voice = voice
        self.device_name = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self._prompt_key: tuple[Any, ...] | None = None
        self._prompt_state: dict[str, Any] | None = None
        self._voice_dir = tempfile.TemporaryDirectory(prefix="personaplex-voice-")
        super().__init__(warmup_frames=warmup_frames)

    # ---- hooks of duplexeval.shims.moshi_family ---------------------------------------
    def load_models(self) -> FamilyModels:
        disable_torch_compile_on_cpu(self.device_name)
        import sentencepiece
        from moshi.models import LMGen, loaders  # PersonaPlex's fork, on PYTHONPATH in the image

        folder = weights_folder(self.weights_arg)
        dev = torch.device(self.device_name)
        mimi_path = weight_file(folder, MIMI_NAME)
        mimi = loaders.get_mimi(mimi_path, dev)
        forced = loaders.get_mimi(mimi_path, dev)  # server.py's other_mimi: same file, own state
        tokenizer = sentencepiece.SentencePieceProcessor(str(weight_file(folder, TEXT_TOKENIZER_NAME)))  # type: ignore[call-arg]
        # bf16 as upstream on a GPU; float32 on CPU (bf16 matmuls there are slow or missing).
        dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
        lm = loaders.get_moshi_lm(weight_file(folder, MOSHI_NAME), device=dev, dtype=dtype)
        lm.eval()
        lm_gen = LMGen(lm, audio_silence_frame_cnt=int(0.5 * mimi.frame_rate), sample_rate=mimi.sample_rate,
                       device=dev, frame_rate=mimi.frame_rate, save_voice_prompt_embeddings=False)
        voice = extract_voice(weight_file(folder, VOICES_NAME), self.voice, Path(self._voice_dir.name))
        lm_gen.load_voice_prompt_embeddings(str(voice))
        # The embeddings feed the LM's transformer directly: same dtype as its weights.
        lm_gen.voice_prompt_embeddings = lm_gen.voice_prompt_embeddings.to(dtype)
        return FamilyModels(mimi=mimi, lm_gen=lm_gen, forced_mimi=forced, text_tokenizer=tokenizer, device=dev)

    def extra_capabilities(self) -> tuple[str, ...]:
        return ("prompt",)

    def own_delays(self) -> list[int]:
        return [0] * 8  # moshi_tokens are this frame's codes; LMGen.prepare_step_input delays them

    def lm_step(self, user_codes: torch.Tensor, forced_tokens: torch.Tensor | None) -> torch.Tensor | None:
        return self.lm_gen.step(input_tokens=user_codes, moshi_tokens=forced_tokens)

    def decode(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.mimi.decode(tokens[:, 1:9])  # the other 8 predicted codebooks are the user's

    def streaming_roots(self) -> dict[str, Any]:
        # The LM streams inside lm_gen here (not detached as in kyutai's moshi): saving it
        # separately would save every KV cache twice.
        return {"lm_gen": self.lm_gen, "mimi": self.mimi, "forced_mimi": self.forced_mimi}

    def text_piece(self, token_id: int) -> str | None:
        if token_id in TEXT_SKIP_IDS:
            return None
        return self.text_tokenizer.id_to_piece(token_id).replace("\u2581", " ")

    def begin_session(self, prompt: str | None) -> None:
        key = (self._seed, prompt, self.voice)
        if key == self._prompt_key and self._prompt_state is not None:
            self.restore(self._prompt_state)
            return
        text = (prompt or "").strip()
        self.lm_gen.text_prompt_tokens = self.text_tokenizer.encode(wrap_with_system_tags(text)) if text else []
        self.lm_gen.step_system_prompts(self.mimi)
        self.mimi.reset_streaming()  # server.py: the voice prompt went through the user Mimi
        self._prompt_key, self._prompt_state = key, self.snapshot()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--weights", help="folder with the checkpoint files (default $DUPLEXEVAL_WEIGHTS, /weights)")
    parser.add_argument("--voice", default="NATF2", choices=VOICES, help="voice prompt from voices.tgz (default NATF2)")
    parser.add_argument("--device", help="torch device (default: cuda when available)")


def make_server(args: argparse.Namespace) -> PersonaPlexShim:
    server = PersonaPlexShim(weights=args.weights, voice=args.voice, device=args.device)
    print(f"{server.model_name}: loaded on {server.device}, voice {server.voice}, "
          f"capabilities {list(server.capabilities)}", file=sys.stderr, flush=True)
    return server


def main() -> None:
    run_server(make_server, description=__doc__.splitlines()[0], add_arguments=add_arguments)


if __name__ == "__main__":
    main()
