"""`run --models X --benchmarks Y` plans exactly that combination, inside or outside the suite."""

from __future__ import annotations

from dataclasses import replace

import pytest
from click.testing import CliRunner

from duplexeval.cli import cli
from duplexeval.runfolder.plan import ImpossiblePair, pair_problem, plan_suite
from duplexeval.specs import Registry, UnknownSpecError


@pytest.fixture(scope="module")
def registry() -> Registry:
    return Registry.load()


def test_a_pair_outside_the_suite_is_planned_with_the_suites_overrides(registry) -> None:
    suite = registry.get("suite", "embedded").data
    assert not any("babbler" in r["models"] and "mtr-smooth-turn-taking" in r["benchmarks"] for r in suite["runs"])
    jobs = plan_suite(registry, "embedded", ["babbler"], ["mtr-smooth-turn-taking"])
    assert [j.key for j in jobs] == ["babbler/mtr-smooth-turn-taking"]
    assert jobs[0].bench["asr"] == suite["overrides"]["asr"]  # the offline ASR of the suite, not the paper's
    assert jobs[0].bench["judges"]["segmentation"] == suite["overrides"]["judges"]["segmentation"]


def test_both_lists_give_their_exact_product(registry) -> None:
    jobs = plan_suite(registry, "embedded", ["silent", "babbler"], ["mpe-explicit", "mtr-combo-s"])
    assert [j.key for j in jobs] == ["silent/mpe-explicit", "silent/mtr-combo-s", "babbler/mpe-explicit",
                                     "babbler/mtr-combo-s"]


def test_one_list_still_narrows_the_suite(registry) -> None:
    keys = {j.key for j in plan_suite(registry, "embedded", ["babbler"], None)}
    assert "babbler/mpe-explicit" in keys and "babbler/mtr-smooth-turn-taking" not in keys


def test_an_impossible_pair_is_a_clear_error(registry, monkeypatch) -> None:
    babbler = registry.get("model", "babbler")
    realtime_only = replace(babbler, data={**babbler.data, "clocks": ["realtime"]})
    bench = registry.get("benchmark", "mpe-explicit")
    assert "does not support the lockstep clock" in pair_problem(realtime_only, bench, "lockstep")
    original = registry.get

    monkeypatch.setattr(registry, "get", lambda kind, name: realtime_only if (kind, name) == ("model", "babbler")
                        else original(kind, name))
    with pytest.raises(ImpossiblePair, match="babbler x mpe-explicit: model babbler does not support the lockstep"):
        plan_suite(registry, "embedded", ["babbler"], ["mpe-explicit"])


def test_an_unknown_id_errors_with_a_suggestion(registry, tmp_path) -> None:
    with pytest.raises(UnknownSpecError):
        plan_suite(registry, "embedded", ["babler"], ["mpe-explicit"])
    res = CliRunner().invoke(cli, ["run", "--models", "babbler", "--benchmarks", "mtr-smoth-turn-taking",
                                   "--runs-dir", str(tmp_path)])
    assert res.exit_code == 2 and "mtr-smoth-turn-taking" in res.output and "did you mean" in res.output


def test_progress_printer_is_quiet_off_a_terminal(capsys) -> None:
    import io

    from duplexeval.commands.run import ProgressPrinter

    stream = io.StringIO()
    printer = ProgressPrinter(stream)
    for line in ["[1/1] silent/mpe-explicit", "  1/3 a ok [0 s]", "  2/3 b skipped (done) [0 s]",
                 "  3/3 c error: boom [1 s]", "  scoring"]:
        printer(line)
    printer.close()
    err = capsys.readouterr().err
    assert "[1/1] silent/mpe-explicit" in err and "c error: boom" in err and "scoring" in err
    assert " a ok" not in err and " b skipped" not in err


def test_a_suite_entrys_limit_reaches_its_jobs_and_the_smaller_limit_wins(registry, tmp_path) -> None:
    from duplexeval.runs.execute import job_dir, plan_job

    by_key = {j.key: j for j in plan_suite(registry, "embedded", None, None)}
    assert by_key["babbler/mpe-explicit"].limit == 8 and by_key["babbler/mpe-implicit"].limit == 8
    assert by_key["silent/mpe-explicit"].limit is None and by_key["babbler/mtr-combo-s"].limit is None
    (exact,) = plan_suite(registry, "embedded", ["babbler"], ["mpe-implicit"])
    assert exact.limit == 8  # the same pair named exactly keeps its entry's limit
    job = by_key["babbler/mpe-explicit"]
    units = {}
    for cli_limit in (None, 3, 20):
        plan = plan_job(job, job_dir(tmp_path, job), clock="lockstep", seed=0, cache_mode="readwrite",
                        limit=cli_limit)
        units[cli_limit] = len(plan.units())
    assert units == {None: 8, 3: 3, 20: 8}
    silent = by_key["silent/mpe-explicit"]
    assert len(plan_job(silent, job_dir(tmp_path, silent), clock="lockstep", seed=0, cache_mode="readwrite",
                        limit=None).units()) == 24
