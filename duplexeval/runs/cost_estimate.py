"""The dry run's cost estimate of a suite (`duplexeval run --dry-run`) and the budget a run
hands its realtime bridges (`--max-cost`): the part of duplexeval/realtime/cost.py that plans
the suite, so it sits above the benchmarks it counts (the ledger and guard stay there).

It names no benchmark: each family says how many units a benchmark has and how long one
unit's audio is (`planned_units`, `unit_audio_s` in duplexeval/benchmarks/base.py).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable

from duplexeval.realtime.cost import JobEstimate, Pricing, budget_env


def job_units(job: Any) -> int | None:
    """The family's count for the benchmark as the suite runs it, else for the spec as written
    (a suite that points `data` at a copy placed by hand names no count: it is the same set)."""
    from duplexeval.benchmarks.registry import benchmark_for

    plugin = benchmark_for(job.bench)
    count = plugin.planned_units(job.bench)
    if count is None and getattr(job, "benchmark", None) is not None:
        count = plugin.planned_units(job.benchmark.data)
    return count


def job_unit_s(job: Any, clock: str) -> float | None:
    from duplexeval.benchmarks.registry import benchmark_for

    model = job.model.data
    return benchmark_for(job.bench).unit_audio_s(job.bench, capabilities=tuple(model.get("capabilities", [])),
                                                 clock=clock)


def model_pricing(model_data: dict[str, Any], override: float | None) -> Pricing | None:
    """The run's price per minute, else the spec's token prices or price per minute; None for a
    model that is not a paid API (or has no price)."""
    if model_data.get("launch", {}).get("backend") != "realtime-api":
        return None
    return Pricing.of(model_data["launch"].get("realtime", {}), override)


def estimate_jobs(jobs: Iterable[Any], clock: str, limit: int | None, price: float | None) -> list[JobEstimate]:
    """One estimate per job (`duplexeval.runfolder.plan.Job`)."""
    out = []
    for job in jobs:
        model = job.model.data
        model_clock = getattr(job, "clock", None) or (clock if clock in model.get("clocks", [clock]) else model["clocks"][0])
        count = job_units(job)
        caps = [n for n in (count, limit, getattr(job, "limit", None)) if isinstance(n, int)]
        units = min(caps) if caps and count is not None else None
        out.append(JobEstimate(job.model.id, job.benchmark.id, units, job_unit_s(job, model_clock),
                               model_pricing(model, price)))
    return out


def format_estimate(estimates: list[JobEstimate]) -> list[str]:
    lines = ["Audio per unit: each family's unit_audio_s (docs/models.md, \"Cost\"; a unit that replays earlier "
             "rounds counts them); units: data.count or a local data set's files. Billing: tokens = the spec's "
             "token_prices x the tokens of an assumed session (its token_estimate); per minute = streamed input minutes",
             "| model | benchmark | units | s/unit | audio (min) | billing | cost |", "|---|---|---|---|---|---|---|"]
    total_min = total_cost = 0.0
    unknown = False
    for e in estimates:
        units = "?" if e.units is None else str(e.units)
        unit_s = "?" if e.unit_s is None else f"{e.unit_s:g}"
        minutes = "?" if e.minutes is None else f"{e.minutes:.1f}"
        billing = "-" if e.pricing is None else (f"{e.pricing.per_minute:g}/min" if e.pricing.per_minute is not None
                                                 else "tokens")
        cost = "-" if e.cost is None else f"{e.cost:.2f}"
        lines.append(f"| {e.model} | {e.benchmark} | {units} | {unit_s} | {minutes} | {billing} | {cost} |")
        total_min += e.minutes or 0.0
        total_cost += e.cost or 0.0
        unknown |= e.minutes is None
    lines.append(f"total: {total_min:.1f} audio minutes, cost {total_cost:.2f}"
                 + (" (jobs with unknown size not counted)" if unknown else ""))
    return lines


def plan_for_estimate(registry: Any, suite_id: str, models: list[str] | None, benchmarks: list[str] | None,
                      clock: str | None = None) -> list[Any]:
    """The jobs a run would plan. A model outside the suite (`--models gpt-realtime` on a paper suite)
    is paired with every benchmark of the suite, and a model without the suite's clock is
    estimated on its own, so a bill can be read before the model is added to a suite."""
    from duplexeval.runfolder.plan import PER_MODEL, plan_suite

    if not models:
        return plan_suite(registry, suite_id, None, benchmarks, clock=clock)
    suite = registry.get("suite", suite_id).data
    in_suite = {m for r in suite["runs"] for m in r["models"]}
    every = list(dict.fromkeys(b for r in suite["runs"] for b in r["benchmarks"]))
    clock = clock or suite["clock"]
    jobs = []
    for model_id in dict.fromkeys(models):
        clocks = registry.get("model", model_id).data["clocks"]  # an unknown id: "did you mean"
        if model_id in in_suite and not benchmarks:
            jobs += plan_suite(registry, suite_id, [model_id], None, clock=clock)
        else:
            jobs += plan_suite(registry, suite_id, [model_id], benchmarks or every,
                               clock=clock if clock in clocks or clock == PER_MODEL else clocks[0])
    return jobs


def dry_run_lines(suite_id: str, models: list[str] | None, benchmarks: list[str] | None, clock: str | None,
                  limit: int | None, price: float | None) -> list[str]:
    """What `duplexeval run --dry-run` prints: the plan's audio minutes and, for paid APIs, the cost."""
    from duplexeval.specs import Registry

    registry = Registry.load()
    suite = registry.get("suite", suite_id).data
    clock = clock or suite["clock"]
    jobs = plan_for_estimate(registry, suite_id, models, benchmarks, clock)
    lines = [f"dry run of suite {suite_id} ({len(jobs)} job(s), {clock} clock): nothing is started"]
    for model_id in dict.fromkeys(j.model.id for j in jobs):
        data = next(j.model.data for j in jobs if j.model.id == model_id)
        if clock not in data.get("clocks", [clock]) and clock != "per-model":
            lines.append(f"note: {model_id} runs only on the {data['clocks'][0]} clock (the run needs --clock "
                         f"{data['clocks'][0]}); estimated on it")
        if data.get("launch", {}).get("backend") == "realtime-api" and model_pricing(data, price) is None:
            lines.append(f"note: {model_id} is a realtime API with no price (free, or give --price-per-minute)")
    return lines + format_estimate(estimate_jobs(jobs, clock, limit or suite.get("limit"), price))


def apply_budget(jobs: list[Any], run_dir: Path, clock: str, limit: int | None, price: float | None,
                 max_cost: float | None) -> dict[str, str]:
    """Sets the environment the run's bridges read (--price-per-minute, --max-cost); returns it.

    Raises ValueError when --max-cost cannot be enforced: a paid model without any price.
    """
    from duplexeval.realtime.cost import check_amount

    if price is not None:
        check_amount(price, "--price-per-minute")
    if max_cost is not None:
        check_amount(max_cost, "--max-cost")
    estimates = estimate_jobs(jobs, clock, limit, price)
    if max_cost is not None:
        unpriced = sorted({e.model for e in estimates if e.pricing is None
                           and next(j for j in jobs if j.model.id == e.model).model.data["launch"]["backend"] == "realtime-api"})
        if unpriced:
            raise ValueError(f"--max-cost needs a price for {', '.join(unpriced)}: give --price-per-minute "
                             "or set launch.realtime.token_prices (or price_per_minute) in the spec")
    env = budget_env(run_dir, max_cost, price, estimates)
    os.environ.update(env)  # the bridges (and local workers) inherit it
    return env
