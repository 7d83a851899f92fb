"""Resume: a lockstep run killed with SIGKILL at several points and started again equals an
uninterrupted run byte for byte; a resume with a changed spec is refused (issue 3)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from runner_helpers import tone

from duplexeval.runner import FileStimulus, RunConfigMismatch, load_model_spec, run_items
from duplexeval.specs.modelspec import REPO_ROOT

TESTS = Path(__file__).parent
MODEL = "babbler"  # speaks at 24 kHz: both resampling directions are part of what must repeat


def _child(out: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), str(REPO_ROOT)]))
    return subprocess.Popen([sys.executable, str(TESTS / "runner_resume_child.py"), str(out), MODEL],
                            env=env, cwd=REPO_ROOT, stderr=subprocess.PIPE)


def _finished(out: Path) -> int:
    return len(list(out.glob("items/*/status.json")))


def _snapshot(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def _item_times(out: Path, started: float) -> tuple[float, float]:
    """(seconds until the first item landed, median seconds between items) of a finished run."""
    landed = sorted(p.stat().st_mtime for p in out.glob("items/*/status.json"))
    gaps = sorted(b - a for a, b in zip(landed, landed[1:]))
    return landed[0] - started, gaps[len(gaps) // 2]


def test_sigkill_at_several_points_then_resume_equals_an_uninterrupted_run(tmp_path):
    reference = tmp_path / "reference"
    started = time.time()
    proc = _child(reference)
    assert proc.wait(timeout=120) == 0, proc.stderr.read().decode()
    # The kill delays are fractions of this machine's own pace (fixed delays let a fast
    # machine finish every item before the last kill, a slow one kill before any began).
    first, period = _item_times(reference, started)

    resumed = tmp_path / "resumed"
    # Kill points: during model start-up or the first item, mid-session halfway through the
    # item after 1 and after 3 finished items, and as soon as item 4's folder appears
    # (while its files are being written, when it lands).
    for finished_before_kill, extra_delay, folder in [(0, 0.5 * first, None), (1, 0.5 * period, None),
                                                      (3, 0.5 * period, None), (0, 0.0, "item-04")]:
        proc = _child(resumed)
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline and (
                _finished(resumed) < finished_before_kill or (folder and not (resumed / "items" / folder).exists())):
            time.sleep(0.001)
        time.sleep(extra_delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert _finished(resumed) < 6, f"the kills came too late to interrupt the run (first item {first:.3f} s, then one per {period:.3f} s)"
    proc = _child(resumed)
    assert proc.wait(timeout=120) == 0, proc.stderr.read().decode()

    ref, res = _snapshot(reference), _snapshot(resumed)
    assert sorted(ref) == sorted(res)  # no lost, duplicated or stray (temp) files
    assert len([k for k in ref if k.endswith("status.json")]) == 6
    differing = [k for k in ref if ref[k] != res[k]]
    assert not differing


def test_resume_with_a_changed_spec_is_refused(tmp_path):
    spec = dict(load_model_spec("silent").data)
    items = [("a", lambda: FileStimulus(tone(0.3), 16000))]
    assert run_items(spec, items, tmp_path)[0].status == "ok"
    assert run_items(spec, items, tmp_path)[0].skipped  # same spec: finished items are kept
    changed = dict(spec, capabilities=["fork"])
    with pytest.raises(RunConfigMismatch, match="model_sha256 changed"):
        run_items(changed, items, tmp_path)


def test_display_fields_stay_out_of_the_resume_identity(tmp_path):
    """Renaming a model for the report (name, description) resumes; a launch change does not."""
    spec = dict(load_model_spec("silent").data)
    items = [("a", lambda: FileStimulus(tone(0.3), 16000))]
    assert run_items(spec, items, tmp_path)[0].status == "ok"
    renamed = dict(spec, name="Silent, renamed for the paper table", description="shown in reports only")
    assert run_items(renamed, items, tmp_path)[0].skipped
    relaunched = dict(renamed, launch={**spec["launch"], "step_timeout_s": 3})
    with pytest.raises(RunConfigMismatch, match="model_sha256 changed"):
        run_items(relaunched, items, tmp_path)


def test_a_folder_begun_with_the_whole_spec_hash_still_resumes(tmp_path):
    """Folders from before the identity left display fields out recorded the whole spec's hash."""
    import json

    from duplexeval.specs.modelspec import model_spec_from

    spec = dict(load_model_spec("silent").data)
    items = [("a", lambda: FileStimulus(tone(0.3), 16000))]
    assert run_items(spec, items, tmp_path)[0].status == "ok"
    config = tmp_path / "session_config.json"
    recorded = json.loads(config.read_text())
    recorded["model_sha256"] = model_spec_from(spec).sha256  # what such a folder holds
    config.write_text(json.dumps(recorded))
    assert run_items(spec, items, tmp_path)[0].skipped


def test_a_temp_file_left_by_a_kill_mid_write_is_gone_after_the_resume(tmp_path):
    """A SIGKILL between an atomic write's temp file and its rename (seen once at the start-up
    kill point above: `.session_config.json.<random>.tmp` next to no session_config.json) left
    the temp file in the folder for good; the resume now removes it. The other files stay, and
    a folder below the top level (an item's) is not the sweep's business."""
    spec = dict(load_model_spec("silent").data)
    items = [("a", lambda: FileStimulus(tone(0.3), 16000))]
    tmp_path.mkdir(exist_ok=True)
    abandoned = tmp_path / ".session_config.json.k1ll3d.tmp"
    abandoned.write_text('{"model": "sil')  # half a write: never the file it was to become
    kept = tmp_path / "notes.tmp"  # not an atomic write's temp name
    kept.write_text("the user's")
    assert run_items(spec, items, tmp_path)[0].status == "ok"
    assert not abandoned.exists() and kept.read_text() == "the user's"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["items", "notes.tmp", "session_config.json"]
    (tmp_path / ".records.jsonl.x.tmp").write_text("")  # a resume of a finished folder sweeps too
    assert run_items(spec, items, tmp_path)[0].skipped
    assert not (tmp_path / ".records.jsonl.x.tmp").exists()
