"""Resources after a run, and a run whose folder fills up or turns read-only mid-run.

- open file descriptors, `/tmp/dxe-*` socket folders and child processes of this process
  are back to their starting count after a run of several items with healthy and faulty
  agents (a crash, a hang, a dropped socket, garbage on the wire);
- a full disk (a real 256 KiB tmpfs when we may mount one, else a file-size rlimit in a
  subprocess) or a read-only run folder during a run stops it with an OSError naming
  the path, which the CLI boundary prints as a one-line expected error; no item is left
  marked finished that is not complete (runner.integrity.item_status), and once the
  space is back, resuming finishes the run.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from runner_helpers import faulty_spec, tone

from duplexeval.cli_errors import is_expected, user_message
from duplexeval.runner import FileStimulus, load_model_spec, run_items
from duplexeval.runner.backends.base import OWNER_FILE, SOCKET_DIR_PREFIX
from duplexeval.runner.integrity import item_status
from duplexeval.specs.modelspec import REPO_ROOT

RATE = 16000


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def my_socket_dirs() -> set[str]:
    """/tmp/dxe-* folders this process made (other test runs on the machine make theirs)."""
    mine = set()
    for name in os.listdir("/tmp"):
        if name.startswith(SOCKET_DIR_PREFIX):
            try:
                if Path("/tmp", name, OWNER_FILE).read_text().strip() == str(os.getpid()):
                    mine.add(name)
            except OSError:
                pass
    return mine


def children() -> set[int]:
    kids = set()
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                stat = Path("/proc", pid, "stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if fields[0] != "Z" and int(fields[1]) == os.getpid():
                kids.add(int(pid))
    return kids


def items(n: int, seconds: float = 0.5):
    return [(f"i{k}", lambda k=k: FileStimulus(tone(seconds, seed=k), RATE)) for k in range(n)]


@pytest.mark.parametrize("spec", ["silent", "crash", "hang", "close", "garbage"])
def test_fds_socket_folders_and_children_are_back_to_their_start_after_a_run(spec, tmp_path):
    model = load_model_spec("silent") if spec == "silent" else faulty_spec(spec, at_frame=2, step_timeout_s=0.5)
    run_items(model, items(1), tmp_path / "warm")  # imports, lazily opened files
    fds, dirs, kids = open_fds(), my_socket_dirs(), children()
    results = run_items(model, items(3), tmp_path / "run")
    assert [r.status for r in results] == ["ok" if spec == "silent" else "error"] * 3
    assert open_fds() == fds, f"leaked fds: {sorted(open_fds() - fds)}"
    assert my_socket_dirs() == dirs
    assert children() == kids


def _assert_no_false_finish(run: Path) -> None:
    """Every item with a status.json is complete (item_status vouches for its files)."""
    for item in sorted((run / "items").iterdir()):
        if (item / "status.json").exists():
            st = item_status(item)
            assert st is not None and st.get("error_code") != "DAMAGED", (item, st)


def _stopped_cleanly(exc: OSError, run: Path) -> None:
    assert is_expected(exc)
    msg = user_message(exc)
    assert str(run) in msg, msg  # names the folder, not just "[Errno 28]"
    assert len(msg.splitlines()) <= 2


@pytest.fixture
def small_disk(tmp_path):
    """A 256 KiB tmpfs (root only); always unmounted."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "disk"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        if subprocess.run(["umount", str(mnt)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def _fill(folder: Path) -> Path:
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 512)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    return filler


def test_a_disk_that_fills_up_mid_run_stops_it_and_leaves_no_false_finish(small_disk):
    run = small_disk / "run"
    state = {"filler": None}

    def after(result):
        if state["filler"] is None:
            state["filler"] = _fill(small_disk)

    with pytest.raises(OSError) as info:
        run_items(load_model_spec("silent"), items(3, seconds=0.3), run, on_item=after)
    assert info.value.errno == errno.ENOSPC
    _stopped_cleanly(info.value, run)
    assert item_status(run / "items" / "i0")["status"] == "ok"
    assert item_status(run / "items" / "i1") is None  # started, not finished
    _assert_no_false_finish(run)
    state["filler"].unlink()  # space is back: the resume plays the rest
    results = run_items(load_model_spec("silent"), items(3, seconds=0.3), run)
    assert [r.skipped for r in results] == [True, False, False] and {r.status for r in results} == {"ok"}
    _assert_no_false_finish(run)


def test_a_run_folder_that_turns_read_only_mid_run_stops_it_and_leaves_no_false_finish(small_disk):
    # chmod does not stop root: remount the tmpfs read-only (EROFS) as the run goes.
    run = small_disk / "run"

    def after(result):
        if result.item_id == "i0":
            subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)

    try:
        with pytest.raises(OSError) as info:
            run_items(load_model_spec("silent"), items(3, seconds=0.3), run, on_item=after)
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)
    assert info.value.errno == errno.EROFS
    _stopped_cleanly(info.value, run)
    assert item_status(run / "items" / "i0")["status"] == "ok"
    _assert_no_false_finish(run)


def test_a_read_only_run_folder_as_a_non_root_user_is_a_permission_error(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes through chmod; the read-only tmpfs test covers it")
    run = tmp_path / "run"
    run_items(load_model_spec("silent"), items(1), run)
    (run / "items").chmod(0o555)
    try:
        with pytest.raises(OSError) as info:
            run_items(load_model_spec("silent"), items(3), run)
        assert info.value.errno == errno.EACCES
        _stopped_cleanly(info.value, run)
        _assert_no_false_finish(run)
    finally:
        (run / "items").chmod(0o755)


FSIZE_CHILD = """
import errno, json, resource, signal, sys
from duplexeval.cli_errors import is_expected, user_message
from duplexeval.runner import FileStimulus, load_model_spec, run_items
sys.path.insert(0, "tests")
from runner_helpers import tone
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit is EFBIG, not a kill
resource.setrlimit(resource.RLIMIT_FSIZE, (60_000, 60_000))
lengths = {"short": 0.3, "long": 2.0, "after": 0.3}  # 0.3 s fits (~19 KB), 2 s does not (~128 KB)
its = [(k, (lambda s=s: FileStimulus(tone(s), 16000))) for k, s in lengths.items()]
try:
    run_items(load_model_spec("silent"), its, sys.argv[1])
except OSError as exc:
    print(json.dumps({"errno": exc.errno, "expected": is_expected(exc), "message": user_message(exc)}))
else:
    print(json.dumps({"errno": None}))
"""


def test_a_file_size_limit_mid_run_stops_it_and_leaves_no_false_finish(tmp_path):
    """The unprivileged stand-in for a full disk: RLIMIT_FSIZE in a child runner."""
    run = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    r = subprocess.run([sys.executable, "-c", FSIZE_CHILD, str(run)], cwd=REPO_ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["errno"] == errno.EFBIG and out["expected"], out
    assert str(run) in out["message"], out
    assert item_status(run / "items" / "short")["status"] == "ok"
    assert item_status(run / "items" / "long") is None and not (run / "items" / "after").exists()
    _assert_no_false_finish(run)
