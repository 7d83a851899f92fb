"""What the `bench/gpu_check_*.py` scripts share: running their checks one line each, the
teacher-forcing check of the Moshi-family shims, a snapshot's size and the peak-memory line.

Why one module: each script prints PASS/FAIL lines that bench/gpu_checks.sh summarises, and a
check that raises must print its own FAIL line without hiding the checks after it; the
Moshi and FLM-Audio shims share one forcing path (duplexeval/shims/moshi_family.py), so they
share the check of it.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable


def run_checks(checks: Iterable[tuple[str, Callable[[], str]]]) -> int:
    """Runs each check, prints its line (a raised exception becomes `FAIL name: ...`); the FAIL count."""
    failures = 0
    for name, check in checks:
        try:
            line = check()
        except Exception as exc:  # one check failing must not hide the others
            line = f"FAIL {name}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        failures += line.startswith("FAIL")
        print(line, flush=True)
    return failures


def forcing_line(server: Any, user: Any, forced_audio: Any, steps: int = 24) -> str:
    """Teacher forcing through a Moshi-family shim whose session has just been reset: the
    codes forced at frame t must come out verbatim as the model's own audio tokens at step
    t+1 (codebooks 1-8 of `last_tokens`)."""
    import torch

    codes: list[torch.Tensor] = []
    tokens: list[torch.Tensor | None] = []
    for t in range(steps):
        server.step(t, user[t], forced_audio[t])
        codes.append(server.last_forced_codes.detach().clone().cpu())
        tokens.append(None if server.last_tokens is None else server.last_tokens.detach().clone().cpu())
    checked = mismatched = 0
    for t in range(steps - 1):
        out = tokens[t + 1]
        if out is None:
            continue
        checked += 1
        mismatched += not torch.equal(out[:, 1:9, :], codes[t])
    ok = checked >= steps - 2 and mismatched == 0
    return (f"{'PASS' if ok else 'FAIL'} teacher forcing: forced codes of frame t verbatim at step t+1 in "
            f"{checked - mismatched}/{checked} frames (8 codebooks each)")


def snapshot_mb(snapshot: object) -> float:
    """MB of every tensor inside a fork snapshot (dicts, lists, objects, a DynamicCache; each
    object walked once, so shared or cyclic references count once)."""
    import torch

    total = 0
    stack, seen = [snapshot], set()
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, torch.Tensor):
            total += x.numel() * x.element_size()
        elif isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, (list, tuple)):
            stack.extend(x)
        elif hasattr(x, "__dict__"):
            stack.extend(vars(x).values())
    return total / 1e6


def peak_memory_gb(torch: Any, weights_gb: float, built: str) -> float:
    """Prints the memory line on CUDA (after building `built`, and at the peak); the peak in GiB
    (0 on a CPU dry run)."""
    if not torch.cuda.is_available():
        return 0.0
    peak = torch.cuda.max_memory_allocated() / 2**30
    print(f"INFO memory: {weights_gb:.1f} GiB after building ({built}), {peak:.1f} GiB at the peak "
          f"(of {torch.cuda.get_device_properties(0).total_memory / 2**30:.0f} GiB)", flush=True)
    return peak
