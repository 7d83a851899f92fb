"""The reference agents behave as DESIGN.md says, judged on their recordings with real Silero.

oracle: answers T 0.16-0.24 s after it ends (inside the 0.5 s turn gap, clear of T's end), starts a long reply within 1 s of N4Q's end and
stops the instant N4R starts; labels reach only agents that declare `labels`.
cascade: replies only when Aria is addressed, and yields when the user barges in.
"""

from __future__ import annotations

import numpy as np
from runner_helpers import ScriptedStimulus

from duplexeval.audio import read_stereo_recording
from duplexeval.judges.vad import detect_episodes
from duplexeval.runner import load_model_spec, run_item, run_items
from duplexeval.tts import synthesize

RATE = 16000
FRAME_S = 0.08  # the agents' 80 ms frames


def _labels() -> dict[int, list[dict]]:
    return {
        5: [{"type": "label", "phase": "start", "label": "T", "turn_id": "t1", "gold_answer": "It costs nine dollars."}],
        20: [{"type": "label", "phase": "end", "label": "T", "turn_id": "t1"}],
        40: [{"type": "label", "phase": "start", "label": "N4Q", "turn_id": "q1"}],
        60: [{"type": "label", "phase": "end", "label": "N4Q", "turn_id": "q1"}],
        100: [{"type": "label", "phase": "start", "label": "N4R", "turn_id": "r1"}],
    }


def test_oracle_answers_t_yields_at_n4r_and_is_otherwise_quiet(tmp_path):
    stim = ScriptedStimulus(np.zeros(12 * RATE, dtype=np.float32), RATE, _labels())
    result = run_item(load_model_spec("oracle"), stim, tmp_path / "oracle")
    assert result.status == "ok", result.reason
    _, said, _ = read_stereo_recording(tmp_path / "oracle" / "recording.wav")
    episodes = detect_episodes(said, RATE)
    t_end, n4q_end, n4r_start = 20 * FRAME_S, 60 * FRAME_S, 100 * FRAME_S
    answer, reply = episodes[0], episodes[1]
    # Fresh onset clear of T's end and inside the 0.5 s gap (3 frames after T's frame; VAD edges included).
    assert t_end + 0.15 <= answer[0] <= t_end + 0.45
    assert n4q_end < reply[0] <= n4q_end + 1.0  # starts within 1 s of N4Q's end...
    assert reply[1] - reply[0] > 2.5  # ...talks through the 3 s gap...
    assert reply[1] <= n4r_start + 0.1  # ...and stops the instant N4R starts
    assert len(episodes) == 2
    assert np.all(said[int((n4r_start + 0.1) * RATE):] == 0)


def test_labels_go_only_to_agents_that_declare_them(tmp_path):
    # silent has no `labels` capability: a label reaching it would end the session in error.
    stim = ScriptedStimulus(np.zeros(9 * RATE, dtype=np.float32), RATE, _labels())
    result = run_item(load_model_spec("silent"), stim, tmp_path / "silent")
    assert result.status == "ok", result.reason


def _speech(text: str) -> np.ndarray:
    return synthesize(text, "rms", RATE)


def _silence(s: float) -> np.ndarray:
    return np.zeros(int(s * RATE), dtype=np.float32)


def test_cascade_answers_aria_ignores_others_and_yields_to_barge_in(tmp_path):
    ask = _speech("Aria, what is two plus three?")
    other = _speech("I think the weather is nice today.")
    addressed = np.concatenate([_silence(0.5), ask, _silence(4.0), other, _silence(3.0)])
    t_ask_end = 0.5 + len(ask) / RATE
    t_other = t_ask_end + 4.0

    long_ask = _speech("Hey Aria, can you tell me the capital of France?")
    interrupt = _speech("Wait, stop, no.")
    t_long_end = 0.5 + len(long_ask) / RATE
    barge_at = t_long_end + 1.4  # the reply starts ~0.7 s after the question and lasts ~2 s
    barge = np.concatenate([_silence(0.5), long_ask, _silence(1.4), interrupt, _silence(5.0)])

    items = [("addressed", lambda: ScriptedStimulus(addressed, RATE)), ("barge-in", lambda: ScriptedStimulus(barge, RATE))]
    results = run_items(load_model_spec("cascade"), items, tmp_path)
    assert [r.status for r in results] == ["ok", "ok"], [r.reason for r in results]

    _, said, _ = read_stereo_recording(tmp_path / "items" / "addressed" / "recording.wav")
    episodes = detect_episodes(said, RATE)
    assert len(episodes) == 1, episodes  # one reply, to Aria; none to the weather remark
    assert t_ask_end < episodes[0][0] < t_ask_end + 1.5
    assert episodes[0][1] < t_other

    _, said, _ = read_stereo_recording(tmp_path / "items" / "barge-in" / "recording.wav")
    episodes = detect_episodes(said, RATE)
    assert episodes and t_long_end < episodes[0][0] < barge_at
    assert episodes[0][1] < barge_at + 0.5  # it stopped within half a second of the user's voice
    assert np.all(said[int((barge_at + 0.5) * RATE):] == 0)


def test_oracle_yields_at_the_exact_sample_n4r_starts(tmp_path):
    # N4R starting 40 ms into a frame: the oracle talks until then, not a frame early
    # (a frame-early stop would make Stop "finished early" and exclude the event).
    labels = _labels()
    labels[100] = [{"type": "label", "phase": "start", "label": "N4R", "turn_id": "r1", "offset_s": 0.04}]
    stim = ScriptedStimulus(np.zeros(12 * RATE, dtype=np.float32), RATE, labels)
    result = run_item(load_model_spec("oracle"), stim, tmp_path / "oracle")
    assert result.status == "ok", result.reason
    _, said, _ = read_stereo_recording(tmp_path / "oracle" / "recording.wav")
    cut = round((100 * FRAME_S + 0.04) * RATE)
    assert np.any(said[cut - 200:cut] != 0) and np.all(said[cut + 1:] == 0)
