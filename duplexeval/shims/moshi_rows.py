"""Moshi-family batched sessions: one batch row per session, per-row sampling and fork.

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
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import numpy as np
import torch

from duplexeval.shims.streaming_state import _NOT_STATE, _SKIP, _is_ring_cache, _Obj


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


class BatchedRows:
    """The batched-session half of `MoshiFamilyServer` (mixed in before `DuplexServer`):
    streaming at width N, one row per session, per-row seeding, stepping, masking and fork.
    It reads the server's models and per-session state, which `MoshiFamilyServer` sets."""

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
        x = torch.zeros(self.width, 1, self.in_frame_samples, dtype=torch.float32)
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
