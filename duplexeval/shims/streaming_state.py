"""Moshi-family streaming state: clone it, and restore it in place (fork).

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
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import torch

# Members of moshi's streaming states that are machinery, not state: CUDA graphs (they
# hold captured kernels, not values), the exit stack of `streaming_forever`, callbacks.
_NOT_STATE = frozenset({"exit_stack", "reset_callback", "set_exec_mask_callback", "device", "batch_size"})




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
