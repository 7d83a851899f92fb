"""An N4 pair right before T (issue 13, item 7): the scheduler keeps Stop's window and T
apart, and Stop, Start and Answer are each scored as if the other were not there.

Real parts: the MPE scheduler, flite speech on the model channel, causal Silero VAD and
the offline ASR/judges in score_item. Stand-ins, named: the conversation is tones
(exact clip lengths, mpe_helpers.fake_conversation) and the scheduler's own VAD is
mpe_helpers.AmplitudeVAD (Silero's acoustic decision replaced, the 120/800 ms rules real).
"""

from pathlib import Path

import numpy as np
import pytest
from mpe_helpers import RATE, AmplitudeVAD, fake_conversation, run_scheduler, spec, write_item

from duplexeval.benchmarks.mpe.scenes.scheduler import MPEScheduler
from duplexeval.benchmarks.mpe.score import score_item
from duplexeval.judges.llm import Judge
from duplexeval.specs import load_spec, repo_root
from duplexeval.tts import synthesize

FRAME = 1280
SPEC = spec()
STOP = SPEC["metrics"]["stop"]
LONG_REPLY = "Sure, let me walk you through it step by step, starting with the first part, then the rest"


def labels(n4r_s: float) -> list[tuple[str, float]]:
    return [("N2", 1.0), ("N4Q", 1.2), ("N4R", n4r_s), ("T", 1.3), ("N2", 1.1)]


@pytest.fixture(scope="module")
def judges():
    specs = {role: load_spec(repo_root() / "specs" / "judges" / f"{jid}.yaml", "judge")
             for role, jid in SPEC["judges"].items()}
    return {role: Judge.from_spec(s.data, s.path) for role, s in specs.items()}


class YieldingModel:
    """Like the oracle: a long reply 0.4 s after N4Q ends, cut at N4R's first sample; the
    gold answer at T's end."""

    def __init__(self) -> None:
        self.track = np.zeros(0, dtype=np.float32)
        self.done: set[str] = set()

    def _place(self, at_s: float, clip: np.ndarray) -> None:
        at = int(round(at_s * RATE))
        if len(self.track) < at + len(clip):
            self.track = np.concatenate([self.track, np.zeros(at + len(clip) - len(self.track), np.float32)])
        self.track[at:at + len(clip)] = clip

    def __call__(self, n: int, events: list[dict]) -> np.ndarray:
        for e in events:
            key = f"{e['type']}:{e.get('label')}"
            if key in self.done:
                continue
            if key == "turn_end:N4Q":
                self._place(e["t"] + 0.4, synthesize(LONG_REPLY, "kal16", RATE))
            elif key == "turn_start:N4R":
                self.track[int(round(e["t"] * RATE)):] = 0.0
            elif key == "turn_end:T":
                self._place(e["t"], synthesize("Nine dollars.", "kal16", RATE))
            else:
                continue
            self.done.add(key)
        seg = self.track[n * FRAME:(n + 1) * FRAME]
        out = np.zeros(FRAME, dtype=np.float32)
        out[:len(seg)] = seg
        return out


def scheduled(tmp_path: Path, n4r_s: float, model) -> tuple[Path, dict, dict]:
    sch = MPEScheduler(fake_conversation(labels(n4r_s)), SPEC, vad_factory=lambda: AmplitudeVAD(FRAME / RATE))
    inputs, outputs, events, _ = run_scheduler(sch, FRAME, model)
    write_item(tmp_path, inputs, outputs, events)
    starts = {e["label"]: e["t"] for e in events if e["type"] == "turn_start" and e["label"] != "N2"}
    ends = {e["label"]: e["t"] for e in events if e["type"] == "turn_end" and e["label"] != "N2"}
    return tmp_path, starts, ends


def stop_window_end(r_start: float, r_end: float) -> float:
    return max(r_start + STOP["deadline_s"], r_end + STOP["tail_s"])


def test_silent_model_stop_window_ends_exactly_where_t_starts(tmp_path):
    # N4R of 2 s: the window ends at N4R end + tail_s (0.5 s) = the 0.5 s turn gap.
    _, starts, ends = scheduled(tmp_path, 2.0, lambda n, ev: False)
    assert starts["T"] == pytest.approx(ends["N4R"] + SPEC["scheduler"]["turn_gap_s"], abs=1e-9)
    assert stop_window_end(starts["N4R"], ends["N4R"]) == pytest.approx(starts["T"], abs=1e-9)


def test_yielding_at_n4r_right_before_t_passes_stop_and_then_starts_t_fresh(tmp_path, judges):
    # N4R of 1.05 s: the window runs to N4R start + 2 s, past N4R end + the turn gap; the
    # scheduler holds T until the model has been silent 2 s, so T still starts after it.
    item, starts, ends = scheduled(tmp_path, 1.05, YieldingModel())
    assert starts["T"] >= stop_window_end(starts["N4R"], ends["N4R"]) - 1e-9
    records = score_item(item, SPEC, judges)
    by = {r["metric"]: r for r in records if r["metric"] in ("stop", "start", "answer")}
    assert by["stop"]["eligibility"] == "eligible" and by["stop"]["passed"] is True, by["stop"]
    assert by["start"]["outcome"] == "fresh", by["start"]
    assert by["answer"]["passed"] is True, by["answer"]
    assert all(r["passed"] for r in records if r["metric"] == "shush")
