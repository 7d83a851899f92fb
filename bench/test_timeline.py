"""Where `make test`'s CPU goes: per module and the slowest tests, from the timeline the test
session writes with `DUPLEXEVAL_TEST_TIMELINE=FILE` (tests/conftest.py).

CPU, not wall: the development machine is shared, so a test's wall time depends on what
else runs; its CPU (the worker's and its children's) much less. Also prints each worker's
busy span, to see whether the workers finish together.

    DUPLEXEVAL_TEST_TIMELINE=/tmp/tl.jsonl make test
    .venv/bin/python bench/test_timeline.py /tmp/tl.jsonl [--top 20]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("timeline", type=Path)
    ap.add_argument("--top", type=int, default=20)
    args = ap.parse_args(argv)
    rows = [json.loads(line) for line in args.timeline.read_text().splitlines() if line.strip()]
    if not rows:
        raise SystemExit(f"{args.timeline}: no timeline lines")
    by_module: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    by_test: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    span: dict[str, list[float]] = {}
    for r in rows:
        for table, key in ((by_module, r["module"]), (by_test, r["test"])):
            table[key][0] += r["cpu_s"]
            table[key][1] += r["wall_s"]
        lo, hi = span.get(r["worker"], [r["start"], r["start"]])
        span[r["worker"]] = [min(lo, r["start"]), max(hi, r["start"] + r["wall_s"])]
    total_cpu = sum(v[0] for v in by_module.values())
    print(f"{len(by_test)} tests, {total_cpu:.0f} s of CPU (workers and their children)")
    start = min(lo for lo, _ in span.values())
    for worker, (lo, hi) in sorted(span.items()):
        print(f"  {worker}: busy from +{lo - start:.0f} s to +{hi - start:.0f} s")
    print(f"\nmodules by CPU (top {args.top}):")
    for name, (cpu, wall) in sorted(by_module.items(), key=lambda kv: -kv[1][0])[:args.top]:
        print(f"  {cpu:7.1f} s CPU {wall:7.1f} s wall  {100 * cpu / total_cpu:4.1f}%  {name}")
    print(f"\ntests by CPU, setup + call + teardown (top {args.top}):")
    for name, (cpu, wall) in sorted(by_test.items(), key=lambda kv: -kv[1][0])[:args.top]:
        print(f"  {cpu:7.1f} s CPU {wall:7.1f} s wall  {name}")


if __name__ == "__main__":
    main()
