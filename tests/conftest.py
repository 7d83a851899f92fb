"""Shared test set-up: keep every cache inside the test's own temp folder."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    # Tests must not read or write the user's .cache; one cache per session keeps the
    # (slow to build) TTS and ASR caches shared between tests of one run.
    monkeypatch.setenv("DUPLEXEVAL_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
