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

Fork (`snapshot`/`restore`): the snapshot clones every tensor of the streaming states
(`lm_gen`, `lm_gen.lm_model`, both Mimis: KV caches, offsets, convolution buffers, exec
masks), the plain counters (`offset_cpu`), this class's own per-session state and the
torch (and CUDA) RNG state. `restore` writes the saved values back **in place**
(`Tensor.copy_`): under CUDA graphs the captured kernels read the live buffers by
address, so swapping in new tensors (or deep-copying modules) would leave the graphs
reading stale memory. KV ring buffers are saved only up to their write position (the
rest is masked out of attention), which keeps a snapshot of the real 7B Moshi far below
the 1.5 GB its full caches hold. Non-data members (CUDA graphs, exit stacks, callbacks)
are not state and are left alone.

Batched sessions (`--max-sessions N`, docs/protocol.md "Batched sessions"; only where a
subclass raises `max_sessions_supported`, the Moshi shim): the models stream at a fixed
width N (`streaming_forever(N)`), each concurrent session owns one batch row (its slot)
and `step_batch` steps every session with a frame waiting in one `mimi.encode` /
`LMGen.step` / `mimi.decode` of width N:

- rows without a frame are masked (moshi's per-row `exec_mask`: their KV caches, offsets,
  convolution buffers and delayed token cache stay untouched) and get silence as filler;
  `hello`/`reset` resets its row only (`reset_streaming(reset_mask)`);
- sampling: `LMGen` samples every row from torch's one global generator
  (`moshi/utils/sampling.py`, called as `moshi.models.lm.sample_token`), so a session's
  seed would not decide its own samples. `RowSampler`, installed as
  `moshi.models.lm.sample_token` while a batch steps (and only then: a one-session server
  runs moshi untouched), calls moshi's own `sample_token` row by row, each row with the
  global generator set to that session's saved state; a row that must not draw (idle,
  or forced audio codebooks) takes the argmax and leaves its state alone. The first
  delayed frame is told per row (`support_out_of_sync`: `offset_cpu` counts batch steps,
  not a row's frames, and is reset by any row's reset);
- teacher forcing per row: `depformer_replace_tokens` replaces all rows or none, so the
  depformer step is wrapped (`state.graphed_depth`, not a CUDA graph then): it runs for
  every row, forced rows without drawing, and the forced rows' tokens are overwritten;
- fork per row: a snapshot saves the session's row of every batched tensor (batch dim 0,
  KV ring caches dim 1, up to that row's own write position) and its sampler state;
  restore writes that row back in place, the other sessions' rows are not touched.

Determinism: a session's bytes depend on its seed, input and N only, not on which
sessions run beside it or which slot it got: fp32 rows of one width-N batch do not
influence each other (tests/test_moshi_batch.py asserts it byte for byte). Width N and
width 1 are different kernels (gemm vs gemv), so a width-N server and a one-session
server agree on tokens but Mimi's audio differs in the last float bit (1.2e-7 measured),
i.e. rarely one s16 LSB: results from `--max-sessions 1` and `--max-sessions N` are not
byte-interchangeable (a spec whose launch command says `--max-sessions N` has its own
sha256, which resume checks).

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

Imports: only `duplexeval.protocol`, numpy and torch (moshi objects are reached through
what `load_models` returns), because this module is copied into the model images beside
`duplexeval/protocol/`.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import numpy as np
import torch

from duplexeval.protocol.server import DuplexServer
from duplexeval.shims.rng import seed_torch, set_torch_rng_state, torch_rng_state

SAMPLE_RATE = 24000
FRAME_SAMPLES = 1920
WARMUP_FRAMES = 4

# Members of moshi's streaming states that are machinery, not state: CUDA graphs (they
# hold captured kernels, not values), the exit stack of `streaming_forever`, callbacks.
_NOT_STATE = frozenset({"exit_stack", "reset_callback", "set_exec_mask_callback", "device", "batch_size"})


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
# streaming state: clone, and restore in place


@dataclass
class _Ring:
    """A KV ring buffer saved up to its write position: `cache[..., :n, :]` and its offsets."""

    n: int
    cache: torch.Tensor
    fields: dict[str, Any]


