"""The cascade agent remembers transcripts of identical utterances (the turns before T recur
in both MPE conditions), in the process and on disk for its other processes; a hit must be
exactly what the real Whisper would say again."""

from __future__ import annotations

import json

import numpy as np
import pytest

from duplexeval.agents import cascade
from duplexeval.agents.cascade import CascadeAgent
from duplexeval.tts import synthesize


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """Each test starts with no transcripts on disk."""
    monkeypatch.setenv("DUPLEXEVAL_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


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
    fresh.asr = fresh_counting = CountingASR(fresh.asr)
    assert fresh.transcribe(hello) == first and fresh_counting.calls == 0  # another process: from disk
    for entry in cascade.transcript_store().entry_paths():
        entry.unlink()
    assert CascadeAgent().transcribe(hello) == first  # what a miss computes: the memo changes no byte
    changed = hello.copy()
    changed[100] += 1e-3  # one sample differs: decoded again
    agent.transcribe(changed)
    assert counting.calls == 2


def test_the_memo_is_bounded_and_forgets_the_oldest(monkeypatch):
    monkeypatch.setattr(cascade, "TRANSCRIPTS_KEPT", 2)
    monkeypatch.setattr(CascadeAgent, "_stored", lambda self, key: None)  # the in-process memo alone
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


def test_a_damaged_or_foreign_entry_is_decoded_again_and_an_unwritable_cache_costs_nothing(own_cache, monkeypatch):
    hello = synthesize("Aria, is the pool open on Sundays?", "slt", 16000)
    expected = CascadeAgent().transcribe(hello)
    (entry,) = cascade.transcript_store().entry_paths()
    other = json.dumps({"key": entry.stem, "components": cascade.transcript_components("0000"), "text": "no"})
    for damage in ('{"key": "', other):
        entry.write_text(damage)  # cut short; another audio's entry under this name
        agent = CascadeAgent()
        agent.asr = counting = CountingASR(agent.asr)
        assert agent.transcribe(hello) == expected and counting.calls == 1
    blocked = own_cache.parent / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("DUPLEXEVAL_CACHE", str(blocked))  # mkdir under a file fails
    assert CascadeAgent().transcribe(hello) == expected


def test_another_decoding_reads_other_entries(monkeypatch):
    def key() -> str:
        return cascade.transcript_store().key(cascade.transcript_components("ab" * 32))

    before = key()
    with monkeypatch.context() as mp:
        mp.setitem(cascade.ASR_OPTIONS, "beam_size", 5)
        cascade._asr_config.cache_clear()
        try:
            assert key() != before
        finally:
            mp.undo()
            cascade._asr_config.cache_clear()
    assert key() == before
