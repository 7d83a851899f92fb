"""Executors end to end (issue 15, item 2): the embedded suite's oracle and babbler on Duplex-MPE
plus one forked MTR job give byte-identical item files, records.jsonl and results.json under
`--executor serial`, `--executor local --jobs 2` and `--executor ray` on a local two-CPU Ray
cluster that this module starts; so does a Ray run whose actor is SIGKILLed mid-run, and a
local run whose driver is SIGKILLed mid-run and then resumed. The reference agents hold 4
sessions per server (`launch.max_sessions`), so every one of these runs plays batches of
units, and a serial run one session at a time (`--max-sessions 1`) gives the same bytes
(issue 26). Real model servers, real VAD/ASR, a real Ray cluster (no stand-ins)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from duplexeval.commands.run import run_suite
from duplexeval.specs.modelspec import REPO_ROOT

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.slow
MODELS = ["oracle", "babbler"]
BENCHES = ["mpe-explicit", "mtr-combo-s"]
LIMIT = 2  # two conversations per MPE job, two dialogues (ten forked rounds) per MTR job


def _snapshot(run: Path) -> dict[str, bytes]:
    """Every file a run's numbers depend on: item files, records, results (not the manifest, which
    records the executor and the time)."""
    out = {}
    for p in sorted(run.rglob("*")):
        rel = p.relative_to(run)
        if p.is_file() and rel.parts[0] not in (".claims", ".workers") and rel.name != "manifest.json":
            out[str(rel)] = p.read_bytes()
    return out


def _run(root: Path, run_id: str, **kw):
    return run_suite("embedded", models=MODELS, benchmarks=BENCHES, run_id=run_id, runs_dir=root, limit=LIMIT,
                     clock=None, **kw)


def _cli(root: Path, run_id: str, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "duplexeval.cli", "run", "--models", ",".join(MODELS),
                             "--benchmarks", ",".join(BENCHES), "--limit", str(LIMIT), "--runs-dir", str(root),
                             "--run-id", run_id, *extra], cwd=REPO_ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan that no init reaps in a container still answers kill 0)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def _finished(run: Path) -> int:
    return len(list(run.glob("*/*/items/*/status.json")))


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("executors")


@pytest.fixture(scope="module")
def serial(root) -> dict[str, bytes]:
    run, outcomes = _run(root, "serial")  # in the session's shared cache (conftest.py sets it first)
    assert [o.status for o in outcomes] == ["scored"] * 4
    snap = _snapshot(run)
    assert sum(1 for k in snap if k.endswith("records.jsonl") and not k.startswith("text-reference")) == 4
    return snap


@pytest.fixture(scope="module")
def cluster():
    """A local Ray cluster with two CPUs (two actors at once), no dashboard, a small object store;
    its workers inherit the tests' cache folder (conftest.py sets it for the session)."""
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=100 * 1024 * 1024, log_to_driver=False)
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


def test_one_session_at_a_time_equals_batched_sessions(root, serial):
    run, _ = _run(root, "one-at-a-time", max_sessions=1)
    assert _snapshot(run) == serial
    assert json.loads((run / "manifest.json").read_text())["max_sessions"] == {
        "cap": 1, "models": {"oracle": 1, "babbler": 1}}
    batched = json.loads((root / "serial" / "manifest.json").read_text())["max_sessions"]
    assert batched == {"cap": None, "models": {"oracle": 4, "babbler": 4}}


def test_local_jobs_2_equals_serial(root, serial):
    run, _ = _run(root, "local", executor="local", jobs=2)
    assert _snapshot(run) == serial
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["executor"]["name"] == "local" and manifest["executor"]["jobs"] == 2
    assert not (run / ".claims").exists() and not (run / ".workers").exists()


def test_a_killed_local_driver_resumes_to_the_serial_bytes(root, serial):
    run = root / "local-killed"
    proc = _cli(root, "local-killed", "--executor", "local", "--jobs", "2")
    deadline = time.monotonic() + 300
    while _finished(run) < 1 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    workers = [json.loads(p.read_text()) for p in (run / ".workers").glob("*.json")]
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = _finished(run)
    assert 1 <= done < 24, "the kill must land mid-run"
    assert list((run / ".claims").rglob("*.claim")), "a killed driver leaves its (now stale) claims"
    assert workers
    deadline = time.monotonic() + 10
    while any(_running(w["pid"]) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    # Workers die with their driver (PR_SET_PDEATHSIG), and their model servers with them.
    assert not any(_running(w["pid"]) for w in workers)
    resumed = _cli(root, "local-killed", "--executor", "local", "--jobs", "2")
    out, _ = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, out
    assert _snapshot(run) == serial


def test_ray_cli_on_a_two_cpu_cluster_equals_serial(root, serial, cluster):
    proc = _cli(root, "ray", "--executor", "ray", "--jobs", "2", "--ray-address", cluster)
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out
    run = root / "ray"
    assert _snapshot(run) == serial
    shape = json.loads((run / "manifest.json").read_text())["executor"]
    assert shape["name"] == "ray" and shape["cluster"]["nodes"] == 1 and shape["cluster"]["cpus"] == 2.0


def test_a_ray_actor_killed_mid_run_is_replaced_and_the_run_equals_serial(root, serial, cluster, capsys):
    run = root / "ray-killed"
    killed: list[tuple[int, int]] = []

    def killer() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            workers = [json.loads(p.read_text()) for p in (run / ".workers").glob("*.json")] \
                if (run / ".workers").is_dir() else []
            if workers and _finished(run) >= 1:
                # Every actor placed so far: one of them may sit idle (its model's last units
                # are on the other), but units remain, so at least one dies busy or is given
                # one after its death; either way its unit goes back to the queue.
                done = _finished(run)
                for w in workers:
                    os.kill(w["pid"], signal.SIGKILL)
                    killed.append((w["pid"], done))
                return
            time.sleep(0.1)

    t = threading.Thread(target=killer, daemon=True)
    t.start()
    _run(root, "ray-killed", executor="ray", jobs=2)
    t.join(5)
    assert killed and killed[0][1] < 24, f"the kill must land mid-run: {killed}"
    assert "worker lost" in capsys.readouterr().err  # its unit went back to the queue, on a new actor
    assert _snapshot(run) == serial


def test_ray_scoring_tasks_and_actors_size_their_threads_by_their_reservation(cluster):
    """A scoring task reserves 1 CPU; its ASR must not size its threads by the whole node
    (here: a node whose processes nobody told how many share it, 2 cores)."""
    from duplexeval.executors.ray import SCORE_OPTIONS, actor_options
    from duplexeval.processes import PARALLEL_WORKERS_ENV, cores_per_worker

    reserved = SCORE_OPTIONS["runtime_env"]["env_vars"]
    on_a_node = {**SCORE_OPTIONS, "runtime_env": {"env_vars": {**reserved, PARALLEL_WORKERS_ENV: "1"}}}
    assert ray.get(ray.remote(**on_a_node)(cores_per_worker).remote(), timeout=120) == 1
    assert (actor_options()["num_cpus"], actor_options()["runtime_env"]) == (1, SCORE_OPTIONS["runtime_env"])
    # a CPU-only model's server reserves a fraction of a core (packing.cpu_share): Ray places it,
    # and its ASR still gets one thread
    share = actor_options(0.1063)
    fraction = {**share, "runtime_env": {"env_vars": {**share["runtime_env"]["env_vars"], PARALLEL_WORKERS_ENV: "1"}}}
    assert ray.get(ray.remote(cores_per_worker).options(**{k: fraction[k] for k in ("num_cpus", "runtime_env")})
                   .remote(), timeout=120) == 1
