"""A causal detect_episodes over the samples a live StreamingVAD already saw reuses its work.

The MPE scheduler runs Silero live on the model's channel and the scorer runs it again
on the recording; for a model at the benchmark's rate those are the same samples. The
reuse must give exactly the episodes a fresh pass gives, and only for exactly those samples.
"""

from __future__ import annotations

import numpy as np
import pytest

from duplexeval.judges import vad as vad_module
from duplexeval.judges.vad import StreamingVAD, detect_episodes
from duplexeval.tts import synthesize

RATE = 16000
FRAME = 1280  # the harness's 80 ms frames at 16 kHz, as the scheduler pushes them


@pytest.fixture(scope="module")
def channel() -> np.ndarray:
    """Speech, a 0.5 s pause (merged), 2 s of silence, speech; not a whole number of windows."""
    one = synthesize("Nine dollars, please.", "kal16", RATE)
    two = synthesize("Okay.", "kal16", RATE)
    z = lambda s: np.zeros(int(s * RATE), dtype=np.float32)  # noqa: E731
    audio = np.concatenate([z(0.3), one, z(0.5), one, z(2.0), two, z(0.7)]).astype(np.float32)
    assert len(audio) % 512
    return audio


@pytest.fixture()
def model_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts Silero windows actually run; starts with no remembered streams."""
    monkeypatch.setattr(vad_module, "_recent", type(vad_module._recent)())
    calls: list[int] = []
    real = vad_module._SileroStream.prob

    def counted(self, window):
        calls.append(1)
        return real(self, window)

    monkeypatch.setattr(vad_module._SileroStream, "prob", counted)
    return calls


def _live(audio: np.ndarray, **kw) -> StreamingVAD:
    live = StreamingVAD(**kw)
    for i in range(0, len(audio), FRAME):
        live.push(audio[i:i + FRAME])
    return live


def _fresh(audio: np.ndarray, **kw) -> list[tuple[float, float]]:
    vad_module._recent.clear()
    return detect_episodes(audio, RATE, **kw)


def test_scoring_what_the_live_stream_saw_runs_only_the_last_window(channel, model_calls) -> None:
    expected = _fresh(channel)
    assert len(expected) == 2
    n_windows = len(model_calls)
    assert n_windows == len(channel) // 512 + 1
    _live(channel)
    model_calls.clear()
    assert detect_episodes(channel.copy(), RATE) == expected
    assert len(model_calls) == 1  # the zero-padded last window of flush(); the rest was replayed


def test_other_rules_on_the_scorer_side_still_give_a_fresh_pass_result(channel, model_calls) -> None:
    rules = {"threshold": 0.7, "merge_gap_ms": 300.0, "min_speech_ms": 250.0}
    expected = _fresh(channel, **rules)
    _live(channel, threshold=0.3)  # the live stream's own rules do not matter: probabilities do
    assert detect_episodes(channel, RATE, **rules) == expected


def test_one_changed_sample_is_a_fresh_pass(channel, model_calls) -> None:
    _live(channel)
    changed = channel.copy()
    changed[len(changed) // 2] += 1.0 / 32768
    expected = _fresh(changed)
    _live(channel)
    model_calls.clear()
    assert detect_episodes(changed, RATE) == expected
    assert len(model_calls) == len(changed) // 512 + 1


def test_a_prefix_of_what_the_stream_saw_is_a_fresh_pass(channel, model_calls) -> None:
    prefix = channel[: len(channel) - 3000]
    expected = _fresh(prefix)
    _live(channel)
    model_calls.clear()
    assert detect_episodes(prefix, RATE) == expected
    assert len(model_calls) == len(prefix) // 512 + 1


def test_a_stream_made_with_remember_false_is_not_reused(channel, model_calls) -> None:
    _live(channel, remember=False)
    model_calls.clear()
    detect_episodes(channel, RATE)
    assert len(model_calls) == len(channel) // 512 + 1


def test_only_the_most_recent_streams_are_kept(monkeypatch: pytest.MonkeyPatch, model_calls) -> None:
    monkeypatch.setattr(vad_module, "RECENT_STREAMS", 3)
    streams = [StreamingVAD() for _ in range(5)]
    assert list(vad_module._recent.values()) == streams[2:]
