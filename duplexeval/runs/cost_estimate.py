"""The dry run's cost estimate of a suite (`duplexeval run --dry-run`) and the budget a run
hands its realtime bridges (`--max-cost`): the part of duplexeval/realtime/cost.py that plans
the suite, so it sits above the benchmarks it counts (the ledger and guard stay there).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable

from duplexeval.realtime.cost import ASSUMED_UNIT_S, JobEstimate, budget_env


def unit_seconds(bench: dict[str, Any], context: str) -> float:
    dimension = bench.get("dimension", "")
    if dimension == "mpe":
        return ASSUMED_UNIT_S["mpe"]
    if dimension == "mtr-quality":
        return ASSUMED_UNIT_S["mtr-quality"]
    if dimension in ("mtr-instruction", "mtr-safety"):
        return ASSUMED_UNIT_S["mtr-query"]
    rounds = int(bench.get("rounds", 10))
    played = rounds if context == "fork" else rounds * (rounds + 1) / 2  # without fork, round k plays k rounds
    return played * ASSUMED_UNIT_S["mtr-round"]


def local_data_count(bench: dict[str, Any]) -> int | None:
    """Units of a benchmark whose data is a local file or folder (the embedded sets), else None.

    MPE: one unit per scene file; MTR feature dialogues and quality clips: one per dialogue;
    instruction and safety: one per query (round), as `data.count` counts them in the paper specs.
    """
    from duplexeval.resources import bundle_root

    path = bench.get("data", {}).get("path")
    if not path:
        return None
    where = Path(path) if Path(path).is_absolute() else bundle_root() / path
    dimension = bench.get("dimension", "")
    try:
        if dimension == "mpe":
            return len(list(where.glob("*.yaml"))) if where.is_dir() else None
        import yaml

        dialogues = yaml.safe_load(where.read_text("utf-8")).get("dialogues", [])
    except (OSError, ValueError, AttributeError):
        return None
    if dimension in ("mtr-instruction", "mtr-safety"):
        return sum(len(d.get("rounds", [])) for d in dialogues)
    return len(dialogues)


def model_price(model_data: dict[str, Any], override: float | None) -> float | None:
    """The run's price, else the spec's; None for a model that is not a paid API."""
    if model_data.get("launch", {}).get("backend") != "realtime-api":
        return None
    if override is not None:
        return override
    return model_data["launch"].get("realtime", {}).get("price_per_minute")


def estimate_jobs(jobs: Iterable[Any], clock: str, limit: int | None, price: float | None) -> list[JobEstimate]:
    """One estimate per job (`duplexeval.runfolder.plan.Job`)."""
    from duplexeval.benchmarks.mtr.items import context_mode

    out = []
    for job in jobs:
        bench, model = job.bench, job.model.data
        model_clock = getattr(job, "clock", None) or (clock if clock in model.get("clocks", [clock]) else model["clocks"][0])
        context = "-"
        if bench.get("dimension", "").startswith("mtr-"):
            context = context_mode(bench, list(model.get("capabilities", [])), model_clock)
        count = bench.get("data", {}).get("count") or local_data_count(bench)
        caps = [n for n in (count, limit, getattr(job, "limit", None)) if isinstance(n, int)]
        units = min(caps) if caps else None
        out.append(JobEstimate(job.model.id, job.benchmark.id, units, unit_seconds(bench, context), model_price(model, price)))
    return out


def format_estimate(estimates: list[JobEstimate]) -> list[str]:
    lines = ["Assumed audio per unit (bench/project_paper_suites.py): "
             + ", ".join(f"{k} {v:g} s" for k, v in ASSUMED_UNIT_S.items())
             + "; MTR without fork replays rounds 1..k for round k; a local data set is counted from its"
             " file (every dialogue: an upper bound for a feature benchmark)",
             "| model | benchmark | units | audio (min) | price/min | cost |", "|---|---|---|---|---|---|"]
    total_min = total_cost = 0.0
    unknown = False
    for e in estimates:
        units = "?" if e.units is None else str(e.units)
        minutes = "?" if e.minutes is None else f"{e.minutes:.1f}"
        price = "-" if e.price_per_minute is None else f"{e.price_per_minute:g}"
        cost = "-" if e.cost is None else f"{e.cost:.2f}"
        lines.append(f"| {e.model} | {e.benchmark} | {units} | {minutes} | {price} | {cost} |")
        total_min += e.minutes or 0.0
        total_cost += e.cost or 0.0
        unknown |= e.units is None
    lines.append(f"total: {total_min:.1f} audio minutes, cost {total_cost:.2f}"
                 + (" (jobs with unknown size not counted)" if unknown else ""))
    return lines


def plan_for_estimate(registry: Any, suite_id: str, models: list[str] | None, benchmarks: list[str] | None,
                      clock: str | None = None) -> list[Any]:
    """The jobs a run would plan. A model outside the suite (`--models gpt-realtime` on paper-mpe)
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
        if data.get("launch", {}).get("backend") == "realtime-api" and model_price(data, price) is None:
            lines.append(f"note: {model_id} is a paid API with no price: give --price-per-minute")
    return lines + format_estimate(estimate_jobs(jobs, clock, limit or suite.get("limit"), price))


def apply_budget(jobs: list[Any], run_dir: Path, clock: str, limit: int | None, price: float | None,
                 max_cost: float | None) -> dict[str, str]:
    """Sets the environment the run's bridges read (--price-per-minute, --max-cost); returns it.

    Raises ValueError when --max-cost cannot be enforced: a paid model without any price.
    """
    estimates = estimate_jobs(jobs, clock, limit, price)
    if max_cost is not None:
        unpriced = sorted({e.model for e in estimates if e.price_per_minute is None
                           and next(j for j in jobs if j.model.id == e.model).model.data["launch"]["backend"] == "realtime-api"})
        if unpriced:
            raise ValueError(f"--max-cost needs a price per minute for {', '.join(unpriced)}: give --price-per-minute "
                             "or set launch.realtime.price_per_minute in the spec")
    env = budget_env(run_dir, max_cost, price, estimates)
    os.environ.update(env)  # the bridges (and local workers) inherit it
    return env
