"""Shared test set-up: keep every cache inside the test's own temp folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from duplexeval.processes import PARALLEL_WORKERS_ENV

# `make test` runs the suite on every core with pytest-xdist (`-n N --dist loadfile
# --no-loadscope-reorder`): each module is one work unit, so a module-scoped fixture (an
# embedded-suite run, a Moshi run) is built once, and the modules measured to dominate
# (`--durations`, 2-core machine) go first, so the workers finish together instead of one
# starting a five-minute module last. (`--dist loadgroup` with xdist_group marks did not
# keep a module on one worker with xdist 3.8.0 and pytest 9.2.) Docker modules may run
# beside each other: concurrent builds of one image are safe (wheelhouse), and each test
# cleans up only its own containers.
# Checked against the timeline of 2026-12-04 (bench/test_timeline.py; wall on a worker, the
# machine loaded): embedded 248 s, executors 215 (mostly Ray waiting), moshi_run 203, mtr 168,
# cascaded 69, the two Full-Duplex-Bench runs 58 and 54; every other module under 40 s
# but moshi_batch (65 s), which file order already starts mid-session.
SLOWEST_FIRST = ("test_embedded_e2e", "test_moshi_run", "test_executors_e2e", "test_cascaded_baseline_run",
                 "test_mtr_e2e", "test_fdb_e2e", "test_fdb_v15_e2e", "test_moshi_batch",
                 "test_moshi_conformance", "test_moshi_shim", "test_mtr_context")

# Modules whose tests mostly wait (wall-clock sessions against the realtime stand-in, a hung
# agent's timeout, a retried judge, Docker, ports): marked `wallclock`, so `make test` runs them
# in their own lane, one process at normal priority beside the xdist workers at nice 10
# (scripts/run-tests.sh): a realtime session gets a core when it wants one, and the waits no
# longer idle a worker's core. Chosen from the timeline of 2026-12-05 (wall well above CPU);
# the lane takes ~4.5 min of the ~6.5 of pytest. Slowest first within it too.
WALL_CLOCK = ("test_containers", "test_realtime_bridge", "test_realtime_faults", "test_realtime_runs",
              "test_resources", "test_agents_conformance", "test_judges_llm", "test_runner_faults",
              "test_realtime_cost", "test_judges_cache", "test_weights")


# Modules whose tests run real models on audio end to end (or play on the wall clock): marked
# `slow` here, so `make test-fast` (`-m "not slow"`) leaves them out of the inner loop.
# `make test` runs them all.
END_TO_END = (*SLOWEST_FIRST, "test_containers", "test_realtime_runs", "test_realtime_bridge",
              "test_recordings_import", "test_qwen3_venv", "test_asr_parakeet_venv")


def pytest_collection_modifyitems(config, items):
    rank = {name: n for n, name in enumerate((*SLOWEST_FIRST, *WALL_CLOCK))}
    items.sort(key=lambda item: rank.get(item.module.__name__, len(rank)))  # stable: file order kept within
    for item in items:
        if item.module.__name__ in END_TO_END:
            item.add_marker(pytest.mark.slow)
        if item.module.__name__ in WALL_CLOCK:
            item.add_marker(pytest.mark.wallclock)


# ---- a timeline of CPU per test (`DUPLEXEVAL_TEST_TIMELINE=FILE`; bench/test_timeline.py reads it) --
# The machine is shared, so wall time says little: each phase of each test appends one JSON
# line with its wall time and the CPU of the worker and of its children that ended meanwhile
# (model servers, ASR subprocesses), with the worker's name and the phase's start time.
TIMELINE_ENV = "DUPLEXEVAL_TEST_TIMELINE"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    with _timed(item, "setup"):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    with _timed(item, "call"):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    with _timed(item, "teardown"):
        yield


class _timed:
    def __init__(self, item, phase: str) -> None:
        self.path = os.environ.get(TIMELINE_ENV)
        self.item, self.phase = item, phase

    @staticmethod
    def _cpu() -> float:
        import resource

        me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

    def __enter__(self) -> None:
        if self.path:
            import time

            self.t0, self.c0 = time.time(), self._cpu()

    def __exit__(self, *exc) -> None:
        if self.path:
            import json
            import time

            line = {"test": self.item.nodeid, "module": self.item.module.__name__, "phase": self.phase,
                    "start": round(self.t0, 3), "wall_s": round(time.time() - self.t0, 3),
                    "cpu_s": round(self._cpu() - self.c0, 3), "worker": os.environ.get("PYTEST_XDIST_WORKER", "main")}
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps(line) + "\n")


def shared_cache_dir(tmp_path_factory) -> Path:
    """The one cache folder of this test session, shared by the xdist workers of one run
    (every cache entry is written atomically under its hash)."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "cache"


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory):
    # Tests must not read or write the user's .cache; one cache per session keeps the
    # (slow to build) TTS, ASR and VAD caches shared between tests of one run. Session
    # scope, not a function-scoped monkeypatch: module fixtures (an embedded-suite run) are
    # set up before any function-scoped fixture and would otherwise use the checkout's
    # .cache, so a warm checkout timed and tested differently from a clean clone.
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DUPLEXEVAL_CACHE", str(shared_cache_dir(tmp_path_factory)))
        # xdist workers share the cores, as `--executor local` workers do (duplexeval/processes.py).
        mp.setenv(PARALLEL_WORKERS_ENV, os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
        # `run` writes its report at the end by default; the many test runs skip it (seconds
        # each) and tests/test_run_repeat.py checks it with DUPLEXEVAL_RUN_REPORT=1.
        mp.setenv("DUPLEXEVAL_RUN_REPORT", "0")
        yield


# ---- the Docker engine (tests marked `docker`) ----------------------------------------
# With CI=true the engine is part of the test environment (.ci/run starts one): a missing
# engine fails these tests instead of skipping them, so CI cannot go green without ever
# starting a container. Elsewhere they skip with the reason.
@pytest.fixture(scope="session")
def docker_engine():
    import os

    from duplexeval.containers import EngineUnavailable, docker_client

    try:
        return docker_client()
    except EngineUnavailable as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {exc}")
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def agents_image(docker_engine):
    """The base and the agents image, built once per test session (skipped when up to date)."""
    from duplexeval.containers.base_image import ensure_base_image
    from duplexeval.containers.build import build_image
    from duplexeval.runner import load_model_spec

    ensure_base_image(docker_engine, progress=lambda line: None)
    spec = load_model_spec("silent")
    build_image(docker_engine, spec, progress=lambda line: None)
    return spec.image
