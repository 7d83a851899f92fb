"""`cache prune` never deletes judge verdicts without a bounded, confirmed request (issue 25).

Paid LLM verdicts cannot be replayed once gone, so a non-positive or non-finite age (which
selects every entry) is refused, and without `--yes` prune only lists what it would delete.
"""

from __future__ import annotations

import os
import time

import pytest
from click.testing import CliRunner

from duplexeval.commands.cache import cache_group
from duplexeval.judges.cache import JudgeCache, cache_key, key_components

DAY = 86400.0


def _entry(cache: JudgeCache, n: int, age_days: float, judge_id: str = "j-a") -> str:
    components = key_components(provider="openai", model="m", snapshot=None, base_url=None, template_sha256="t" * 64,
                                messages=[{"role": "user", "content": f"q{n}"}], decoding={}, artifacts={})
    key = cache_key(components)
    cache.put(key, components, {"text": f"answer {n}"}, {"judge_id": judge_id})
    stamp = time.time() - age_days * DAY
    os.utime(cache.path(key), (stamp, stamp))
    return key


@pytest.fixture
def planted(tmp_path):
    """Entries 1, 10, 40 and 100 days old."""
    cache = JudgeCache(tmp_path / "cache", "readwrite")
    keys = {age: _entry(cache, i, age) for i, age in enumerate((1, 10, 40, 100))}
    return cache, keys


def _alive(cache: JudgeCache, keys: dict[float, str]) -> set[float]:
    return {age for age, key in keys.items() if cache.path(key).exists()}


@pytest.mark.parametrize("age", ["-5", "0", "-0", "nan", "inf", "-inf"])
def test_a_non_positive_or_non_finite_age_is_refused_and_deletes_nothing(planted, age):
    cache, keys = planted
    result = CliRunner().invoke(cache_group, ["prune", "--root", str(cache.root), "--older-than-days", age, "--yes"])
    assert result.exit_code == 2, result.output
    assert "--older-than-days" in result.output and "Traceback" not in result.output
    assert _alive(cache, keys) == {1, 10, 40, 100}


def test_without_yes_prune_lists_and_deletes_nothing(planted):
    cache, keys = planted
    result = CliRunner().invoke(cache_group, ["prune", "--root", str(cache.root), "--older-than-days", "30"])
    assert result.exit_code == 0, result.output
    assert result.output.count("would delete") == 2 and "nothing deleted" in result.output and "--yes" in result.output
    assert _alive(cache, keys) == {1, 10, 40, 100}


@pytest.mark.parametrize("days,left", [(30, {1, 10}), (5, {1}), (0.5, set()), (1000, {1, 10, 40, 100})])
def test_with_yes_only_entries_older_than_the_age_go(planted, days, left):
    cache, keys = planted
    result = CliRunner().invoke(cache_group, ["prune", "--root", str(cache.root), "--older-than-days", str(days),
                                              "--yes"])
    assert result.exit_code == 0, result.output
    assert _alive(cache, keys) == left
    assert result.output.count("deleted ") == 4 - len(left)


def test_dry_run_wins_over_yes(planted):
    cache, keys = planted
    result = CliRunner().invoke(cache_group, ["prune", "--root", str(cache.root), "--older-than-days", "5", "--yes",
                                              "--dry-run"])
    assert result.exit_code == 0 and _alive(cache, keys) == {1, 10, 40, 100}


def test_explain_of_an_unknown_or_malformed_key_fails(planted):
    cache, keys = planted
    runner = CliRunner()
    unknown = runner.invoke(cache_group, ["explain", "--root", str(cache.root), "f" * 64])
    assert unknown.exit_code == 1 and "not in the cache" in unknown.output
    malformed = runner.invoke(cache_group, ["explain", "--root", str(cache.root), "UNKNOWN"])
    assert malformed.exit_code == 2 and "KEY" in malformed.output
    known = runner.invoke(cache_group, ["explain", "--root", str(cache.root), keys[10]])
    assert known.exit_code == 0 and "provider" in known.output