@dataclass
class _Obj:
    fields: dict[str, Any]


def _is_ring_cache(value: Any) -> bool:
    return (isinstance(getattr(value, "cache", None), torch.Tensor)
            and isinstance(getattr(value, "end_offset", None), torch.Tensor)
            and isinstance(getattr(value, "capacity", None), int))


def _capture(value: Any) -> Any:
    """A detached copy of one state member, or `_SKIP` for machinery (graphs, callbacks)."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if _is_ring_cache(value):
        # Valid entries are positions < end_offset until the ring wraps; beyond them
        # attention masks the buffer out, so the saved prefix is the whole state.
        n = min(value.capacity, int(value.end_offset.max().item()))
        fields = {k: _capture(v) for k, v in vars(value).items() if k != "cache"}
        return _Ring(n, value.cache[..., :n, :].detach().clone(), {k: v for k, v in fields.items() if v is not _SKIP})
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _Obj(_capture_fields(value))
    if isinstance(value, (list, tuple)):
        items = [_capture(v) for v in value]
        return _SKIP if any(v is _SKIP for v in items) else type(value)(items)
    return _SKIP


def _capture_fields(obj: Any) -> dict[str, Any]:
    out = {}
    for name, value in vars(obj).items():
        if name in _NOT_STATE or "graphed" in name:
            continue
        saved = _capture(value)
        if saved is not _SKIP:
            out[name] = saved
    return out


class _Skip:
    def __repr__(self) -> str:
        return "<not state>"


_SKIP = _Skip()


def _copy_into(live: Any, saved: Any, where: str) -> Any:
    """Writes `saved` into `live` in place where it is a tensor of the same layout;
    returns the value the attribute must hold afterwards."""
    if isinstance(saved, torch.Tensor):
        if (isinstance(live, torch.Tensor) and live.shape == saved.shape and live.dtype == saved.dtype
                and live.device == saved.device):
            live.copy_(saved)
            return live
        return saved.clone()  # the member did not exist (or changed shape) at snapshot time
    if isinstance(saved, _Ring):
        _restore_fields(live, saved.fields, where)
        live.cache[..., :saved.n, :].copy_(saved.cache)
        return live
    if isinstance(saved, _Obj):
        _restore_fields(live, saved.fields, where)
        return live
    if isinstance(saved, (list, tuple)):
        if isinstance(live, (list, tuple)) and len(live) == len(saved):
            return type(saved)(_copy_into(a, b, f"{where}[{i}]") for i, (a, b) in enumerate(zip(live, saved)))
        return type(saved)(v.clone() if isinstance(v, torch.Tensor) else v for v in saved)
    return saved


def _restore_fields(obj: Any, fields: dict[str, Any], where: str) -> None:
    for name, saved in fields.items():
        live = getattr(obj, name)
        new = _copy_into(live, saved, f"{where}.{name}")
        if new is not live:
            setattr(obj, name, new)


def capture_streaming_state(module: Any) -> dict[str, Any]:
    """Clone of `module.get_streaming_state()`: per streaming submodule, its state's data."""
    return {name: None if state is None else _Obj(_capture_fields(state))
            for name, state in module.get_streaming_state().items()}


def restore_streaming_state(module: Any, saved: dict[str, Any], label: str = "module") -> None:
    """Writes a `capture_streaming_state` result back into the live states, in place."""
    live = module.get_streaming_state()
    if set(live) != set(saved):
        raise RuntimeError(f"{label}: streaming submodules changed since the snapshot "
                           f"({sorted(set(live) ^ set(saved))[:4]})")
    for name, state in saved.items():
        if state is None or live[name] is None:
            if (state is None) != (live[name] is None):
                raise RuntimeError(f"{label}.{name or '<root>'}: streaming state appeared or vanished since the snapshot")
            continue
        _restore_fields(live[name], state.fields, f"{label}.{name or '<root>'}")


# ---------------------------------------------------------------------------------------
# batched sessions: per-row sampling, per-row streaming state


def _generator_state(device: str, seed: int) -> torch.Tensor:
    """The state torch's global generator of `device` has right after `manual_seed(seed)`:
    a batch row starts where a one-session server's global generator starts."""
    return torch.Generator(device=device).manual_seed(int(seed)).get_state()


