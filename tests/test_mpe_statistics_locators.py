"""Issue 24, item 5: golden cells that had no run locator now read a run.

Table 10's judged windows and Table 14's "first speaks after the question" are counts in
results.json; Table 3's largest condition shift, Table 16's range of presence differences
and §4.2's text-reference gap and log10 p are in statistics.json. Hand-made records and
results (the layout duplexeval.benchmarks.mpe.results writes) stand for a run.
"""

from __future__ import annotations

from pathlib import Path

from mpe_helpers import spec

from duplexeval.benchmarks.mpe.statistics import log10_mcnemar_p
from duplexeval.io import atomic_write_json, atomic_write_jsonl
from duplexeval.reports.compare import OK, compare_run
from duplexeval.reports.golden import load_golden
from duplexeval.runfolder.run_dir import load_run
from duplexeval.runs.statistics import write_statistics
from duplexeval.specs import repo_root

N = 2000


def bench(bench_id: str, condition: str) -> dict:
    out = {**spec(), "id": bench_id, "condition": condition, "dimension": "mpe"}
    out["metrics"]["statistics"]["mcnemar"] = {"pair_with": "mpe-implicit"}
    return out


def folder(run: Path, model: str, condition: str, present: set[int], scores: dict[str, float], extra=None) -> None:
    bench_id = f"mpe-{condition}"
    d = run / model / bench_id
    atomic_write_json(d / "benchmark.json", bench(bench_id, condition))
    atomic_write_jsonl(d / "records.jsonl", [
        {"item": f"s{i:04d}", "metric": "start", "outcome": "fresh" if i in present else "miss", "passed": i in present}
        for i in range(N)])
    metrics = {k: {"value": v, "numerator": round(v * N), "denominator": N} for k, v in scores.items()}
    metrics["presence"] = {"value": len(present) / N, "numerator": len(present), "denominator": N}
    for k, v in (extra or {}).items():
        metrics[k].update(v)
    atomic_write_json(d / "results.json", {"v": 1, "benchmark": bench_id, "condition": condition, "complete": True,
                                           "metrics": metrics})


def text_reference(run: Path, condition: str, responded: set[int]) -> None:
    d = run / "text-reference" / f"mpe-{condition}"
    atomic_write_json(d / "benchmark.json", bench(f"mpe-{condition}", condition))
    atomic_write_jsonl(d / "records.jsonl", [{"item": f"s{i:04d}", "label": "T", "responded": i in responded}
                                             for i in range(N)])


def test_the_new_locators_read_the_run(tmp_path: Path) -> None:
    run = tmp_path / "run"
    scores = {"start": 0.95, "answer": 0.473, "shush": 0.9242, "stop": 0.5964}
    folder(run, "minicpm-o-4.5", "explicit", set(range(1900)), scores,
           {"shush": {"judged": 2172}})
    # Implicit: Start 0.0438 lower (the largest shift), 35 more scenes with speech (-1.75 points).
    folder(run, "minicpm-o-4.5", "implicit", set(range(1935)), {**scores, "start": 0.9062})
    folder(run, "voila", "explicit", set(range(1000)), {**scores, "start": 0.5},
           {"stop": {"spoke_after_question": 913}})
    folder(run, "voila", "implicit", set(range(988)), {**scores, "start": 0.49})  # +0.60 points
    text_reference(run, "explicit", set(range(1894)))
    text_reference(run, "implicit", set(range(608)))
    write_statistics(run)
    rows = {r.cell_id: r for r in compare_run(load_run(run), load_golden(repo_root() / "golden" / "duplex-mpe.yaml"))}
    for cell in ("mpe.t10.minicpm-o.explicit.windows-judged", "mpe.t14.voila.first-speaks-after-question",
                 "mpe.t3.max-explicit-implicit-shift", "mpe.t16.min-explicit-minus-implicit",
                 "mpe.t16.max-explicit-minus-implicit", "mpe.s42.gemini.gap", "mpe.s42.gemini.log10-p"):
        assert rows[cell].status == OK, (cell, rows[cell])
    assert rows["mpe.t16.min-explicit-minus-implicit"].got == -1.75
    assert rows["mpe.s42.gemini.gap"].got == 64.3


def test_log10_p_matches_the_float_p_where_both_exist_and_survives_underflow() -> None:
    assert abs(log10_mcnemar_p(90, 78) - (-0.4021)) < 1e-4  # p = 0.3961 (Table 16)
    assert log10_mcnemar_p(1286, 0) < -371  # §4.2: p < 10^-371
    assert log10_mcnemar_p(0, 0) == 0.0
