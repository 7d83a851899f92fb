"""Shared test set-up: keep every cache inside the test's own temp folder."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    # Tests must not read or write the user's .cache; one cache per session keeps the
    # (slow to build) TTS and ASR caches shared between tests of one run.
    monkeypatch.setenv("DUPLEXEVAL_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


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
