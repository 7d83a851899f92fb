"""Protocol v1 shim for Moshi (Kyutai). UNTESTED: written without a GPU or Docker engine.

Drives Mimi + LMGen in process so lockstep holds: one 80 ms frame in, one out
(images/moshi/README.md). Everything protocol-related is in DuplexServer; this file is
only model code. Verify on a GPU with `duplexeval conformance moshi` before any run.
"""

from __future__ import annotations

import copy

import numpy as np
import torch

from duplexeval.protocol.server import DuplexServer, run_server

HF_REPO = "kyutai/moshiko-pytorch-bf16"


class MoshiShim(DuplexServer):
    model_name = "moshi"
    in_rate = 24000
    out_rate = 24000
    frame_ms = 80.0
    capabilities = ("teacher_forcing", "fork", "text_events")

    def __init__(self, device: str = "cuda") -> None:
        super().__init__()
        from moshi.models import LMGen, loaders  # type: ignore[import-not-found]

        info = loaders.CheckpointInfo.from_hf_repo(HF_REPO)
        self.device = device
        self.mimi = info.get_mimi(device=device)
        self.mimi.set_num_codebooks(8)
        self.lm = info.get_moshi(device=device)
        self.text_tokenizer = info.get_text_tokenizer()
        self._LMGen = LMGen
        self.reset()

    def reset(self) -> None:
        self.lm_gen = self._LMGen(self.lm, temp=0.8, temp_text=0.7)
        self.mimi.reset_streaming()
        self.mimi.streaming_forever(1)
        self.lm_gen.streaming_forever(1)

    def start_session(self, clock: str, seed: int, prompt: str | None) -> None:
        torch.manual_seed(seed)  # sampling is seeded per session: lockstep repeats

    @torch.no_grad()
    def step(self, frame_idx: int, input_audio: np.ndarray, forced: np.ndarray | None) -> np.ndarray:
        pcm = torch.from_numpy(input_audio).to(self.device)[None, None]
        codes = self.mimi.encode(pcm)  # (1, 8, 1)
        tokens = self.lm_gen.step(codes)
        if forced is not None:
            # TODO(verify on GPU): force the model's own audio stream to the forced audio's
            # codes. LMGen keeps its own generated tokens in its cache; forcing needs the
            # depformer output replaced before it enters the cache (moshi >= 0.2 exposes
            # no public hook: patch LMGen.step or the state's cache in place).
            return forced
        if tokens is None:  # the first frames fill the acoustic delay
            return np.zeros(self.out_frame_samples, dtype=np.float32)
        text_token = int(tokens[0, 0, 0])
        if text_token not in (0, 3):  # padding / end-of-padding ids of moshiko
            self.emit({"type": "text", "frame_idx": frame_idx, "text": self.text_tokenizer.id_to_piece(text_token)})
        out = self.mimi.decode(tokens[:, 1:])
        return out[0, 0].float().cpu().numpy()

    def snapshot(self) -> object:
        # TODO(verify on GPU): deep copies of the streaming states (KV caches live on GPU).
        return copy.deepcopy((self.lm_gen._streaming_state, self.mimi._streaming_state))

    def restore(self, state: object) -> None:
        self.lm_gen._streaming_state, self.mimi._streaming_state = copy.deepcopy(state)


def main() -> None:
    run_server(lambda args: MoshiShim(), description=__doc__)


if __name__ == "__main__":
    main()
