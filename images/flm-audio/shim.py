"""Protocol v1 shim for FLM-Audio (CofeAI), on its own code. NOT BUILT OR RUN HERE.

Written against github:cofe-ai/flm-audio at commit 41d768c9f61d954907c1c518709f2d9239de46a8
(2025-12-07, "update server requirements"), read with `git show` in a mirror of it:

- `flmaudio/server.py` (`main`, `ServerState`): `loaders.get_mimi(path, device)`,
  `FLMAudioForCausalLM.from_pretrained(path, device_map=device, torch_dtype=torch.bfloat16,
  low_cpu_mem_usage=True)`, `AutoTokenizer.from_pretrained(path)`, `LMGen(lm)`;
  `streaming_forever(1)` once, `reset_streaming()` per connection, `seed_all(42)` once at
  start; the frame loop `mimi.encode` -> `lm_gen.step(codes)` -> `mimi.decode(tokens[:, 1:])`
  with text ids 0 and 3 skipped and `mm_token_info.text_wait_token_id` ending a text run;
- `flmaudio/models/streaming_flmaudio.py` (`LMGen`, `_LMGenState`): a token cache
  `[B, 17, max_delay + 20]` (text, the model's 8 codebooks, the user's 8), delays
  `[0, 0, 1 x 7, 0, 1 x 7]`, an HF `DynamicCache` as KV cache, repetition-penalty windows
  of past tokens, `step` returning None while `offset <= max_delay`; `_init_streaming_state`
  wraps `forward` and `forward_audio` in `torch.compile`;
- `flmaudio/models/modeling_flmaudio.py` line 944: `forward_audio(self, ..., step,
  kv_cache)` forwards four arguments to `DepthGPT.forward`, which takes two, and its caller
  passes two: the first step raises a TypeError. `images/flm-audio/forward_audio.patch`
  (ours) fixes it at image build.

What this file adds to `duplexeval.shims.moshi_family`:

- fork: the token cache, offset, penalty windows and both Mimis go through the adapter's
  in-place restore; the `DynamicCache` (which grows by concatenation, so cannot be
  restored in place; no CUDA graph holds it) is deep-copied in `extra_state` and a copy
  is put back on restore;
- teacher forcing: upstream has no forcing API. The forced codes (from a second Mimi)
  are written into the delayed token cache after each step (and into the audio penalty
  window), and the step's output is patched where it was read from the column just
  overwritten, so forced frame t comes out at step t+1 as with Moshi, and the next step
  reads them as the model's own audio. Verified token by token on upstream's code at the
  pinned commit with random tiny weights (bench/flm_audio_tiny_check.py), the level at
  which moshi-tiny verifies Moshi's; not with the real checkpoint. The model's text
  stream is not forced (it keeps sampling its monologue), as with Moshi.
  `--no-teacher-forcing` skips the second Mimi;
- text events: FLM's tokenizer is an HF tokenizer whose pieces may split a UTF-8
  character (its Chinese); text is decoded incrementally over the current run of tokens
  and emitted only once it decodes cleanly;
- torch.compile is off by default (TORCHDYNAMO_DISABLE=1): upstream compiles, but Triton
  needs a C compiler at run time, which the image does not have; `--compile` turns it on
  in an image that has one. Outputs agree up to floating-point rounding.

Weights: the files of the hub repo CofeAI/FLM-Audio (config, sharded safetensors,
tokenizer, and the Mimi file tokenizer-e351c8d8-checkpoint125.safetensors) in one folder,
`--weights DIR`, else $DUPLEXEVAL_WEIGHTS, else /weights. Its spec does not pin them yet
(specs/models/flm-audio.yaml: no revision or file list could be read here).
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
from pathlib import Path
from typing import Any

# Before torch/transformers/huggingface_hub are imported: they read these at import time.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
if "--compile" not in sys.argv:
    os.environ.setdefault("TORCHDYNAMO_DISABLE", "1")

import torch  # noqa: E402

from duplexeval.protocol.server import run_server  # noqa: E402
from duplexeval.shims.moshi_family import FamilyModels, MoshiFamilyServer  # noqa: E402

HF_REPO = "CofeAI/FLM-Audio"
MIMI_NAME = "tokenizer-e351c8d8-checkpoint125.safetensors"  # flmaudio/models/loaders.py
TEXT_SKIP_IDS = (0, 3)  # server.py: `if text_token not in (0, 3)`


def weights_folder(arg: str | None) -> Path:
    for candidate in (arg, os.environ.get("DUPLEXEVAL_WEIGHTS"), "/weights"):
        if candidate and Path(candidate).is_dir():
            folder = Path(candidate)
            for name in ("config.json", MIMI_NAME):
                if not (folder / name).is_file():
                    raise FileNotFoundError(f"weights folder {folder}: no file {name!r} "
                                            f"(FLM-Audio needs the files of {HF_REPO} there)")
            return folder
    raise FileNotFoundError(f"no weights folder: pass --weights DIR or set DUPLEXEVAL_WEIGHTS "
                            f"(the files of {HF_REPO})")


class FLMAudioShim(MoshiFamilyServer):
    model_name = "flm-audio"

    def __init__(self, *, weights: str | None = None, device: str | None = None, teacher_forcing: bool = True,
                 warmup_frames: int = 4) -> None:
        self.weights_arg = weights
        self.device_name = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.teacher_forcing = teacher_forcing
        self._text_ids: list[int] = []
        self._text_sent = ""
        super().__init__(warmup_frames=warmup_frames)

    # ---- hooks of duplexeval.shims.moshi_family ---------------------------------------
    def load_models(self) -> FamilyModels:
        from flmaudio.models import FLMAudioForCausalLM, LMGen, loaders  # upstream, on PYTHONPATH in the image
        from transformers import AutoTokenizer

        folder = weights_folder(self.weights_arg)
        dev = self.device_name
        mimi = loaders.get_mimi(str(folder), dev)  # reads folder/MIMI_NAME when it exists (no hub)
        forced = loaders.get_mimi(str(folder), dev) if self.teacher_forcing else None
        dtype = torch.bfloat16 if dev.startswith("cuda") else torch.float32
        lm = FLMAudioForCausalLM.from_pretrained(str(folder), device_map=dev, torch_dtype=dtype,
                                                 low_cpu_mem_usage=True, local_files_only=True)
        lm.eval()
        tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        return FamilyModels(mimi=mimi, lm_gen=LMGen(lm), forced_mimi=forced, text_tokenizer=tokenizer, device=dev)

    def own_delays(self) -> list[int]:
        return list(self.lm_gen.delays[1:1 + self.lm_gen.lm_model.config.aud_channel])

    def streaming_roots(self) -> dict[str, Any]:
        # lm_gen.lm_model is a transformers model, not a streaming module: its state is the
        # DynamicCache inside lm_gen's state (extra_state below).
        roots = {"lm_gen": self.lm_gen, "mimi": self.mimi}
        if self.forced_mimi is not None:
            roots["forced_mimi"] = self.forced_mimi
        return roots

    def lm_step(self, user_codes: torch.Tensor, forced_tokens: torch.Tensor | None) -> torch.Tensor | None:
        tokens = self.lm_gen.step(user_codes)
        if forced_tokens is not None:
            self._force(tokens, forced_tokens)
        return tokens

    def _force(self, tokens: torch.Tensor | None, forced_tokens: torch.Tensor) -> None:
        """Write forced codes where `step` just wrote the sampled ones (see the module docstring).

        `step` leaves `offset` on the column it filled with the new text token and the 8
        own-audio tokens (codebook 0 of this frame, 1..7 of the previous one: the same
        layout as `forced_tokens`); the next step reads that column as its input. Its
        output gathered column `offset - max_delay + delay`: for the codebooks whose delay
        is max_delay, that is the column overwritten here, so the output is patched too.
        """
        gen = self.lm_gen
        state = gen._streaming_state
        n = forced_tokens.shape[1]
        column = state.offset % state.cache.shape[2]
        state.cache[:, 1:1 + n, column] = forced_tokens[:, :, 0]
        if state.audio_speak_tokens_cache:
            state.audio_speak_tokens_cache[-1] = forced_tokens[:, :, 0].clone()
        if tokens is not None:
            for k in range(1, 1 + n):
                if gen.delays[k] == gen.max_delay:
                    tokens[:, k, 0] = forced_tokens[:, k - 1, 0]

    def extra_state(self) -> Any:
        state = self.lm_gen._streaming_state
        return {"past_key_values": copy.deepcopy(state.past_key_values),
                "text": (list(self._text_ids), self._text_sent)}

    def load_extra_state(self, saved: Any) -> None:
        self.lm_gen._streaming_state.past_key_values = copy.deepcopy(saved["past_key_values"])
        ids, sent = saved["text"]
        self._text_ids, self._text_sent = list(ids), sent

    def reset(self) -> None:
        self._text_ids, self._text_sent = [], ""
        super().reset()

    def text_piece(self, token_id: int) -> str | None:
        if token_id in TEXT_SKIP_IDS:
            return None
        if token_id == self.lm_gen.lm_model.config.mm_token_info.text_wait_token_id:
            self._text_ids, self._text_sent = [], ""  # server.py ends its text streamer here
            return None
        self._text_ids.append(token_id)
        text = self.text_tokenizer.decode(self._text_ids, skip_special_tokens=True)
        if text.endswith("\ufffd"):
            return None  # a character split over tokens: wait for the rest of it
        new, self._text_sent = text[len(self._text_sent):], text
        return new or None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--weights", help="folder with the checkpoint files (default $DUPLEXEVAL_WEIGHTS, /weights)")
    parser.add_argument("--device", help="torch device (default: cuda when available)")
    parser.add_argument("--no-teacher-forcing", dest="teacher_forcing", action="store_false",
                        help="no second Mimi, no capability teacher_forcing")
    parser.add_argument("--compile", action="store_true",
                        help="keep upstream's torch.compile (needs a C compiler for Triton in the image)")


def make_server(args: argparse.Namespace) -> FLMAudioShim:
    server = FLMAudioShim(weights=args.weights, device=args.device, teacher_forcing=args.teacher_forcing)
    print(f"{server.model_name}: loaded on {server.device}, capabilities {list(server.capabilities)}",
          file=sys.stderr, flush=True)
    return server


def main() -> None:
    run_server(make_server, description=__doc__.splitlines()[0], add_arguments=add_arguments)


if __name__ == "__main__":
    main()