def _get_rng(device: torch.device) -> torch.Tensor:
    return torch.cuda.get_rng_state(device) if device.type == "cuda" else torch.get_rng_state()


def _set_rng(device: torch.device, state: torch.Tensor) -> None:
    if device.type == "cuda":
        torch.cuda.set_rng_state(state, device)
    else:
        torch.set_rng_state(state)


class RowSampler:
    """Stands in for `moshi.models.lm.sample_token` while a batch steps: row by row, moshi's
    own `sample_token` with torch's global generator set to that row's saved state.

    Why: `LMGen._step` and `LMGen.depformer_step` call `sample_token` on the whole batch,
    which draws every row from one global generator, so a row's samples would depend on
    the rows beside it. Calling the original per row, on a [1, ...] slice, makes the draws
    of a row exactly those of a one-row batch seeded with that session's seed.
    `draw[r]` False: argmax for row r, its state untouched (idle rows; forced codebooks,
    which a one-session server would not sample at all).
    """

    def __init__(self, original: Callable[..., torch.Tensor], states: list[torch.Tensor | None],
                 draw: list[bool]) -> None:
        self.original, self.states, self.draw = original, states, list(draw)

    def __call__(self, logits: torch.Tensor, use_sampling: bool = False, temp: float = 1.0,
                 top_k: int = 0, top_p: float = 0.0) -> torch.Tensor:
        outs = []
        saved = _get_rng(logits.device)
        try:
            for r in range(logits.shape[0]):
                row = logits[r:r + 1]
                if self.draw[r] and self.states[r] is not None:
                    _set_rng(logits.device, self.states[r])
                    outs.append(self.original(row, use_sampling, temp, top_k, top_p))
                    self.states[r] = _get_rng(logits.device)
                else:
                    outs.append(self.original(row, False))
        finally:
            _set_rng(logits.device, saved)
        return torch.cat(outs, dim=0)


def _lm_module() -> Any:
    import moshi.models.lm as lm_module  # reached lazily: this module imports no moshi at load time

    return lm_module


@dataclass
class _RowTensor:
    value: torch.Tensor


@dataclass
class _RowRing:
    n: int
    cache: torch.Tensor       # cache[:, row, :, :n, :]
    end_offset: torch.Tensor  # end_offset[row]


def _capture_row(value: Any, row: int, width: int) -> Any:
    """Row `row` of one state member: batch dim 0 for tensors of `width` rows, dim 1 of
    a KV ring cache ([2, B, H, T, D]); shared members (counters, constants) are `_SKIP`."""
    if _is_ring_cache(value):
        if value.end_offset.shape[0] != width:
            raise RuntimeError("a KV cache without per-row offsets (weights per step) cannot be forked per row")
        n = min(value.capacity, int(value.end_offset[row].item()))
        return _RowRing(n, value.cache[:, row, :, :n, :].detach().clone(), value.end_offset[row].detach().clone())
    if isinstance(value, torch.Tensor):
        return _RowTensor(value[row].detach().clone()) if value.dim() and value.shape[0] == width else _SKIP
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {}
        for name, member in vars(value).items():
            if name in _NOT_STATE or "graphed" in name:
                continue
            saved = _capture_row(member, row, width)
            if saved is not _SKIP:
                fields[name] = saved
        return _Obj(fields)
    return _SKIP


def _restore_row(live: Any, saved: Any, row: int) -> None:
    if isinstance(saved, _RowRing):
        live.cache[:, row, :, :saved.n, :].copy_(saved.cache)
        live.end_offset[row] = saved.end_offset
    elif isinstance(saved, _RowTensor):
        live[row].copy_(saved.value)
    elif isinstance(saved, _Obj):
        for name, member in saved.fields.items():
            _restore_row(getattr(live, name), member, row)


def capture_streaming_row(module: Any, row: int, width: int) -> dict[str, Any]:
    """Row `row` of every streaming state of `module` (a batched session's share of it)."""
    return {name: None if state is None else _capture_row(state, row, width)
            for name, state in module.get_streaming_state().items()}


