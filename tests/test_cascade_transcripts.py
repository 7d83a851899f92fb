"""The cascade agent remembers transcripts of identical utterances (the MPE preamble recurs
in every conversation); a hit must be exactly what the real Whisper would say again."""

from __future__ import annotations

import numpy as np

from duplexeval.agents import cascade
from duplexeval.agents.cascade import CascadeAgent
from duplexeval.tts import synthesize


class CountingASR:
    """Wraps the agent's real Whisper model to count how often it decodes."""

    def __init__(self, asr) -> None:
        self.asr, self.calls = asr, 0

    def transcribe(self, *args, **kwargs):
        self.calls += 1
        return self.asr.transcribe(*args, **kwargs)


def test_identical_audio_is_decoded_once_and_gets_the_same_transcript():
    agent = CascadeAgent()
    agent.asr = counting = CountingASR(agent.asr)
    hello = synthesize("Aria, what time does the bakery open?", "slt", 16000)
    first = agent.transcribe(hello)
    agent.reset()  # a new session: the memo outlives it
    assert agent.transcribe(hello.copy()) == first and counting.calls == 1
    fresh = CascadeAgent()
    assert fresh.transcribe(hello) == first  # what a miss computes: the memo changes no byte
    changed = hello.copy()
    changed[100] += 1e-3  # one sample differs: decoded again
    agent.transcribe(changed)
    assert counting.calls == 2


def test_the_memo_is_bounded_and_forgets_the_oldest(monkeypatch):
    monkeypatch.setattr(cascade, "TRANSCRIPTS_KEPT", 2)
    agent = CascadeAgent()
    agent.asr = counting = CountingASR(agent.asr)
    clips = [np.zeros(1600 * (n + 1), dtype=np.float32) for n in range(3)]
    for clip in clips:
        agent.transcribe(clip)
    assert len(agent.transcripts) == 2 and counting.calls == 3
    agent.transcribe(clips[2])  # still kept
    assert counting.calls == 3
    agent.transcribe(clips[0])  # the oldest was forgotten
    assert counting.calls == 4
