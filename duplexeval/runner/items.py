"""Running items: one (model, stimulus) session each, written to its own folder, resumable.

An item is finished only once its status.json exists; it is written last and
atomically, so a run killed at any moment (kill -9) and started again redoes exactly the
unfinished items (docs/architecture.md, "Run directory"). Lockstep sessions are
deterministic and each session starts from `hello` (which resets the model), so a resumed
run is byte-identical to an uninterrupted one.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from duplexeval.audio import write_wav
from duplexeval.io import atomic_write_json, atomic_write_jsonl, remove_abandoned_temp_files, sha256_json
from duplexeval.protocol.wire import PROTOCOL_VERSION
from duplexeval.runner.backends import Backend, make_backend
from duplexeval.runner.client import Endpoint
from duplexeval.runner.errors import ModelFault, ModelStartError, RunConfigMismatch
from duplexeval.runner.integrity import artifact_fields, item_status, seal_status
from duplexeval.runner.session import SessionOutcome, run_session
from duplexeval.runner.stimulus import Stimulus
from duplexeval.specs.modelspec import ModelSpec, model_spec_from

CONFIG_FILE = "session_config.json"
INTERRUPTED = "INTERRUPTED"  # the server was stopped from outside mid-item: replayed on resume
# Signals that stop a server from outside (a terminal's Ctrl-C reaching a background run's process
# group, a service manager's stop). SIGKILL is not among them: it is also how the OOM killer ends
# a model that ran out of memory, which is the model's fault.
INTERRUPTING = {signal.SIGINT: "SIGINT", signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP", signal.SIGQUIT: "SIGQUIT"}


EXIT_WAIT_S = {"CLOSED": 1.0, "BAD_FRAME": 0.5, "BAD_MESSAGE": 0.5}  # how long a fault may take to become an exit


def interrupting_signal(status: int | None) -> str | None:
    """The name of the outside signal that ended a server with `status` (-N killed by N; 128 + N, as
    run_server exits after a graceful stop on N), else None."""
    if status is None or status == 0:
        return None
    number = -status if status < 0 else status - 128
    return next((name for sig, name in INTERRUPTING.items() if int(sig) == number), None)
ITEM_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
StimulusFactory = Callable[[], Stimulus]


@dataclass(frozen=True)
class ItemResult:
    item_id: str
    status: str  # "ok" | "error"
    reason: str | None
    item_dir: Path
    skipped: bool = False  # finished by an earlier (interrupted) run


def item_seed(seed: int, item_id: str) -> int:
    """Per-item seed: a function of the run seed and the item id only, never of the order run."""
    return int(sha256_json([seed, item_id])[:8], 16)


class ModelHost:
    """Keeps one model server up across items; after a fault it is torn down and restarted
    for the next item, so a crashed or hung model cannot poison the rest of the run."""

    def __init__(self, spec: ModelSpec):
        self.spec = spec
        self.backend: Backend | None = None
        self.endpoint: Endpoint | None = None
        # Once the model could not start, this host's later items are not retried (and say so).
        self.start_error: str | None = None

    def ensure(self) -> Endpoint:
        if self.backend is None or not self.backend.alive():
            self.close()
            self.backend = make_backend(self.spec)
            self.endpoint = self.backend.start()
        assert self.endpoint is not None
        return self.endpoint

    def after_fault(self, fault: ModelFault) -> str:
        """Diagnostics (exit status, stderr tail) for the reason, then a full stop.

        A server stopped by a signal from outside the harness (SIGINT to the process group
        of a background run, SIGTERM, SIGHUP) says nothing about the model: the fault becomes
        INTERRUPTED, which a resume replays (`finished_status`)."""
        if self.backend is None:
            return ""
        # A crashing process closes its socket a moment before it exits; one stopping on a
        # signal may first garble the frames in flight (BAD_FRAME / BAD_MESSAGE).
        deadline = time.monotonic() + EXIT_WAIT_S.get(fault.code, 0.0)
        while self.backend.alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        by = interrupting_signal(self.backend.exit_status())
        if by is not None:
            fault.code = INTERRUPTED
            fault.reason = (f"the model server was stopped by {by} from outside the harness, not by the model: "
                            f"a resume replays this item ({fault.reason})")
        text = self.backend.diagnostics()
        # A hung step never finishes: no point waiting for a graceful exit.
        self.close(grace_s=0.0 if fault.code == "TIMEOUT" else 2.0)
        return text

    def close(self, grace_s: float = 2.0) -> None:
        if self.backend is not None:
            self.backend.stop(grace_s)
        self.backend, self.endpoint = None, None


def run_one(host: ModelHost, stimulus: Stimulus, clock: str, rate: int, seed: int, prompt: str | None) -> SessionOutcome:
    try:
        endpoint = host.ensure()
    except Exception as exc:  # ModelFault(STARTUP), docker.errors.DockerException, OSError
        host.close()
        raise ModelStartError(f"model {host.spec.id} could not be started ({host.spec.backend} backend): {exc}") from exc
    out = asyncio.run(run_session(endpoint, host.spec, stimulus, clock, rate, seed, prompt))
    if out.fault is not None:
        diag = host.after_fault(out.fault)
        out.events[-1]["code"] = out.fault.code
        if diag and diag not in out.fault.reason:
            out.fault.reason = f"{out.fault.reason}; {diag}"
            out.events[-1]["reason"] = out.fault.reason
    return out


def startup_failure(rate: int, reason: str, retried: bool = True) -> SessionOutcome:
    """An item whose model never started: an `error` with the reason, that a resume redoes.

    The item is not lost (it has its status and reason, so a run's denominators keep it)
    and not final either: it says nothing about the model's behaviour, so once the image
    is built or the weights are placed, resuming the run plays it.
    """
    if not retried:
        reason += " (not retried: the model could not be started for an earlier item of this job)"
    out = SessionOutcome(rate=rate)
    out.fault = ModelFault("STARTUP", reason)
    out.event(0, "error", code="STARTUP", reason=reason)
    return out


def finished_status(item_dir: Path) -> dict[str, Any] | None:
    """status.json of a finished item; None for one a resume must (re)play.

    That is an unfinished item, one whose model never started (STARTUP says nothing about
    the model), one a run's --max-cost did not start (BUDGET) and one whose files no
    longer match its status.json (DAMAGED).
    """
    st = item_status(item_dir)
    return None if st is None or st.get("error_code") in ("STARTUP", "BUDGET", "DAMAGED", INTERRUPTED) else st


def write_item(item_dir: Path, outcome: SessionOutcome, spec: ModelSpec, clock: str, seed: int) -> ItemResult:
    """recording.wav and events.jsonl first, status.json last (its presence means finished).

    A write that fails (a full disk, a read-only folder) stops the run with an OSError
    naming the item's folder; the item has no status.json, so a resume replays it.
    """
    try:
        return _write_item(item_dir, outcome, spec, clock, seed)
    except OSError as exc:
        if exc.filename is not None or exc.errno is None:
            raise
        # write() and fsync() say "No space left on device" without saying where.
        raise OSError(exc.errno, exc.strerror or os.strerror(exc.errno), str(item_dir)) from exc


def _write_item(item_dir: Path, outcome: SessionOutcome, spec: ModelSpec, clock: str, seed: int) -> ItemResult:
    item_dir.mkdir(parents=True, exist_ok=True)
    recording = item_dir / "recording.wav"
    status: dict[str, Any] = {
        "model": spec.id, "model_sha256": spec.sha256, "clock": clock, "seed": seed, "proto": PROTOCOL_VERSION,
        "rate": outcome.rate, "frame_samples": outcome.frame_samples, "frames": outcome.frames, **outcome.stats,
    }
    status.update(batch_identity(spec))
    if outcome.ok:
        heard = np.concatenate(outcome.heard) if outcome.heard else np.zeros(0, dtype=np.float32)
        assert outcome.said is not None and len(outcome.said) == len(heard), "recording channels differ in length"
        write_wav(recording, np.stack([heard, outcome.said], axis=1), outcome.rate)
        status.update(status="ok", reason=None, duration_s=round(len(heard) / outcome.rate, 6))
    else:
        # No recording for an error item: nothing downstream can mistake it for silence.
        recording.unlink(missing_ok=True)
        fault = outcome.fault
        assert fault is not None   # not ok means a fault (SessionOutcome.ok)
        status.update(status="error", reason=str(fault), error_code=fault.code, error_frame=fault.frame_idx)
    atomic_write_jsonl(item_dir / "events.jsonl", outcome.events)
    status.update(artifact_fields(item_dir, outcome.ok))  # status.json vouches for the files before it
    atomic_write_json(item_dir / "status.json", seal_status(status))
    return ItemResult(item_dir.name, status["status"], status["reason"], item_dir)


def batch_identity(spec: ModelSpec) -> dict[str, int]:
    """`{"max_sessions": N}` when a session's bytes depend on its server's width (Moshi's
    batched kernels differ from width 1 by float ulps), else nothing: the reference agents'
    folders stay byte-identical at any width and may be resumed at another one."""
    return {"max_sessions": spec.max_sessions} if spec.max_sessions > 1 and not spec.batch_exact else {}


def _check_config(out_dir: Path, config: dict, also_same: dict | None = None) -> None:
    """Refuse to resume a folder run with other settings. `also_same`: per key, an older
    recorded value that still means the same (a folder begun before the key's meaning
    narrowed: `model_sha256` was the whole spec's hash, display fields included)."""
    path = out_dir / CONFIG_FILE
    if path.exists():
        try:
            old = json.loads(path.read_text("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:  # name the file: a bare "Expecting value" helps nobody
            raise ValueError(f"{path}: unreadable ({exc}); it records the settings this folder was run with: "
                             "restore it, or use a new output folder") from None
        if not isinstance(old, dict):
            raise ValueError(f"{path}: not a JSON object; restore it, or use a new output folder")
        same = also_same or {}
        changed = sorted(k for k in set(old) | set(config)
                         if old.get(k) != config.get(k) and not (k in same and old.get(k) == same[k]))
        if changed:
            raise RunConfigMismatch(
                f"{path}: this folder was run with different settings ({', '.join(changed)} changed); "
                f"resume refuses to mix results. Use a new output folder or restore the original spec."
            )
    else:
        atomic_write_json(path, config)


def prepare_out_dir(spec: ModelSpec, ids: list[str], out_dir: str | os.PathLike[str], clock: str, rate: int,
                    seed: int, prompt: str | None, extra: dict[str, Any] | None = None) -> Path:
    """Checks item ids and the resume identity of `out_dir` (shared by run_items and forked runs).

    `extra`: more settings the folder's items depend on (a job plan's `resume_identity`), part
    of that identity only when given, so folders that never had them resume as before."""
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ValueError(f"duplicate item ids: {', '.join(dupes)}")
    for item_id in ids:
        if not ITEM_ID.match(item_id):
            raise ValueError(f"item id {item_id!r} is not a safe folder name (letters, digits, . _ -)")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    # A run killed while writing a top-level file (session_config.json, a job file) left its
    # temp file; the driver that prepares the folder is its only writer (remove_abandoned_temp_files).
    remove_abandoned_temp_files(out)
    # The model's identity leaves its display fields out: renaming it for a report resumes.
    _check_config(out, {"model": spec.id, "model_sha256": spec.identity_sha256 or spec.sha256, "clock": clock,
                        "rate": rate, "seed": seed, "proto": PROTOCOL_VERSION, "prompt_sha256": sha256_json(prompt),
                        **batch_identity(spec), **(extra or {})}, also_same={"model_sha256": spec.sha256})
    return out


def run_items(model_spec: Any, items: Iterable[tuple[str, StimulusFactory]], out_dir: str | os.PathLike[str],
              clock: str = "lockstep", *, rate: int = 16000, seed: int = 0, prompt: str | None = None,
              on_item: Callable[[ItemResult], None] | None = None) -> list[ItemResult]:
    """Runs every item not yet finished in `out_dir/items/<item_id>/`; returns one result per item, in order.

    `items` pairs an item id with a factory, so a skipped item costs no stimulus
    construction. Model faults become `error` items and the run goes on.
    """
    spec = model_spec_from(model_spec)
    items = list(items)
    out = prepare_out_dir(spec, [i for i, _ in items], out_dir, clock, rate, seed, prompt)
    host = ModelHost(spec)
    results = []
    try:
        for item_id, factory in items:
            result = play_item(host, out, item_id, factory, clock, rate=rate, seed=seed, prompt=prompt)
            results.append(result)
            if on_item:
                on_item(result)
    finally:
        host.close()
    return results


def play_item(host: ModelHost, out: Path, item_id: str, factory: StimulusFactory, clock: str, *, rate: int,
              seed: int, prompt: str | None) -> ItemResult:
    """One item of a prepared folder (`prepare_out_dir`) on `host`: skipped when finished, else (re)played.

    The unit of work every executor hands out (duplexeval/executors): all it touches is
    `out/items/<item_id>/`, so items on different hosts never share a file.
    """
    item_dir = out / "items" / item_id
    st = finished_status(item_dir)
    if st is not None:
        return ItemResult(item_id, st["status"], st.get("reason"), item_dir, skipped=True)
    if item_dir.exists():
        shutil.rmtree(item_dir)  # an unfinished attempt (and its temp files) is redone from scratch
    s = item_seed(seed, item_id)
    if host.start_error is not None:
        outcome = startup_failure(rate, host.start_error, retried=False)
    else:
        try:
            outcome = run_one(host, factory(), clock, rate, s, prompt)
        except ModelStartError as exc:
            host.start_error = str(exc)
            outcome = startup_failure(rate, host.start_error)
    return write_item(item_dir, outcome, host.spec, clock, s)


def run_item(model_spec: Any, stimulus: Stimulus, item_dir: str | os.PathLike[str], clock: str = "lockstep", *,
             rate: int = 16000, seed: int = 0, prompt: str | None = None) -> ItemResult:
    """One session in its own model server; writes `item_dir` (recording.wav, events.jsonl, status.json)."""
    spec = model_spec_from(model_spec)
    host = ModelHost(spec)
    try:
        outcome = run_one(host, stimulus, clock, rate, seed, prompt)
    except ModelStartError as exc:
        outcome = startup_failure(rate, str(exc))
    finally:
        host.close()
    return write_item(Path(item_dir), outcome, spec, clock, seed)
