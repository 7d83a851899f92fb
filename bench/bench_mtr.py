"""Teacher-forced MTR context: forked sessions (linear) vs replay per round (quadratic).

Plays the rounds of the embedded feature dialogues to a reference agent both ways and
prints wall time and frames sent (not a timed test).

    .venv/bin/python bench/bench_mtr.py [--model silent] [--dialogues 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from duplexeval.benchmarks.mtr.items import item_factories, load_dialogues, scored_rounds  # noqa: E402
from duplexeval.runner import run_items  # noqa: E402
from duplexeval.runner.fork import run_forked_items  # noqa: E402
from duplexeval.specs import Registry  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="silent")
    parser.add_argument("--dialogues", type=int, default=2)
    args = parser.parse_args()
    registry = Registry.load()
    bench = dict(registry.get("benchmark", "mtr-combo-s").data)
    bench.update(data={"source": "embedded", "path": "data/embedded/mtr/features.yaml"}, round_selection="feature-rounds",
                 features=["smooth", "interruption", "pause", "background", "backchannel"])
    dialogues = load_dialogues(bench, args.dialogues)
    rounds = scored_rounds(bench, dialogues)
    groups = item_factories(bench, rounds, teacher_forcing=True)
    spec = registry.get("model", args.model)
    audio_s = sum(d.duration_s for d in dialogues)
    replay_s = sum(r.window.end_s for r in rounds)
    with tempfile.TemporaryDirectory() as tmp:
        t = time.monotonic()
        run_forked_items(spec, groups, f"{tmp}/fork", rate=16000)
        fork_wall = time.monotonic() - t
        t = time.monotonic()
        run_items(spec, [i for _, items in groups for i in items], f"{tmp}/replay", rate=16000)
        replay_wall = time.monotonic() - t
    print(f"{len(rounds)} rounds of {len(dialogues)} dialogues ({audio_s:.0f} s of dialogue), model {args.model}")
    print(f"fork:   {fork_wall:6.1f} s wall")
    print(f"replay: {replay_wall:6.1f} s wall ({replay_s:.0f} s of audio played)")


if __name__ == "__main__":
    main()
