"""Issue 24, item 3: the scheduler reading `after_t` and the evidence that chooses it.

With 1 s model frames a fresh reply can only begin at a frame boundary after T ends, so
under "turn-gap" the next turn (0.5 s after T) always plays over it; "hold-start-window"
waits while T's Start window is open. The scheduler runs for real on tone clips; only
Silero's acoustic decision is replaced by an amplitude stand-in (mpe_helpers.AmplitudeVAD),
so timings are exact to the frame.
"""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest
from mpe_helpers import RATE, AmplitudeVAD, ClipModel, fake_conversation, run_scheduler, spec, tone

from duplexeval.benchmarks.mpe.scenes.scheduler import MPEScheduler
from duplexeval.specs import repo_root

FRAME = RATE  # 1 s frames, as MiniCPM-o 4.5's chunks
TURNS = [("N2", 1.0), ("T", 1.3), ("N3", 1.0), ("N1", 1.0)]  # preamble 0-1.0, N2 1.5-2.5, T 3.0-4.3


def turn_starts(after_t: str, cues) -> dict[str, float]:
    bench = spec()
    bench["scheduler"]["after_t"] = after_t
    sch = MPEScheduler(fake_conversation(TURNS), bench, vad_factory=lambda: AmplitudeVAD(0.02))
    _, _, events, _ = run_scheduler(sch, FRAME, ClipModel(FRAME, cues))
    return {e["label"]: e["t"] for e in events if e["type"] == "turn_start"}


def reply_at_next_frame(seconds: float):
    # T ends at 4.3 s; the reply starts at the next frame boundary, 5.0 s (0.7 s after T).
    return [("T", "end", 0.7, tone(seconds, amp=0.1))]


def test_turn_gap_plays_the_next_turn_over_a_reply_begun_at_the_next_1_s_frame() -> None:
    starts = turn_starts("turn-gap", reply_at_next_frame(1.5))
    assert starts["N3"] == pytest.approx(4.8)  # T end + 0.5 s: the reply (5.0-6.5 s) spills into N3


def test_hold_start_window_waits_for_the_reply_and_then_2_s_of_silence() -> None:
    starts = turn_starts("hold-start-window", reply_at_next_frame(1.5))
    assert starts["N3"] >= 6.5 + 2.0  # after the reply ended and Aria was silent 2 s
    assert starts["N3"] < 6.5 + 2.0 + 1.0  # decided at the first frame that knows it


def test_hold_start_window_gives_a_silent_model_the_whole_start_window() -> None:
    starts = turn_starts("hold-start-window", [])
    assert starts["N3"] == pytest.approx(4.3 + 5.0)  # exactly at the window's end, inside a frame
    assert turn_starts("turn-gap", [])["N3"] == pytest.approx(4.8)


def test_an_unknown_after_t_reading_is_refused() -> None:
    bench = spec()
    bench["scheduler"]["after_t"] = "sometimes"
    with pytest.raises(ValueError, match="scheduler.after_t"):
        MPEScheduler(fake_conversation(TURNS), bench)


def evidence():
    path = repo_root() / "bench" / "mpe_readings_evidence.py"
    module_spec = importlib.util.spec_from_file_location("mpe_readings_evidence", path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_spec.name] = module  # its dataclass looks itself up there
    module_spec.loader.exec_module(module)
    return module


def test_the_published_counts_rule_out_turn_gap_with_literal_attribution_only() -> None:
    ev = evidence()
    verdicts = {(v["after_t"], v["attribute_t_response"]): v for v in ev.verdicts(ev.golden_cells(), offsets=200)}
    literal = verdicts[("turn-gap", "counts-against-window")]
    assert literal["spill_share"] == 1.0 and (literal["forced"], literal["budget"]) == (1900, 1822)
    assert literal["allowed"] is False
    assert verdicts[("hold-start-window", "counts-against-window")]["allowed"] is True
    assert verdicts[("hold-start-window", "counts-against-window")]["forced"] == 0
    assert verdicts[("turn-gap", "attributed-to-t")]["allowed"] is True


def test_the_simulated_spill_share_depends_on_frame_and_reaction() -> None:
    ev = evidence()
    rules = ev.spec_values()
    assert ev.spill_share(0.08, 0.0, "turn-gap", 200, **rules) == 0.0  # an 80 ms model answering at once holds T
    assert ev.spill_share(0.08, 1.0, "turn-gap", 200, **rules) == 1.0
    assert ev.spill_share(1.0, 0.0, "hold-start-window", 200, **rules) == 0.0
    assert np.isclose(ev.spill_share(0.16, 0.3, "turn-gap", 200, **rules), 0.75)
