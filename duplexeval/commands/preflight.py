"""What a run needs from the environment, checked before any model starts (issue 39, case 9).

A realtime-API model whose key is unset failed every session at startup (24 STARTUP
errors, then exit 4); an LLM judge whose key is unset failed every verdict. Both specs
name the variable the key is read from (`api_key_env`, anywhere in a model's launch block,
at the top of a judge spec), so the check is generic: every variable a planned job's
model or judges name must be set and non-empty. The refusal is one line per missing
variable, naming who needs it and how to provide it; `--no-preflight` starts anyway (e.g.
when every verdict is already in the judge cache). Data sets are checked by `run_suite`
before this (duplexeval.data.imported.missing_data), with the exact fetch/import commands.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import click

KEY_FIELD = "api_key_env"


def _key_vars(data: Any) -> Iterator[str]:
    """Every `api_key_env` value in a spec's data, however deep (launch.realtime, an agent's LLM)."""
    if isinstance(data, dict):
        for key, value in data.items():
            if key == KEY_FIELD and isinstance(value, str) and value:
                yield value
            else:
                yield from _key_vars(value)
    elif isinstance(data, list):
        for value in data:
            yield from _key_vars(value)


def missing_keys(jobs: list[Any], registry: Any, environ: dict[str, str] | None = None) -> dict[str, list[str]]:
    """Unset key variable -> who needs it ('model gpt-realtime', 'judge <judge id> (answer)')."""
    env = os.environ if environ is None else environ
    need: dict[str, list[str]] = {}

    def want(var: str, who: str) -> None:
        if not env.get(var, "").strip() and who not in need.setdefault(var, []):
            need[var].append(who)

    for job in jobs:
        runner = job.runner
        served_elsewhere = runner is not None and (getattr(runner, "endpoint", None) or getattr(runner, "realtime_url", None))
        if not served_elsewhere:  # a run's --endpoint drives a server we do not start, keyed or not
            for var in _key_vars(job.model.data.get("launch", {})):
                want(var, f"model {job.model.id}")
        for role, judge_id in sorted((job.bench.get("judges") or {}).items()):
            try:
                judge = registry.get("judge", judge_id).data
            except LookupError:
                continue  # validate reports an unknown judge at its line
            for var in _key_vars(judge):
                want(var, f"judge {judge_id} ({role})")
    return {var: who for var, who in need.items() if who}


def preflight_message(missing: dict[str, list[str]]) -> str:
    """One line per unset variable, then how to go on."""
    lines = [f"{var} is not set; needed by {', '.join(who[:3])}{' and more' if len(who) > 3 else ''}: "
             f"export {var}=... (keys are read only from the environment)" for var, who in sorted(missing.items())]
    lines.append("nothing was started; or narrow the run with --models/--benchmarks, or pass --no-preflight to "
                 "start anyway (e.g. every verdict is already in the judge cache)")
    return "\n".join(lines)


no_preflight_option = click.option(
    "--no-preflight", "skip_preflight", is_flag=True,
    help="Start even when a model or judge of the plan names an API key variable that is not set.")
