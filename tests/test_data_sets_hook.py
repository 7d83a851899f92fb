"""`duplexeval data fetch|verify|path NAME` reaches the sets each family declares through its
`data_sets()` hook (the `Data` group): the core's data modules list none of their own.

The built-in families' declarations are pinned by name, kind and pinning spec (the same four
sets the harness always knew). A stand-in family (`StandInFamily`, a Benchmark subclass
declared here, no real data) shows a URL set's download and check reached through the hook,
with the exit code and message its `UrlSetError` carries, and that a hook declaring no way to
fetch a URL set is a one-line error, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from duplexeval.benchmarks import registry
from duplexeval.benchmarks.base import Benchmark
from duplexeval.cli import cli
from duplexeval.data import sets


def test_the_built_in_families_declare_the_four_sets_the_harness_knew():
    got = {name: (family, ds.kind, ds.spec) for name, (family, ds) in registry.data_sets().items()}
    assert got == {
        "mtr-duplexbench": ("mtr-duplexbench", "hub", "mtr-smooth-turn-taking"),
        "duplex-mpe": ("duplex-mpe", "hub", "mpe-explicit"),
        "advbench": ("mtr-duplexbench", "url", "mtr-safety"),
        "llama-questions": ("mtr-duplexbench", "url", "mtr-instruction"),
    }
    every = {name: ds for name, (_, ds) in registry.data_sets().items()}
    assert all(ds.url_file is not None for ds in every.values() if ds.kind == "url")
    assert (every["duplex-mpe"].unit, every["duplex-mpe"].per) == ("scenes", "condition")
    assert (every["mtr-duplexbench"].unit, every["mtr-duplexbench"].per) == ("dialogues", "set")


class StandInFamily(Benchmark):
    """A stand-in family: one URL set whose file lives in a folder of the test's own."""

    family = "stand-in"
    folder: Path
    url_file: sets.UrlFile | None

    def plan(self, job, bench_dir, *, clock, seed, cache_mode, limit):  # pragma: no cover - never run
        raise NotImplementedError

    def score_dir(self, bench_dir, spec, cache_mode, progress=None):  # pragma: no cover - never scored
        return None

    def data_sets(self) -> dict[str, sets.DataSet]:
        return {"stand-in-file": sets.DataSet("stand-in-file", "url", "no-spec", url_file=self.url_file)}


@pytest.fixture
def stand_in(tmp_path, monkeypatch) -> StandInFamily:
    family = StandInFamily()
    target = tmp_path / "stand-in.csv"

    def fetch() -> Path:
        target.write_text("a,b\n")
        return target

    def local() -> Path:
        if not target.is_file():
            raise sets.UrlSetError(f"data set stand-in-file: not fetched; place it at {target}")
        if target.read_text() != "a,b\n":
            raise sets.UrlSetError(f"{target}: sha256 differs", exit_code=1)
        return target

    family.url_file = sets.UrlFile(fetch, local)
    installed = registry.plugins()
    monkeypatch.setattr(registry, "plugins", lambda: {**installed, "stand-in": family})
    return family


def invoke(*args: str):
    return CliRunner().invoke(cli, ["data", *args])


def test_a_url_set_is_fetched_and_checked_by_the_family_that_declares_it(stand_in, tmp_path):
    target = tmp_path / "stand-in.csv"
    missing = invoke("path", "stand-in-file")
    assert missing.exit_code == 2 and f"error: data set stand-in-file: not fetched; place it at {target}" \
        in missing.output
    assert missing.exception is None or isinstance(missing.exception, SystemExit)
    fetched = invoke("fetch", "stand-in-file")
    assert fetched.exit_code == 0 and fetched.output.strip() == str(target)
    assert invoke("path", "stand-in-file").output.strip() == str(target)
    assert invoke("verify", "stand-in-file").output.strip() == f"verified stand-in-file in {target}"
    target.write_text("a,c\n")
    changed = invoke("verify", "stand-in-file")
    assert changed.exit_code == 1 and "sha256 differs" in changed.output
    nothing = invoke("import", "stand-in-file", str(tmp_path))
    assert nothing.exit_code == 2 and "read on demand by its benchmark" in nothing.output


def test_a_url_set_declared_without_a_way_to_fetch_it_is_a_one_line_error(stand_in):
    stand_in.url_file = None
    got = invoke("fetch", "stand-in-file")
    assert got.exit_code == 2 and "its family declares it a URL set but gives no way to fetch it" in got.output
    assert "Traceback" not in got.output


def test_an_unknown_name_lists_every_declared_set(stand_in):
    got = invoke("verify", "stand-in-fil")
    assert got.exit_code == 2 and "did you mean 'stand-in-file'?" in got.output
    assert "advbench" in got.output and "duplex-mpe" in got.output


@pytest.mark.parametrize("data, hub", [
    ({"source": "public", "dataset": "x", "repo": "o/x"}, True),
    ({"source": "public", "dataset": "x", "repo": "o/x", "path": "local/x"}, False),   # a local copy wins
    ({"source": "public", "dataset": "x", "url": "https://example.invalid/x.csv"}, False),  # a URL set
    ({"source": "licensed", "dataset": "x", "repo": "o/x"}, False),
    ({"source": "public", "repo": "o/x"}, False),                                       # no set named
])
def test_whether_a_run_needs_an_imported_hub_set_is_read_from_the_data_block(data, hub):
    assert sets.is_hub_read(data) is hub
