"""Child process of the resume test: a lockstep multi-item run that the test kills with SIGKILL."""

from __future__ import annotations

import sys

from runner_helpers import tone

from duplexeval.runner import FileStimulus, load_model_spec, run_items

N_ITEMS = 6
ITEM_S = 12.0


def items():
    # Distinct content per item (frequency, noise seed) so a mix-up between items would show.
    return [(f"item-{i:02d}", lambda i=i: FileStimulus(tone(ITEM_S, freq=200.0 + 40 * i, seed=i), 16000, tail_frames=3))
            for i in range(N_ITEMS)]


if __name__ == "__main__":
    run_items(load_model_spec(sys.argv[2]), items(), sys.argv[1], "lockstep", seed=11)