def restore_streaming_row(module: Any, saved: dict[str, Any], row: int, label: str = "module") -> None:
    """Writes a `capture_streaming_row` result back into row `row`, in place; other rows untouched."""
    live = module.get_streaming_state()
    if set(live) != set(saved):
        raise RuntimeError(f"{label}: streaming submodules changed since the snapshot")
    for name, state in saved.items():
        if state is not None:
            _restore_row(live[name], state, row)


# ---------------------------------------------------------------------------------------
# the server


class MoshiFamilyServer(DuplexServer):
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

    # ---- batched sessions -----------------------------------------------------------------
    def _seed_row(self, seed: int) -> None:
        """Batched: this session's sampler state starts where a seeded global generator does
        (a one-session server seeds the global generator itself and leaves this None)."""
        self._row_rng = _generator_state(self.device, seed) if self.width > 1 else None
    def _enter_streaming(self, width: int) -> None:
        """(Re)enters moshi's streaming at batch width `width`; leaving the old width first
        (`streaming_forever` keeps no handle, so each state's exit stack is closed here)."""
        for module in self._roots_to_stream():
            if module._streaming_state is not None:
                for state in module.get_streaming_state().values():
                    if state is not None:
                        state.__exit__(None, None, None)  # LMGen's closes its LM's streaming
                module._stop_streaming()
            module.streaming_forever(width)
        self.width = width
        if width > 1:
            # Per row: offset_cpu counts batch steps and any row's reset zeroes it, so the
            # first (delay) frame is told from the row's own offset in step_batch.
            self.lm_gen.support_out_of_sync = True
            self.lm_gen._streaming_state.graphed_depth = self._depformer_per_row
        elif getattr(self.lm_gen, "support_out_of_sync", False):
            self.lm_gen.support_out_of_sync = False  # back from a batch: moshi's own None on the delay frame

    def set_max_sessions(self, n: int) -> None:
        """`--max-sessions N`: the models stream at width N from now on (warmed up again)."""
        super().set_max_sessions(n)
        if n != self.width:
            with torch.no_grad():
                self._enter_streaming(n)
                self._slots = {}
                if self._warmup_frames:
                    self.warmup(self._warmup_frames)
                else:
                    self._reset_state()

    def _depformer_per_row(self, text_token: torch.Tensor, transformer_out: torch.Tensor) -> torch.Tensor:
        """`LMGen`'s depformer step for a batch whose rows are forced or not, each on its own:
        forced rows do not draw and get their replacement tokens."""
        batch = self._batch_ctx
        sampler = batch["sampler"]
        text_draw = sampler.draw
        sampler.draw = batch["depformer_draw"]
        try:
            tokens = self.lm_gen.depformer_step(text_token, transformer_out)
        finally:
            sampler.draw = text_draw
        for row, replace in batch["replace"].items():
            tokens[row] = replace[0, :, 0]
        return tokens

    def _batch_input(self, rows: list[int], audio: list[np.ndarray]) -> torch.Tensor:
        x = torch.zeros(self.width, 1, FRAME_SAMPLES, dtype=torch.float32)
        for row, a in zip(rows, audio):
            x[row, 0] = torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32))
        return x.to(self.device)

    def _mask(self, rows: Iterable[int]) -> torch.Tensor:
        mask = torch.zeros(self.width, dtype=torch.bool, device=self.device)
        mask[list(rows)] = True
        return mask

    @torch.no_grad()
    def step_batch(self, calls: list[tuple[Any, int, np.ndarray, np.ndarray | None]]) -> list[np.ndarray]:
        """One frame for each session in `calls`, all rows in one Mimi encode, one LM step
        and one Mimi decode of width N; the rows of sessions without a frame are masked."""
        if self.width == 1:
            return super().step_batch(calls)
        models = [c[0] for c in calls]
        rows = [m.session_slot for m in models]
        if len(set(rows)) != len(rows):
            raise RuntimeError(f"two frames of one session slot in one batch ({rows})")
        active = self._mask(rows)
        self.mimi.set_exec_mask(active)
        user_codes = self.mimi.encode(self._batch_input(rows, [c[2] for c in calls]))
        replace: dict[int, torch.Tensor] = {}
        forced_calls = [(m, idx, f) for m, idx, _, f in calls if f is not None]
        for m in models:
            m.last_forced_codes = None
        if forced_calls:
            if self.forced_mimi is None:
                raise RuntimeError("forced frame to a model without a forced Mimi (no teacher forcing)")
            forced_rows = [m.session_slot for m, _, _ in forced_calls]
            self.forced_mimi.set_exec_mask(self._mask(forced_rows))
            codes = self.forced_mimi.encode(self._batch_input(forced_rows, [f for _, _, f in forced_calls]))
            for m, idx, _ in forced_calls:
                row_codes = codes[m.session_slot:m.session_slot + 1].clone()
                m.last_forced_codes = row_codes
                replace[m.session_slot] = m.forced_tokens(idx, row_codes)
        states: list[torch.Tensor | None] = [None] * self.width
        for m in models:
            states[m.session_slot] = m._row_rng
        draw = [bool(a) for a in active.tolist()]
        sampler = RowSampler(self._original_sample_token(), states, draw)
        self._batch_ctx.update(sampler=sampler, replace=replace,
                               depformer_draw=[d and r not in replace for r, d in enumerate(draw)])
        lm_module = _lm_module()
        self.lm_gen.set_exec_mask(active)
        lm_module.sample_token = sampler
        try:
            tokens = self.lm_step(user_codes, None)
        finally:
            lm_module.sample_token = sampler.original
            self._batch_ctx.clear()
        for m in models:
            m._row_rng = states[m.session_slot]
        offsets = self.lm_gen._streaming_state.offsets
        speaking = [r for r in rows if int(offsets[r]) > self.lm_gen.max_delay]
        pcm = None
        if speaking:
            # Rows still in the acoustic delay (and idle rows) decode nothing, as alone.
            self.mimi.set_exec_mask(self._mask(speaking))
            safe = tokens.clone()
            safe[safe < 0] = 0  # masked rows hold moshi's "ungenerated" id; computed, then dropped
            pcm = self.decode(safe)
        outs = []
        for m, (_, frame_idx, _, _) in zip(models, calls):
            row = m.session_slot
            m.frames_stepped += 1
            if row not in speaking:
                m.last_tokens = None
                outs.append(np.zeros(self.out_frame_samples, dtype=np.float32))
                continue
            m.last_tokens = tokens[row:row + 1].clone()
            if self.text_tokenizer is not None:
                piece = self.text_piece(int(tokens[row, 0, 0]))
                if piece:
                    m.emit({"type": "text", "frame_idx": frame_idx, "text": piece})
            outs.append(pcm[row, 0].float().cpu().numpy())
        return outs

    @staticmethod
    def _original_sample_token() -> Callable[..., torch.Tensor]:
        current = _lm_module().sample_token
        return current.original if isinstance(current, RowSampler) else current

    def _snapshot_row(self) -> dict[str, Any]:
        with torch.no_grad():
            row = self.session_slot
            return {
                "row": row,
                "streaming": {name: capture_streaming_row(m, row, self.width) for name, m in self.streaming_roots().items()},
                "rng": self._row_rng.clone(),
                "forced_history": {k: v.clone() for k, v in self._forced_history.items()},
                "frames_stepped": self.frames_stepped,
            }

    def _restore_row(self, state: dict[str, Any]) -> None:
        if state.get("row") != self.session_slot:
            raise RuntimeError(f"snapshot of batch row {state.get('row')} restored into row {self.session_slot}")
        with torch.no_grad():
            roots = self.streaming_roots()
            for name, saved in state["streaming"].items():
                restore_streaming_row(roots[name], saved, self.session_slot, name)
            self._row_rng = state["rng"].clone()
            self._forced_history = {k: v.clone() for k, v in state["forced_history"].items()}
            self.frames_stepped = state["frames_stepped"]
            self.last_tokens = self.last_forced_codes = None


__all__ = ["FamilyModels", "MoshiFamilyServer", "RowSampler", "capture_streaming_row", "capture_streaming_state",
           "disable_torch_compile_on_cpu", "restore_streaming_row", "restore_streaming_state"]
