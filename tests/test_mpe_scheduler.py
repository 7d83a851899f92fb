"""The Duplex-MPE scheduler rules (§3.4) against hand-made model output streams."""

import numpy as np
import pytest
from mpe_helpers import RATE, AmplitudeVAD, fake_conversation, run_scheduler, spec

from duplexeval.benchmarks.mpe.scenes.scheduler import MPEScheduler

FRAME = 1280  # 80 ms, Moshi's frame
FRAME_S = FRAME / RATE
LABELS = [("N2", 1.0), ("T", 1.3), ("N2", 1.1), ("N4Q", 1.2), ("N4R", 1.05), ("N3", 0.9)]


def make(model_spec=None):
    return MPEScheduler(fake_conversation(LABELS), model_spec or spec(), vad_factory=lambda: AmplitudeVAD(FRAME_S))


def starts_and_ends(events):
    starts = {e["turn"]: e for e in events if e["type"] == "turn_start"}
    ends = {e["turn"]: e for e in events if e["type"] == "turn_end"}
    return starts, ends


def silent(n, events):
    return False


def test_silent_model_hears_exact_half_second_gaps_and_three_second_n4_gap():
    inputs, _, events, _ = run_scheduler(make(), FRAME, silent)
    starts, ends = starts_and_ends(events)
    pre_end = next(e for e in events if e["type"] == "preamble_end")
    assert starts[0]["t"] == pytest.approx(pre_end["t"] + 0.5, abs=1e-9)
    for i in (1, 2, 3, 5):
        assert starts[i]["t"] - ends[i - 1]["t"] == pytest.approx(0.5, abs=1e-9)
    assert starts[4]["t"] - ends[3]["t"] == pytest.approx(3.0, abs=1e-9)
    # the clip lands sample-exactly where the event says
    s = starts[1]["sample"]
    assert np.abs(inputs[s - 1]) == 0 and np.abs(inputs[s + 100]) > 0


def _talks_after_t(seconds):
    def model(n, events):
        t_end = next((e["t"] for e in events if e["type"] == "turn_end" and e["label"] == "T"), None)
        return t_end is not None and t_end + 0.2 <= n * FRAME_S < t_end + 0.2 + seconds
    return model


def test_next_turn_waits_for_two_seconds_of_model_silence():
    _, out, events, _ = run_scheduler(make(), FRAME, _talks_after_t(3.0))
    starts, ends = starts_and_ends(events)
    speech = np.nonzero(np.abs(out) > 1e-3)[0]
    speech_end = (speech[-1] + 1) / RATE
    gap = starts[2]["t"] - speech_end
    assert 2.0 <= gap < 2.0 + 2 * FRAME_S  # waited for 2 s of silence, decided on frame boundaries
    assert starts[2]["capped"] is False and starts[2]["waited_s"] > 0


def test_wait_is_capped_at_sixty_seconds():
    _, _, events, _ = run_scheduler(make(), FRAME, _talks_after_t(1000.0))
    starts, ends = starts_and_ends(events)
    assert starts[2]["t"] - ends[1]["t"] == pytest.approx(60.0, abs=1e-9)
    assert starts[2]["capped"] is True


def test_n4r_follows_n4q_after_exactly_three_seconds_whatever_the_model_does():
    def talks_after_n4q(n, events):
        q_end = next((e["t"] for e in events if e["type"] == "turn_end" and e["label"] == "N4Q"), None)
        return q_end is not None and n * FRAME_S >= q_end + 0.3
    _, _, events, _ = run_scheduler(make(), FRAME, talks_after_n4q)
    starts, ends = starts_and_ends(events)
    assert starts[4]["t"] - ends[3]["t"] == pytest.approx(3.0, abs=1e-9)


def test_recording_outlasts_every_window():
    inputs, _, events, _ = run_scheduler(make(), FRAME, silent)
    starts, ends = starts_and_ends(events)
    scene_end = next(e for e in events if e["type"] == "scene_end")
    assert scene_end["t"] >= ends[4]["t"] + 0.5  # Stop's N4R end + tail
    assert scene_end["t"] >= ends[1]["t"] + 5.0  # Start's window after T
    assert len(inputs) / RATE == pytest.approx(scene_end["t"], abs=FRAME_S)


def test_labels_for_the_oracle_carry_frames_and_the_gold_answer():
    _, _, events, labels = run_scheduler(make(), FRAME, silent)
    t_labels = [m for m in labels if m["label"] == "T"]
    assert [m["phase"] for m in t_labels] == ["start", "end"]
    assert all(m["gold_answer"] == "nine dollars" and m["type"] == "label" for m in t_labels)
    starts, _ = starts_and_ends(events)
    assert t_labels[0]["frame_idx"] == starts[1]["frame"]
    assert len(labels) == 2 * len(LABELS)


def test_gaps_do_not_depend_on_the_model_frame_size():
    for frame in (160, 1280, 16000):
        sch = MPEScheduler(fake_conversation(LABELS), spec(), vad_factory=lambda f=frame: AmplitudeVAD(f / RATE))
        _, _, events, _ = run_scheduler(sch, frame, silent)
        starts, ends = starts_and_ends(events)
        assert starts[1]["t"] - ends[0]["t"] == pytest.approx(0.5, abs=1e-9)


def test_a_reply_starting_late_in_the_gap_holds_the_next_turn():
    # Onset 0.4 s after T ends: not yet 120 ms of speech when the 0.5 s gap ends, but a
    # burst is running, so the next turn waits for it and then for 2 s of silence.
    def late_reply(n, events):
        t_end = next((e["t"] for e in events if e["type"] == "turn_end" and e["label"] == "T"), None)
        return t_end is not None and t_end + 0.4 <= n * FRAME_S < t_end + 1.4
    _, out, events, _ = run_scheduler(make(), FRAME, late_reply)
    starts, ends = starts_and_ends(events)
    speech_end = (np.nonzero(np.abs(out) > 1e-3)[0][-1] + 1) / RATE
    assert starts[2]["t"] >= speech_end + 2.0
