"""The run folder of recordings made elsewhere: the same files a run writes, marked as imported.

What differs from a run made here, and why:
- `manifest.json` has `recorded_elsewhere: true` and a `sources` list (benchmark, model
  name, layout and its version, the folder read, the sha256 of every file taken); its jobs
  carry `backend: recorded-elsewhere` and `model_sha256: null` - there is no model spec,
  and nothing claims one was used. Fields are added to the run manifest, none removed.
- each item's `events.jsonl` is one `imported` line (the source file and its sha256):
  there were no protocol events; `status.json` is sealed exactly as the runner seals it
  (written last, vouching for recording.wav and events.jsonl), so `verify` and the
  scorers check imported items like any others.
- `context.json` says `recorded-elsewhere` (teacher forcing unknown: how the history
  reached the model is not known here).
- `model.json` carries a caveat that every report prints beside the model's numbers.
"""

from __future__ import annotations

import json
import platform
import shutil
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

from duplexeval import __version__
from duplexeval.cli_params import child_folder
from duplexeval.io import atomic_write_json, atomic_write_jsonl
from duplexeval.runner.integrity import EVENTS, RECORDING, STATUS_FILE, artifact_fields, seal_status

SOURCE_KIND = "recorded-elsewhere"
# No `flag`: a flag becomes a note on every metric, and what it would say is already the
# model's caveat (printed by every report); the mode says how the recordings came.
CONTEXT = {"mode": SOURCE_KIND, "teacher_forcing": None, "flag": None}


def caveat(layout: str) -> str:
    return f"recorded elsewhere (imported from the {layout} layout; no model spec, the harness did not run the model)"


class ImportRefused(ValueError):
    """A submission that cannot be imported; the message names the files and why."""


def bench_dir_for(runs_dir: Path, run_id: str, model: str, bench_id: str) -> Path:
    """<runs>/<run>/<model>/<benchmark>, refused when it already holds anything: an import never overwrites."""
    bench_dir = child_folder(child_folder(runs_dir, run_id, "run id"), model, "model name") / bench_id
    if bench_dir.exists() and any(bench_dir.iterdir()):
        raise ImportRefused(f"{bench_dir}: already holds a run of {model} on {bench_id}; "
                            "import into another --run-id (nothing was written)")
    return bench_dir


def is_plain_copy(path: Path, rate: int) -> bool:
    """A 16-bit PCM stereo WAV at the benchmark's rate: copied byte for byte (same samples, same hash)."""
    info = sf.info(str(path))
    return info.format == "WAV" and info.subtype == "PCM_16" and info.channels == 2 and info.samplerate == rate


def write_item(item_dir: Path, source: Path, source_sha256: str, audio: np.ndarray, rate: int, *, layout: str,
               model: str) -> None:
    """recording.wav (the file itself when already in our format, else `audio` as 16-bit PCM), events, status last."""
    item_dir.mkdir(parents=True, exist_ok=True)
    if is_plain_copy(source, rate):
        shutil.copyfile(source, item_dir / RECORDING)
    else:
        sf.write(str(item_dir / RECORDING), audio, rate, subtype="PCM_16")
    atomic_write_jsonl(item_dir / EVENTS, [{"type": "imported", "source": source.name,
                                            "source_sha256": source_sha256, "layout": layout}])
    status = {"status": "ok", "model": model, "rate": rate, "reason": None, SOURCE_KIND: True,
              "source": source.name, "source_sha256": source_sha256, **artifact_fields(item_dir, ok=True)}
    atomic_write_json(item_dir / STATUS_FILE, seal_status(status))


def write_job_files(bench_dir: Path, bench: dict[str, Any], model: str, layout: str) -> None:
    atomic_write_json(bench_dir / "benchmark.json", bench)
    atomic_write_json(bench_dir / "model.json", {"id": model, "sha256": None, "caveat": caveat(layout)})
    atomic_write_json(bench_dir / "context.json", CONTEXT)


def _judges(bench: dict[str, Any]) -> dict[str, Any]:
    from duplexeval.specs import Registry

    registry = Registry.load()
    out = {}
    for judge_id in bench.get("judges", {}).values():
        d = registry.get("judge", judge_id)
        out[judge_id] = {"sha256": d.sha256, "provider": d.data["provider"], "model": d.data.get("model"),
                         "snapshot": d.data.get("snapshot"), "label": d.data["label"],
                         "api_key_env": d.data.get("api_key_env")}
    return out


def record_in_manifest(run_dir: Path, *, run_id: str, suite: str | None, bench: dict[str, Any], bench_sha256: str,
                       model: str, layout: str, layout_version: int, source_dir: Path, files: dict[str, str],
                       cache_mode: str) -> None:
    """Adds this import (job + source) to the run's manifest, creating it for a new run."""
    from duplexeval.runfolder.manifest import git_state, package_versions
    from duplexeval.specs.readings import reading_values

    path = run_dir / "manifest.json"
    if path.is_file():
        manifest = json.loads(path.read_text("utf-8"))
        if not manifest.get(SOURCE_KIND):
            raise ImportRefused(f"{path}: a run made by duplexeval; import into another --run-id")
    else:
        manifest = {"schema": "duplexeval.manifest/1", "run_id": run_id, "suite": {"id": suite, "sha256": None},
                    "created": datetime.now(timezone.utc).isoformat(timespec="seconds"), "duplexeval": __version__,
                    "git": git_state(), "python": sys.version.split()[0], "platform": platform.platform(),
                    "packages": package_versions(), "clock": None, "seed": None, "cache_mode": cache_mode,
                    "images": {}, SOURCE_KIND: True, "sources": [], "jobs": [], "judges": {}}
    manifest.pop("manifest_sha256", None)
    manifest["sources"].append({"benchmark": bench["id"], "model": model, "layout": layout,
                                "layout_version": layout_version, "dir": str(source_dir.resolve()),
                                "files": dict(sorted(files.items()))})
    manifest["jobs"].append({"model": model, "model_sha256": None, "backend": SOURCE_KIND, "benchmark": bench["id"],
                             "benchmark_sha256": bench_sha256, "identity": None, "asr": bench.get("asr"),
                             "judges": bench.get("judges", {}), "overrides": {}, "readings": reading_values(bench)})
    manifest["judges"].update(_judges(bench))
    atomic_write_json(path, manifest)


def write_summary(run_dir: Path) -> None:
    """summary.json of every imported <model>/<benchmark> folder that has results."""
    jobs = []
    for results in sorted(run_dir.glob("*/*/results.json")):
        bench_dir = results.parent
        jobs.append({"benchmark": bench_dir.name, "model": bench_dir.parent.name, "reason": None,
                     "results": str(results.relative_to(run_dir)), "status": "scored"})
    atomic_write_json(run_dir / "summary.json", {"jobs": jobs, "schema": "duplexeval.summary/1"})
