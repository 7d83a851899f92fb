"""`duplexeval image build`: a clear error, never a traceback, where it cannot build."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from duplexeval.cli import cli


def _engine_reachable() -> bool:
    try:
        import docker

        docker.from_env().ping()
        return True
    except Exception:
        return False


def test_a_typo_in_the_model_id_is_one_line_with_a_suggestion():
    result = CliRunner().invoke(cli, ["image", "build", "silnet"])
    assert result.exit_code == 2 and "did you mean 'silent'" in result.output
    assert "Traceback" not in result.output


@pytest.mark.skipif(_engine_reachable(), reason="a Docker engine is reachable: this tests the no-engine path")
def test_without_an_engine_the_error_says_so():
    result = CliRunner().invoke(cli, ["image", "build", "moshi"])
    assert result.exit_code == 2 and "no Docker engine reachable" in result.output
    assert "Traceback" not in result.output
