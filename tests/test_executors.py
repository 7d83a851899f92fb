"""Executors, the fast part: exclusive unit claims (O_EXCL across processes, stale claims of a
dead driver reclaimed, a live driver's claims never taken), unit reports, option errors.
The byte-identity of serial, local and Ray runs is tests/test_executors_e2e.py."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from duplexeval.executors import make_pool
from duplexeval.executors.base import Unit, UnitReport
from duplexeval.executors.claims import Claims

UNITS = [Unit("m/b", f"u{i:02d}", (f"u{i:02d}",), "m@x:local") for i in range(40)]


def _claim_all(run_dir: str, start, out) -> None:
    claims = Claims(Path(run_dir))
    start.wait()
    out.put([u.key for u in UNITS if claims.try_claim(u)])


def test_two_drivers_racing_for_the_same_units_never_both_own_one(tmp_path):
    ctx = mp.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_claim_all, args=(str(tmp_path), start, out)) for _ in range(2)]
    for p in procs:
        p.start()
    start.set()
    won = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(30)
    # Both drivers are alive while they claim: every unit has exactly one owner.
    assert sorted(won[0] + won[1]) == sorted(u.key for u in UNITS)
    assert not set(won[0]) & set(won[1])


def test_a_claim_of_a_killed_driver_is_reclaimed_and_a_live_ones_is_not(tmp_path):
    child = subprocess.run([sys.executable, "-c", (
        "import sys; from pathlib import Path; from duplexeval.executors.claims import Claims;"
        "from duplexeval.executors.base import Unit;"
        "c = Claims(Path(sys.argv[1])); assert c.try_claim(Unit('m/b', 'u00', ('u00',), 'k'))"), str(tmp_path)],
        check=True)
    assert child.returncode == 0  # exited without releasing: its claim is stale now
    unit = Unit("m/b", "u00", ("u00",), "k")
    claims = Claims(tmp_path)
    assert claims.owner_of(unit)["pid"] != os.getpid()
    assert claims.try_claim(unit)
    assert claims.owner_of(unit)["token"] == claims.owner["token"]

    # A live driver (this process, another Claims instance = another token would be stale;
    # a live child process is not): its claim is never taken.
    live = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from pathlib import Path; from duplexeval.executors.claims import Claims;"
        "from duplexeval.executors.base import Unit;"
        "c = Claims(Path(sys.argv[1])); assert c.try_claim(Unit('m/b', 'u01', ('u01',), 'k')); print('ok', flush=True);"
        "time.sleep(60)"), str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert live.stdout.readline().strip() == "ok"
        held = Unit("m/b", "u01", ("u01",), "k")
        assert not claims.try_claim(held)
        assert f"pid {live.pid}" in claims.foreign(held)
    finally:
        live.send_signal(signal.SIGKILL)
        live.wait()
    assert claims.try_claim(held)  # its driver is gone now


def test_a_claim_from_another_host_is_never_reclaimed(tmp_path):
    unit = Unit("m/b", "u00", ("u00",), "k")
    claims = Claims(tmp_path)
    claims.path(unit).parent.mkdir(parents=True)
    claims.path(unit).write_text(json.dumps({"host": "elsewhere", "pid": 1, "token": "t"}))
    assert not claims.try_claim(unit)


def test_released_claims_leave_no_claims_folder(tmp_path):
    claims = Claims(tmp_path)
    for u in UNITS[:3]:
        assert claims.try_claim(u)
        claims.release(u)
    claims.cleanup()
    assert not (tmp_path / ".claims").exists()


def test_a_unit_report_names_the_first_item_that_did_not_finish_ok():
    assert UnitReport("k", [("a", "ok", None, False)], "w").state == "ok"
    assert UnitReport("k", [("a", "ok", None, True), ("b", "ok", None, True)], "w").state == "skipped (done)"
    assert UnitReport("k", [("a", "ok", None, False), ("b", "error", "TIMEOUT", False)], "w").state == "b error: TIMEOUT"


def test_executor_options_that_cannot_go_together_are_refused(tmp_path):
    from click.testing import CliRunner

    from duplexeval.cli import cli  # imported here: the racing test's spawned children import this module

    with pytest.raises(ValueError, match="--jobs 2 needs --executor local or ray"):
        make_pool("serial", tmp_path, jobs=2)
    with pytest.raises(ValueError, match="--ray-address needs --executor ray"):
        make_pool("local", tmp_path, jobs=1, ray_address="127.0.0.1:6379")
    res = CliRunner().invoke(cli, ["run", "--models", "silent", "--benchmarks", "mpe-explicit", "--jobs", "2",
                                   "--runs-dir", str(tmp_path)])
    assert res.exit_code == 2 and "--jobs 2 needs --executor local or ray" in res.output


def test_a_local_pool_replaces_a_worker_killed_while_idle(tmp_path):
    pool = make_pool("local", tmp_path, jobs=1)
    try:
        deadline = time.monotonic() + 60
        while not pool.registry.workers() and time.monotonic() < deadline:
            time.sleep(0.1)
        (worker,) = pool.registry.workers()
        os.kill(worker["pid"], signal.SIGKILL)
        deadline = time.monotonic() + 20
        while pool.slots[0].process.pid == worker["pid"] and time.monotonic() < deadline:
            pool.wait(1)
        assert pool.slots[0].process.pid != worker["pid"] and pool.slots[0].process.is_alive()
    finally:
        pool.close()
    assert not (tmp_path / ".workers").exists()


def test_parallel_workers_share_the_cores_between_their_asr_threads(monkeypatch):
    from duplexeval.judges.asr_backends.faster_whisper_backend import cpu_threads
    from duplexeval.processes import PARALLEL_WORKERS_ENV

    monkeypatch.delenv("DUPLEXEVAL_ASR_THREADS", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    threads = []
    for workers in ("", "1", "2", "3", "8", "16"):
        monkeypatch.setenv(PARALLEL_WORKERS_ENV, workers)
        threads.append(cpu_threads())
    assert threads == [4, 4, 4, 2, 1, 1]
    monkeypatch.setenv("DUPLEXEVAL_ASR_THREADS", "3")
    assert cpu_threads() == 3  # the user's setting wins



class _StandInPlan:
    """A stand-in for a job plan (the scheduler only asks for its key, units and what is finished)."""

    def __init__(self, key: str, n: int, host: str):
        self.key, self.played = key, set()
        self._units = [Unit(key, f"u{i}", (f"u{i}",), host) for i in range(n)]

    def units(self):
        return self._units

    def finished(self, unit):
        return unit.key in self.played


class _StandInPool:
    """Plays a unit at once in this process (a stand-in for model servers), records what happened."""

    def __init__(self):
        self.events, self.log = [], []

    def pending(self):
        return False

    def free(self, unit, plan):
        return not self.events

    def submit(self, plan, unit):
        from duplexeval.executors.core import Event

        plan.played.add(unit.key)
        self.log.append(("unit", unit.key))
        self.events.append(Event("unit", unit=unit, report=UnitReport(unit.key, [(unit.unit_id, "ok", None, False)], "w")))

    def flush(self):
        pass  # each unit was played at submit

    def score(self, plan):
        from duplexeval.executors.core import Event

        self.log.append(("score", plan.key))
        self.events.append(Event("scored", job_key=plan.key, results={"n": len(plan.played)}))

    def retire(self, host):
        self.log.append(("retire", host))

    def wait(self, timeout):
        events, self.events = self.events, []
        return events


class _Feed:
    """Hands plans over one by one, each once the job before it was scored (so its host ran out of units)."""

    def __init__(self, plans, pool, error=None):
        self.plans, self.pool, self.error, self.done = list(plans), pool, error, False

    def take(self, timeout):
        if not self.plans:
            self.done = True
            if self.error:
                raise self.error
            return []
        if timeout == 0 and self.pool.log and self.pool.log[-1][0] != "score":
            return []
        return [self.plans.pop(0)]


def test_plans_handed_over_while_units_play_are_all_played_and_a_host_retires_once_nothing_can_come(tmp_path):
    from duplexeval.executors.core import schedule

    pool = _StandInPool()
    a, b, c = _StandInPlan("m/a", 2, "m@x"), _StandInPlan("m/b", 1, "m@x"), _StandInPlan("n/c", 1, "n@y")
    results = schedule([], pool, Claims(tmp_path), lambda line: None, _Feed([a, b, c], pool))
    assert results == {"m/a": {"n": 2}, "m/b": {"n": 1}, "n/c": {"n": 1}}
    units = [k for kind, k in pool.log if kind == "unit"]
    assert sorted(units) == ["m/a/u0", "m/a/u1", "m/b/u0", "n/c/u0"]
    assert units.index("m/a/u1") < units.index("m/b/u0")  # the first job played before the next was planned
    retired = [k for kind, k in pool.log if kind == "retire"]
    # m@x ran out of units while plans could still come (m/b did): retired once, after planning ended
    assert sorted(retired) == ["m@x", "n@y"]
    assert pool.log.index(("retire", "m@x")) > pool.log.index(("unit", "m/b/u0"))


def test_what_planning_raises_stops_the_run_with_its_error(tmp_path):
    from duplexeval.executors.core import schedule

    pool = _StandInPool()
    with pytest.raises(ValueError, match="bad data"):
        schedule([], pool, Claims(tmp_path), lambda line: None,
                 _Feed([_StandInPlan("m/a", 1, "m@x")], pool, ValueError("bad data")))
    assert not (tmp_path / ".claims").exists()
