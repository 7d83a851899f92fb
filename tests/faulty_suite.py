"""A spec folder (for $DUPLEXEVAL_SPECS) with the deliberately broken agent as a model and a
small suite on the embedded data: what a model author's CI sees when a shim is broken."""

from __future__ import annotations

from pathlib import Path

import yaml

from duplexeval.specs import repo_root


def faulty_specs(root: Path, *, mode: str = "crash", at_frame: int = 0,
                 benchmarks: tuple[str, ...] = ("mpe-explicit", "mtr-safety", "mtr-quality"), limit: int = 1) -> Path:
    """root/specs with models/faulty.yaml and suites/faulty.yaml; returns the specs folder."""
    specs = root / "specs"
    (specs / "models").mkdir(parents=True)
    (specs / "suites").mkdir(parents=True)
    model = {
        "kind": "model", "id": "faulty", "name": "Faulty (test agent)", "status": "runnable", "duplex": "full",
        "reference_agent": True, "description": f"fails with {mode} from frame {at_frame}",
        "launch": {"backend": "local", "startup_timeout_s": 30, "step_timeout_s": 2,
                   "command": ["{python}", "-m", "duplexeval.agents.faulty", "--socket", "{socket}",
                               "--mode", mode, "--at-frame", str(at_frame)]},
        "audio": {"in_rate": 16000, "out_rate": 16000, "frame_ms": 80, "in_frame_samples": 1280,
                  "out_frame_samples": 1280},
        "clocks": ["lockstep", "realtime"], "capabilities": [],
        "weights": {"source": "none"}, "license": {"code": "Apache-2.0", "weights": "none"},
    }
    (specs / "models" / "faulty.yaml").write_text(yaml.safe_dump(model, sort_keys=False))
    embedded = yaml.safe_load((repo_root() / "specs" / "suites" / "embedded.yaml").read_text())
    overrides = embedded["overrides"]
    for source in overrides["data"].values():
        source["path"] = str(repo_root() / source["path"])
    suite = {"kind": "suite", "id": "faulty", "description": "the faulty agent on the embedded data",
             "runs": [{"models": ["faulty"], "benchmarks": list(benchmarks), "limit": limit}],
             "clock": "lockstep", "cache_mode": "readwrite", "seed": 0, "overrides": overrides}
    (specs / "suites" / "faulty.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    return specs
