"""The `launch.gpu_step` block a GPU check prints, ready to paste into specs/models/<id>.yaml.

Why one module: every `bench/gpu_check_*.py` ends with the figure the packing
(duplexeval/executors/packing.py) reads, and a block that does not validate against
the spec schema would only fail later, when the lead pastes it. So the block is built
here, checked against `launch.gpu_step` of specs/schema/model.schema.json, and printed
as YAML lines indented for a spec's `launch:` section (the source is a JSON string,
which YAML reads as a double-quoted scalar).

    from gpu_step_block import print_block
    print_block("moshi", steps=[(1, 22.0), (4, 79.3)], gpu="H200", memory_gb=18.2,
                what="full-size Moshi with random weights, CUDA graphs on")
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from pathlib import Path
from typing import Any, Sequence

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "specs" / "schema" / "model.schema.json"
_PLAIN = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")  # written bare in YAML (H200, measured); else quoted


def gpu_short_name(name: str) -> str:
    """'NVIDIA H200' -> 'H200', as the specs name GPUs; a CPU dry run keeps its label."""
    for prefix in ("NVIDIA ", "Tesla "):
        if name.startswith(prefix):
            name = name[len(prefix):]
    return name.strip() or "unknown GPU"


def gpu_step_schema() -> dict[str, Any]:
    """The `launch.gpu_step` sub-schema of the model spec schema."""
    schema = json.loads(SCHEMA.read_text())
    return schema["properties"]["launch"]["properties"]["gpu_step"]


def block(script: str, *, steps: Sequence[tuple[int, float]] = (), servers: int | None = None,
          gpu: str, memory_gb: float | None = None, what: str, kind: str = "measured",
          date: str | None = None) -> dict[str, Any]:
    """The `gpu_step` mapping: `source` says which script, on which GPU, when, and what ran."""
    out: dict[str, Any] = {}
    if steps:
        out["steps"] = [[int(n), round(float(ms), 1)] for n, ms in steps]
    if servers is not None:
        out["servers"] = int(servers)
    if memory_gb is not None:
        out["memory_gb"] = round(float(memory_gb), 1)
    out["gpu"] = gpu
    out["kind"] = kind
    day = date or _dt.date.today().isoformat()
    out["source"] = f"bench/{script} on one {gpu}, {day}, {what} (docs/gpu.md)"
    return out


def errors(gpu_step: dict[str, Any]) -> list[str]:
    """Schema errors of a `gpu_step` mapping ('' path = the block itself); [] when valid."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(gpu_step_schema())
    return [f"{'/'.join(str(p) for p in e.absolute_path) or 'gpu_step'}: {e.message}"
            for e in validator.iter_errors(gpu_step)]


def render(gpu_step: dict[str, Any], indent: int = 2) -> str:
    """YAML lines `gpu_step:` + its keys, indented as under a spec's `launch:`."""
    pad, inner = " " * indent, " " * (indent + 2)
    lines = [f"{pad}gpu_step:"]
    for key, value in gpu_step.items():
        if key == "steps":
            pairs = ", ".join(f"[{n}, {ms}]" for n, ms in value)
            lines.append(f"{inner}steps: [{pairs}]")
        elif isinstance(value, str) and (key == "source" or not _PLAIN.match(value)):
            lines.append(f"{inner}{key}: {json.dumps(value)}")
        else:
            lines.append(f"{inner}{key}: {value}")
    return "\n".join(lines)


def print_block(model_id: str, script: str, **kwargs: Any) -> bool:
    """Print the block for specs/models/<model_id>.yaml; False (and a FAIL line) when it
    does not validate, so a check can count it as a failure."""
    gpu_step = block(script, **kwargs)
    problems = errors(gpu_step)
    print(f"INFO launch.gpu_step for specs/models/{model_id}.yaml (paste under `launch:`):", flush=True)
    print(render(gpu_step), flush=True)
    if problems:
        print(f"FAIL gpu_step block: does not validate against {SCHEMA.relative_to(ROOT)}: {'; '.join(problems)}")
        return False
    return True
