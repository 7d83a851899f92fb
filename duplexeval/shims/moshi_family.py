"""The Moshi family behind protocol v1: what the Moshi, PersonaPlex and FLM-Audio shims share.

Written against kyutai's `moshi` 0.2.13 (PyPI), read from its source: `moshi/server.py`
(the frame loop: `mimi.encode` -> `LMGen.step` -> `mimi.decode`, padding text ids
skipped, one `reset_streaming()` per connection), `moshi/models/lm.py` (`LMGen._step`:
the delayed token cache, `depformer_replace_tokens`, `step` returning None while the
acoustic delay fills), `moshi/modules/streaming.py` (`get_streaming_state`,
`reset_streaming`, `streaming_forever`; `LMGen` detaches its LM, so the LM's state needs
its own call) and `moshi/modules/transformer.py` (`RingKVCache`: the KV caches are
preallocated buffers that CUDA graphs capture by address).

Why in process, not through Moshi's own server: that server speaks Ogg-Opus in wall-clock
time, which cannot give lockstep (one output frame per input frame in virtual time),
teacher forcing or fork. Driving Mimi and the LM ourselves gives all three.

The frame loop (24 kHz, 1920-sample / 80 ms frames, one output frame per input frame):

1. the user's frame -> the **user Mimi**'s encoder -> `codes[1, 8, 1]`;
2. teacher forcing (protocol kind 3 frames): the forced assistant audio -> a **second
   Mimi**'s encoder (its streaming state must stay apart from the user's, or the two
   signals would be convolved into one history) -> `F_t[1, 8, 1]`; the LM step gets
   `depformer_replace_tokens` laid out with the model's delays: codebook k carries
   `F_{t - d_k}` (Moshi: codebook 0 at t, the other 7 at t-1). `LMGen._step` writes the
   replacement at cache position t+1, so the forced codes of frame t come out verbatim
   at step t+1 (tests/test_moshi_shim.py asserts it token by token). The model's own
   text stream is not forced: it keeps sampling its inner monologue. At the end of
   forcing, the last forced frame's codebook 0 is forced and codebooks 1-7 are sampled
   (the API replaces all eight codebooks or none). The forced Mimi runs on forced frames
   only (MTR forces a contiguous prefix); forcing that resumes after a gap continues its
   encoder from the last forced frame;
3. `lm_step` -> `tokens[1, 1 + 8, 1]` (text + audio), or None on the first frame (the
   acoustic delay): then the output frame is zeros, so output stays 1:1 with input;
4. `tokens[:, 1:]` -> the user Mimi's decoder -> 1920 samples of the model's voice;
   the text token, when not padding and a tokenizer is loaded, becomes a `text` event.

Sessions: the models load once per server (`load_models`, in `__init__`), enter
streaming once (`streaming_forever(1)`; width N when batched, below), and every `hello`/`reset` calls
`reset_streaming()` on them (Moshi's own server does the same per connection; building a
new LMGen per session fails with "is already streaming!"). Sampling uses torch's global
generator, seeded per session with the hello's `seed` (and re-seeded on `reset`, so
reset gives the same bytes).

Fork (`snapshot`/`restore`): the streaming states are cloned and written back in place
(duplexeval/shims/streaming_state.py says how and why). Batched sessions (`--max-sessions
N`, one batch row per session, per-row sampling and fork): duplexeval/shims/moshi_rows.py.

Hooks: what a family member overrides (the rest is shared)
-----------------------------------------------------------
- `load_models(self) -> FamilyModels` (required): build or load the models once. Return
  the user Mimi (encode user audio, decode the model's tokens), the forced Mimi (a second
  instance with the same weights; None: no teacher forcing), the `lm_gen` object
  (`LMGen` for Moshi and PersonaPlex, the shim's own stepper for FLM-Audio), an optional
  text tokenizer (`id_to_piece`), and the device. Capabilities follow from it:
  `fork` always, `teacher_forcing` with a forced Mimi, `text_events` with a tokenizer.
- `lm_step(self, user_codes, forced_tokens) -> tokens | None`: one LM step. Default:
  `lm_gen.step(user_codes, depformer_replace_tokens=forced_tokens)` (moshi >= 0.2.13).
  PersonaPlex: `lm_gen.step(user_codes, moshi_tokens=forced_tokens)`. FLM-Audio (no
  forcing API): run its step, then write `forced_tokens` into its delayed token cache.
- `own_delays(self) -> list[int]`: delays of the model's own audio codebooks (default:
  `lm_model.delays[1:1 + dep_q]`), which lay out `forced_tokens`.
- `begin_session(self, prompt)`: after the reset and seeding of a session (PersonaPlex:
  voice prompt embedding and `step_system_prompts` with the text prompt). Default: none.
- `streaming_roots(self) -> dict[str, module]`: the streaming modules that `reset`
  resets and fork saves (default: lm_gen, lm_gen.lm_model, mimi, forced_mimi).
- `extra_state(self)` / `load_extra_state(self, state)`: state outside moshi's streaming
  modules (FLM-Audio: its DynamicCache, restored in place). Default: none.
- `text_piece(self, token_id) -> str | None`: the text of an inner-monologue token;
  default skips the LM's padding ids and turns sentencepiece's "▁" into a space.
- `decode(self, tokens) -> Tensor[1, 1, 1920]`: default `mimi.decode(tokens[:, 1:])`.

Imports: only `duplexeval.protocol`, its sibling shims modules, numpy and torch (moshi
objects are reached through what `load_models` returns), because this module is copied
into the model images beside `duplexeval/protocol/`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np
import torch

from duplexeval.protocol.server import DuplexServer
from duplexeval.shims.moshi_rows import (
    BatchedRows,
    RowSampler,
    capture_streaming_row,
    restore_streaming_row,
)
from duplexeval.shims.rng import seed_torch, set_torch_rng_state, torch_rng_state
from duplexeval.shims.streaming_state import capture_streaming_state, restore_streaming_state

SAMPLE_RATE = 24000
FRAME_SAMPLES = 1920
WARMUP_FRAMES = 4


def disable_torch_compile_on_cpu(device: str) -> None:
    """moshi decides at import time whether to wrap functions in torch.compile
    (`moshi/utils/compile.py`, env NO_TORCH_COMPILE); on CPU compiling only costs start-up
    time and needs a C compiler, so set it before moshi is first imported."""
    if str(device).startswith("cpu"):
        os.environ.setdefault("NO_TORCH_COMPILE", "1")


@dataclass
class FamilyModels:
    """What `load_models` returns: the models of one server, loaded once."""

    mimi: Any                       # user audio encoder + decoder of the model's tokens
    lm_gen: Any                     # .step(...) per frame; a moshi StreamingModule for fork
    forced_mimi: Any | None = None  # second Mimi for teacher forcing (same weights), or None
    text_tokenizer: Any | None = None
    device: str = "cpu"


# ---------------------------------------------------------------------------------------
# the server


class MoshiFamilyServer(BatchedRows, DuplexServer):
    """Protocol v1 server for a Moshi-style model (Mimi codec + delayed multi-stream LM).

    Subclasses set `model_name` and implement `load_models`; see the module docstring for
    the other hooks. After each step, `last_tokens` holds the LM's output tokens (None
    while the delay fills) and `last_forced_codes` the forced Mimi's codes of the frame
    (None when not forced): tests and shims read them, the protocol does not.
    """

    model_name = "moshi-family"
    in_rate = SAMPLE_RATE
    out_rate = SAMPLE_RATE
    frame_ms = 80.0

    def __init__(self, warmup_frames: int = WARMUP_FRAMES) -> None:
        super().__init__()
        with torch.no_grad():
            self.models = self.load_models()
        m = self.models
        self.device = m.device
        self.mimi, self.lm_gen, self.forced_mimi, self.text_tokenizer = m.mimi, m.lm_gen, m.forced_mimi, m.text_tokenizer
        caps = ["fork"]
        if self.forced_mimi is not None:
            caps.insert(0, "teacher_forcing")
        if self.text_tokenizer is not None:
            caps.append("text_events")
        self.capabilities = tuple(caps + [c for c in self.extra_capabilities() if c not in caps])
        self._delays = list(self.own_delays())
        self._max_delay = max(self._delays) if self._delays else 0
        self.width = 0  # the batch width the models stream at: 1, or max_sessions when batched
        self._warmup_frames = warmup_frames
        # What the wrapped depformer step of the batch in progress needs; one dict, mutated
        # in place, shared by the session twins (a twin's lone step is a batch too).
        self._batch_ctx: dict[str, Any] = {}
        self._enter_streaming(1)
        self._seed: int | None = None
        self._prompt: str | None = None
        self._session_begun = False
        self._forced_history: dict[int, torch.Tensor] = {}
        self.last_tokens: torch.Tensor | None = None
        self.last_forced_codes: torch.Tensor | None = None
        self.frames_stepped = 0
        self._row_rng: torch.Tensor | None = None  # batched: this session's sampler state
        if warmup_frames:
            self.warmup(warmup_frames)

    # ---- hooks ----------------------------------------------------------------------------
    def load_models(self) -> FamilyModels:
        raise NotImplementedError

    def extra_capabilities(self) -> Iterable[str]:
        """Capabilities beyond fork / teacher_forcing / text_events (PersonaPlex: prompt)."""
        return ()

    def lm_step(self, user_codes: torch.Tensor, forced_tokens: torch.Tensor | None) -> torch.Tensor | None:
        if forced_tokens is None:
            return self.lm_gen.step(user_codes)
        return self.lm_gen.step(user_codes, depformer_replace_tokens=forced_tokens)

    def own_delays(self) -> list[int]:
        lm = self.lm_gen.lm_model
        return list(lm.delays[1:1 + lm.dep_q])

    def begin_session(self, prompt: str | None) -> None:
        """After reset and seeding: a model's session prompt (a no-op for Moshi)."""

    def streaming_roots(self) -> dict[str, Any]:
        roots = {"lm_gen": self.lm_gen, "lm": self.lm_gen.lm_model, "mimi": self.mimi}
        if self.forced_mimi is not None:
            roots["forced_mimi"] = self.forced_mimi
        return roots

    def extra_state(self) -> Any:
        return None

    def load_extra_state(self, state: Any) -> None:
        pass

    def text_piece(self, token_id: int) -> str | None:
        lm = self.lm_gen.lm_model
        if token_id in (lm.existing_text_padding_id, lm.existing_text_end_padding_id):
            return None
        assert self.text_tokenizer is not None   # loaded with the model (load())
        return self.text_tokenizer.id_to_piece(token_id).replace("\u2581", " ")

    def decode(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.mimi.decode(tokens[:, 1:])

    # ---- shared ---------------------------------------------------------------------------
    def _roots_to_stream(self) -> list[Any]:
        # LMGen enters its (detached) LM's streaming itself; the LM must not be entered twice.
        lm = getattr(self.lm_gen, "lm_model", None)
        return [m for m in self.streaming_roots().values() if m is not lm]

    @torch.no_grad()
    def warmup(self, frames: int) -> None:
        """A few frames on silence, free and forced, before the first session: CUDA graphs
        are captured here, not inside a realtime session; then everything is reset."""
        zeros = np.zeros(FRAME_SAMPLES, dtype=np.float32)
        self._seed_row(0)
        for n in range(frames):
            self.step(n, zeros, zeros if (self.forced_mimi is not None and n % 2) else None)
        if self.width > 1:
            for module in self._roots_to_stream():
                module.reset_streaming()  # every row: no session exists yet
        self._reset_state()

    def _reset_state(self) -> None:
        mask = None
        if self.width > 1:  # batched: this session's row only, the other sessions go on
            mask = torch.zeros(self.width, dtype=torch.bool, device=self.device)
            mask[self.session_slot] = True
        for module in self._roots_to_stream():
            # Without a mask, the plain call: a model family's own copy of moshi's streaming
            # module (FLM-Audio's third_party/moshi) takes no reset mask.
            if mask is None:
                module.reset_streaming()
            else:
                module.reset_streaming(mask)
        # Reassigned, not cleared: a session twin (session_model) starts as a shallow copy.
        self._forced_history = {}
        self.last_tokens = self.last_forced_codes = None
        self.frames_stepped = 0
        self._pending = []
        self._seed_row(self._seed or 0)

    def reset(self) -> None:
        # Called on hello (then start_session) and on a reset message (alone): a reset
        # replays the session's own seed and prompt, so it gives the same bytes again.
        with torch.no_grad():
            self._reset_state()
            if self._session_begun:
                seed_torch(self._seed or 0)
                self._seed_row(self._seed or 0)
                self.begin_session(self._prompt)

    def start_session(self, clock: str, seed: int, prompt: str | None) -> None:
        if self._session_begun and (seed, prompt) == (self._seed, self._prompt):
            return  # reset() just began this very session
        with torch.no_grad():
            if self._session_begun:
                self._reset_state()
            self._seed, self._prompt, self._session_begun = seed, prompt, True
            seed_torch(seed)
            self._seed_row(seed)
            self.begin_session(prompt)

    def _audio_tensor(self, audio: np.ndarray) -> torch.Tensor:
        x = torch.from_numpy(np.ascontiguousarray(audio, dtype=np.float32))
        return x.to(self.device)[None, None]

    def forced_tokens(self, frame_idx: int, codes: torch.Tensor) -> torch.Tensor:
        """The replacement tokens for step `frame_idx`: codebook k from forced frame t - d_k.

        A frame before the first forced one has no codes; the earliest available forced
        frame stands in (it reaches the output only at the boundary of forcing).
        """
        self._forced_history[frame_idx] = codes
        for old in [k for k in self._forced_history if k < frame_idx - self._max_delay]:
            del self._forced_history[old]
        rows = []
        for k, d in enumerate(self._delays):
            src = self._forced_history.get(frame_idx - d)
            if src is None:
                src = self._forced_history[min(i for i in self._forced_history if i >= frame_idx - d)]
            rows.append(src[:, k:k + 1, :])
        return torch.cat(rows, dim=1)

    @torch.no_grad()
    def step(self, frame_idx: int, input_audio: np.ndarray, forced: np.ndarray | None) -> np.ndarray:
        if self.width > 1:  # batched: a lone frame is a batch of one row, on the same kernels
            return self.step_batch([(self, frame_idx, input_audio, forced)])[0]
        user_codes = self.mimi.encode(self._audio_tensor(input_audio))
        replace = None
        self.last_forced_codes = None
        if forced is not None:
            if self.forced_mimi is None:
                raise RuntimeError("forced frame to a model without a forced Mimi (no teacher forcing)")
            codes = self.forced_mimi.encode(self._audio_tensor(forced))
            self.last_forced_codes = codes
            replace = self.forced_tokens(frame_idx, codes)
        tokens = self.lm_step(user_codes, replace)
        self.last_tokens = tokens
        self.frames_stepped += 1
        if tokens is None:  # the acoustic delay: nothing to say yet, output stays 1:1
            return np.zeros(self.out_frame_samples, dtype=np.float32)
        if self.text_tokenizer is not None:
            piece = self.text_piece(int(tokens[0, 0, 0]))
            if piece:
                self.emit({"type": "text", "frame_idx": frame_idx, "text": piece})
        pcm = self.decode(tokens)
        return pcm[0, 0].float().cpu().numpy()

    def snapshot(self) -> dict[str, Any]:
        if self.width > 1:
            return self._snapshot_row()
        with torch.no_grad():
            return {
                "streaming": {name: capture_streaming_state(m) for name, m in self.streaming_roots().items()},
                "rng": torch_rng_state(),
                "forced_history": {k: v.clone() for k, v in self._forced_history.items()},
                "frames_stepped": self.frames_stepped,
                "extra": self.extra_state(),
            }

    def restore(self, state: dict[str, Any]) -> None:
        if self.width > 1:
            return self._restore_row(state)
        with torch.no_grad():
            roots = self.streaming_roots()
            for name, saved in state["streaming"].items():
                restore_streaming_state(roots[name], saved, name)
            set_torch_rng_state(state["rng"])
            self._forced_history = {k: v.clone() for k, v in state["forced_history"].items()}
            self.frames_stepped = state["frames_stepped"]
            self.last_tokens = self.last_forced_codes = None
            self.load_extra_state(state["extra"])


__all__ = ["FamilyModels", "MoshiFamilyServer", "RowSampler", "capture_streaming_row", "capture_streaming_state",
           "disable_torch_compile_on_cpu", "restore_streaming_row", "restore_streaming_state"]
