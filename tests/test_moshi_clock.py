"""The clock per model (issue 26, item 3): why lockstep reproduces a frame-synchronous
model's real-time timing, shown on moshi-tiny (Moshi's real code path, random weights).

A frame-synchronous model (the Moshi family, `latency_clock: lockstep` in its spec) makes
output frame n from the input up to frame n. On the realtime clock the harness sends frame
n at tick n and then plays whatever output has arrived: output n cannot have arrived yet, so
it plays at tick n + 1 when the step took less than a frame, and later only when the model
fell behind (an underrun: silence, and every later frame one tick later). So the realtime
recording is the lockstep one, frame for frame, delayed by one frame plus the frames the
model was late: the same onsets to within a frame when every step fits (docs/runner.md,
"The clock per model").

The onset here is the first 80 ms frame of the model channel above an RMS of 0.05: a plain
stand-in for the VAD's speech onset (Silero would find the same shift in the same audio).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile as sf
from runner_helpers import tone

from duplexeval.runner import FileStimulus, load_model_spec, run_items

RATE = 24000
FRAME = 1920  # 80 ms at 24 kHz, moshi-tiny's frame
SEED = 11


def _frames(path) -> np.ndarray:
    x, sr = sf.read(path, dtype="int16")
    assert sr == RATE
    model = x[:, 1].astype(np.int32)
    return model[: len(model) // FRAME * FRAME].reshape(-1, FRAME)


def _onset(frames: np.ndarray) -> int:
    rms = np.sqrt(np.mean((frames / 32768.0) ** 2, axis=1))
    return int(np.argmax(rms > 0.05)) if (rms > 0.05).any() else -1


def test_a_round_played_lockstep_and_realtime_has_the_same_onset_to_within_a_frame(tmp_path):
    spec = load_model_spec("moshi-tiny")
    assert spec.latency_clock == "lockstep" and {"lockstep", "realtime"} <= set(spec.clocks)
    # A round: silence, the user's turn, the response window.
    audio = np.concatenate([np.zeros(RATE // 2, np.float32), tone(1.2, rate=RATE, freq=220.0, seed=3),
                            np.zeros(RATE, np.float32)])
    items = [("round", lambda: FileStimulus(audio, RATE, tail_frames=2))]
    runs = {clock: run_items(spec, items, tmp_path / clock, clock, rate=RATE, seed=SEED)[0]
            for clock in ("lockstep", "realtime")}
    assert all(r.status == "ok" for r in runs.values()), {c: r.reason for c, r in runs.items()}
    lock, real = (_frames(runs[c].item_dir / "recording.wav") for c in ("lockstep", "realtime"))
    assert lock.shape == real.shape
    underruns = json.loads((runs["realtime"].item_dir / "status.json").read_text())["underrun_frames"]

    start = _onset(lock)
    assert start >= 0, "moshi-tiny said nothing: no onset to compare"
    # Walk the realtime recording: silence where the model was late, else lockstep's next frame.
    j, delays = start, []
    for n, frame in enumerate(real):
        if j < len(lock) and np.abs(frame - lock[j]).max() <= 2:  # width 1 both times: the same kernels
            delays.append(n - j)
            j += 1
        elif j > start or frame.any():
            assert not frame.any(), f"realtime frame {n} is neither lockstep frame {j} nor an underrun"
    assert j >= len(lock) - underruns  # all of it played but what was still in the buffer at the end
    assert delays and min(delays) >= 1  # never earlier than the input that made it
    assert delays == sorted(delays)  # a late frame delays everything after it, nothing catches up
    onset_shift = _onset(real) - start
    assert onset_shift == delays[0]
    if underruns == 1:  # only tick 0 (nothing can have arrived): every step fitted in its frame
        assert onset_shift == 1 and set(delays) == {1}
    else:  # the machine was too busy for real time: the backlog is heard as latency, frame for frame
        assert onset_shift <= underruns


def test_a_latency_clock_the_model_cannot_run_on_is_named():
    from duplexeval.specs.modelspec import model_spec_from

    spec = {"id": "clocked", "clocks": ["realtime"], "latency_clock": "lockstep",
            "launch": {"backend": "local", "command": ["{python}", "-c", "pass"]},
            "audio": {"in_rate": 16000, "out_rate": 16000, "frame_ms": 80}}
    with pytest.raises(ValueError, match=r"model spec clocked: latency_clock 'lockstep' is not one of its clocks \(realtime\)"):
        model_spec_from(spec)
    assert model_spec_from({**spec, "latency_clock": "realtime"}).latency_clock == "realtime"
    assert model_spec_from({k: v for k, v in spec.items() if k != "latency_clock"}).latency_clock is None
