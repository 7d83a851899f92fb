"""Expand a suite into jobs: one (model, benchmark dimension) pair each, overrides applied.

A suite's `overrides` replace parts of every benchmark spec (the offline ASR and judge
on a machine without weights or keys); the job keeps both the spec's hash and the
overrides so a report can say exactly what replaced what.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from duplexeval.io import sha256_json
from duplexeval.specs import Registry, Spec, SpecErrors
from duplexeval.specs.overrides import apply_overrides, override_problems, suite_overrides  # noqa: F401 (re-exported)


@dataclass(frozen=True)
class Job:
    model: Spec
    benchmark: Spec
    bench: dict[str, Any]                 # the benchmark spec with the suite's overrides applied
    overrides: dict[str, Any] = field(default_factory=dict)
    # The model as the run starts it (`--backend`, `--endpoint`, run label applied); None:
    # as its spec says. Not part of the identity: where a model runs is not what it is.
    runner: Any = None
    # At most this many items (the suite's `runs[].limit`); `--limit` may cut further. Not part
    # of the identity either: it chooses which items exist, not what any item is.
    limit: int | None = None
    # The clock this job plays on when the suite says `clock: per-model` (the model's
    # `latency_clock`, docs/runner.md "The clock per model"); None: the run's one clock.
    clock: str | None = None

    @property
    def runner_model(self) -> Any:
        return self.runner if self.runner is not None else self.model

    @property
    def key(self) -> str:
        return f"{self.model.id}/{self.benchmark.id}"

    @property
    def identity(self) -> str:
        """What resume compares: finished items are reused only under the same identity."""
        return sha256_json({"model": self.model.identity_sha256, "bench": self.bench, "version": self.bench["version"]})


class ImpossiblePair(ValueError):
    """A named (model, benchmark) pair that cannot run, with the reason."""


PER_MODEL = "per-model"


def model_clock(model: Spec, clock: str | None) -> str | None:
    """The clock a job of `model` plays on: the run's clock, or under `per-model` the clock
    its spec says reproduces its published latency (`latency_clock`), else its first clock."""
    if clock != PER_MODEL:
        return clock
    return str(model.data.get("latency_clock") or model.data["clocks"][0])


def pair_problem(model: Spec, bench: Spec, clock: str | None) -> str | None:
    """Why this model cannot run this benchmark (None: it can)."""
    clock = model_clock(model, clock)
    if clock and clock not in model.data.get("clocks", [clock]):
        return f"model {model.id} does not support the {clock} clock (it supports {', '.join(model.data['clocks'])})"
    if not bench.data.get("dimension"):
        return f"benchmark {bench.id} has no dimension"
    return None


def plan_suite(registry: Registry, suite_id: str, models: list[str] | None = None,
               benchmarks: list[str] | None = None, clock: str | None = None) -> list[Job]:
    """Jobs of a suite in its declared order, optionally narrowed to some models/benchmarks.

    With both `models` and `benchmarks`, the plan is exactly their combination, inside or
    outside the suite's pairs (with the suite's overrides); a pair that cannot run raises
    ImpossiblePair naming it.
    """
    suite = registry.get("suite", suite_id)
    for kind, wanted in (("model", models), ("benchmark", benchmarks)):
        for name in wanted or []:
            registry.get(kind, name)  # a typo gets "did you mean", not an empty plan
    overrides = suite_overrides(suite.data)
    clock = clock or suite.data.get("clock")
    if models and benchmarks:
        exact: list[Job] = []
        problems = []
        for model_id in dict.fromkeys(models):
            for bench_id in dict.fromkeys(benchmarks):
                model, bench = registry.get("model", model_id), registry.get("benchmark", bench_id)
                why = pair_problem(model, bench, clock)
                bad = override_problems(suite, bench.data)  # a pair outside the suite's runs: not checked by validate
                if bad:
                    raise SpecErrors(bad)
                if why:
                    problems.append(f"{model_id} x {bench_id}: {why}")
                    continue
                limit = next((r.get("limit") for r in suite.data["runs"]
                              if model_id in r["models"] and bench_id in r["benchmarks"]), None)
                exact.append(Job(model, bench, apply_overrides(bench.data, overrides), overrides, limit=limit,
                                 clock=model_clock(model, clock) if clock == PER_MODEL else None))
        if problems:
            raise ImpossiblePair("cannot run " + "; ".join(problems))
        return exact
    jobs: list[Job] = []
    seen: set[tuple[str, str]] = set()
    for run in suite.data["runs"]:
        for model_id in run["models"]:
            if models and model_id not in models:
                continue
            for bench_id in run["benchmarks"]:
                if benchmarks and bench_id not in benchmarks or (model_id, bench_id) in seen:
                    continue
                seen.add((model_id, bench_id))
                bench = registry.get("benchmark", bench_id)
                model = registry.get("model", model_id)
                jobs.append(Job(model, bench, apply_overrides(bench.data, overrides), overrides, limit=run.get("limit"),
                                clock=model_clock(model, clock) if clock == PER_MODEL else None))
    if not jobs:
        in_suite = sorted({m for r in suite.data["runs"] for m in r["models"]})
        in_benches = sorted({b for r in suite.data["runs"] for b in r["benchmarks"]})
        asked = "; ".join(f"--{k} {','.join(v)}" for k, v in (("models", models), ("benchmarks", benchmarks)) if v)
        raise ValueError(f"suite {suite_id!r} has no job for {asked} (its models: {', '.join(in_suite)}; its "
                         f"benchmarks: {', '.join(in_benches)}); give both --models and --benchmarks to run a pair "
                         "outside the suite")
    return jobs
