"""Hand-made stimuli, model streams and specs shared by the Duplex-MPE tests."""

from __future__ import annotations

import copy

import numpy as np

from duplexeval.benchmarks.mpe.scenes.model import ConversationTurn
from duplexeval.benchmarks.mpe.scenes.render import RenderedConversation, RenderedTurn
from duplexeval.judges.vad import EpisodeTracker

RATE = 16000

# The values the lead's specs/benchmarks/_mpe-base.yaml carries (paper §3.4, §3.5).
SPEC = {
    "id": "mpe-test",
    "condition": "explicit",
    "audio": {"rate": RATE},
    "vad": {"backend": "silero", "mode": "causal", "threshold": 0.5, "sample_rate": 16000,
            "min_speech_ms": 120, "merge_gap_ms": 800},
    "asr": {"backend": "faster-whisper", "model": "tiny.en"},
    "judges": {"answer": "mpe-answer-offline", "backchannel": "mpe-backchannel-offline"},
    "scheduler": {"turn_gap_s": 0.5, "yield_silence_s": 2.0, "max_wait_s": 60.0, "n4_gap_s": 3.0},
    "metrics": {
        "asr_pad_s": 0.25,
        "start": {"window_s": 5.0},
        "answer": {"unparseable_counts_as": "incorrect", "denominator": "presence"},
        "shush": {"labels": ["N1", "N2", "N3"], "empty_asr_fails": True, "window": "turn+gap"},
        "stop": {"deadline_s": 2.0, "tail_s": 0.5, "min_eligible": 30},
        "statistics": {"wilson_confidence": 0.95},
    },
}


def spec(**overrides) -> dict:
    out = copy.deepcopy(SPEC)
    out.update(overrides)
    return out


def tone(seconds: float, amp: float = 0.2, rate: int = RATE) -> np.ndarray:
    n = int(round(seconds * rate))
    return (amp * np.sin(2 * np.pi * 220 * np.arange(n) / rate)).astype(np.float32)


def fake_conversation(labels_and_lengths: list[tuple[str, float]], preamble_s: float = 1.0) -> RenderedConversation:
    """A conversation of tones: exact, known clip lengths without TTS."""
    turns = []
    for i, (label, seconds) in enumerate(labels_and_lengths):
        turn = ConversationTurn(index=i, turn_id=f"fake:{i}", speaker="ABCD"[i % 4], voice="slt", label=label,
                                text=f"turn {i}", gold_answer="nine dollars" if label == "T" else None)
        turns.append(RenderedTurn(turn, tone(seconds)))
    return RenderedConversation("fake", "explicit", RATE, tone(preamble_s), tuple(turns), "0" * 64)


class AmplitudeVAD:
    """Test double for StreamingVAD: a chunk is speech when it is not silent.

    It drives J's EpisodeTracker (the real 120 ms / 800 ms rules), so only Silero's
    acoustic decision is replaced, and timings are exact to the frame.
    """

    def __init__(self, frame_s: float, min_speech_ms: float = 120, merge_gap_ms: float = 800):
        self.tracker = EpisodeTracker(threshold=0.5, min_speech_ms=min_speech_ms, merge_gap_ms=merge_gap_ms,
                                      frame_s=frame_s)

    def push(self, chunk_16k: np.ndarray) -> None:
        self.tracker.push_prob(1.0 if np.max(np.abs(chunk_16k), initial=0.0) > 1e-3 else 0.0)

    @property
    def speaking(self) -> bool:
        return self.tracker.speaking

    @property
    def in_burst(self) -> bool:
        return self.tracker._in_burst

    @property
    def silence_s(self) -> float:
        return self.tracker.silence_s

    @property
    def time_s(self) -> float:
        return self.tracker.time_s


def run_scheduler(scheduler, frame_samples: int, model, max_frames: int = 100000):
    """Drives a scheduler like the runner does; `model(frame_idx, events_so_far)` -> speaking?

    Returns (input audio, model audio, events, labels).
    """
    scheduler.bind(RATE, frame_samples)
    inputs, outputs, events, labels = [], [], [], []
    for n in range(max_frames):
        frame = scheduler.next_input(n)
        labels += scheduler.drain_labels()
        if frame is None:
            events += scheduler.drain_events()
            break
        assert len(frame) == frame_samples
        said = model(n, events)
        if isinstance(said, np.ndarray):
            out = said.astype(np.float32)
        else:
            out = tone(frame_samples / RATE, amp=0.1) if said else np.zeros(frame_samples, np.float32)
        scheduler.observe_output(n, out)
        events += scheduler.drain_events()
        inputs.append(frame)
        outputs.append(out)
    else:
        raise AssertionError("scheduler never finished")
    return np.concatenate(inputs), np.concatenate(outputs), events, labels


def episodes_from_bursts(bursts: list[tuple[float, float]], total_s: float, frame_s: float = 0.01,
                         min_speech_ms: float = 120, merge_gap_ms: float = 800) -> list[tuple[float, float]]:
    """Raw speech bursts -> MPE episodes through J's EpisodeTracker (drop short, then merge)."""
    tracker = EpisodeTracker(threshold=0.5, min_speech_ms=min_speech_ms, merge_gap_ms=merge_gap_ms, frame_s=frame_s)
    for k in range(int(round(total_s / frame_s))):
        t = (k + 0.5) * frame_s
        tracker.push_prob(1.0 if any(a <= t < b for a, b in bursts) else 0.0)
    tracker.finish()
    return tracker.episodes()


class ClipModel:
    """A model that says `clip` `delay_s` after a turn with `label` reaches `phase` ("end"/"start")."""

    def __init__(self, frame_samples: int, cues: list[tuple[str, str, float, np.ndarray]]):
        self.frame_samples = frame_samples
        self.cues = cues
        self.track = np.zeros(0, dtype=np.float32)

    def __call__(self, n: int, events: list[dict]) -> np.ndarray:
        for cue in list(self.cues):
            label, phase, delay_s, clip = cue
            hit = next((e for e in events if e["type"] == f"turn_{phase}" and e["label"] == label), None)
            if hit is not None:
                at = int(round((hit["t"] + delay_s) * RATE))
                need = at + len(clip)
                if len(self.track) < need:
                    self.track = np.concatenate([self.track, np.zeros(need - len(self.track), np.float32)])
                self.track[at:need] += clip
                self.cues.remove(cue)
        a, b = n * self.frame_samples, (n + 1) * self.frame_samples
        out = np.zeros(self.frame_samples, dtype=np.float32)
        seg = self.track[a:b]
        out[:len(seg)] = seg
        return out


def write_item(item_dir, inputs: np.ndarray, outputs: np.ndarray, events: list[dict]) -> None:
    """An item folder as docs/architecture.md defines it (status.json last)."""
    from duplexeval.audio import write_wav
    from duplexeval.io import atomic_write_json, atomic_write_jsonl

    write_wav(item_dir / "recording.wav", np.stack([inputs, outputs], axis=1), RATE)
    atomic_write_jsonl(item_dir / "events.jsonl", events)
    atomic_write_json(item_dir / "status.json", {"status": "ok", "reason": None})
