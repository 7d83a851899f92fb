"""Turn segmentation of a dual-channel dialogue (MTR-DuplexBench, 方法详解 1).

ASR (word timestamps) + Silero VAD on both channels -> VAD segments of both speakers,
sorted by time, each with its words -> the segmentation judge `votes` times (each sample
its own cache entry) -> majority-vote clustering (duplexeval.benchmarks.mtr.clustering).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from duplexeval.benchmarks.mtr.clustering import Turn, cluster_votes, response_windows


@dataclass
class Segmentation:
    turns: list[Turn]
    segments: list[dict[str, Any]]
    votes: list[list[tuple[float, float]] | None]
    cache_keys: list[str] = field(default_factory=list)
    judge_id: str = ""
    judge_label: str = ""

    def windows(self, audio_end: float) -> list[tuple[float, float]]:
        return response_windows(self.turns, audio_end)

    def as_json(self, audio_end: float) -> dict[str, Any]:
        return {"schema": "duplexeval.mtr-turns/1", "judge": {"id": self.judge_id, "label": self.judge_label},
                "turns": [{**t.as_dict(), "response_window": [round(a, 3), round(b, 3)]}
                          for t, (a, b) in zip(self.turns, self.windows(audio_end))],
                "votes": [None if v is None else [[round(s, 3), round(e, 3)] for s, e in v] for v in self.votes],
                "cache_keys": self.cache_keys, "segments": self.segments}


def speech_segments(audio: np.ndarray, rate: int, speaker: str, vad: dict[str, Any], asr: dict[str, Any] | None) -> list[dict[str, Any]]:
    """VAD segments of one channel, each with the words (by midpoint) the ASR heard in it."""
    from duplexeval.judges.asr import transcribe, words_in_window
    from duplexeval.judges.vad import vad_hysteresis
    from duplexeval.judges.vad_cache import cached_episodes

    # Cached by content: every worker process that plays a unit of the job rebuilds its plan.
    episodes = cached_episodes(audio, rate, threshold=float(vad["threshold"]), min_speech_ms=float(vad["min_speech_ms"]),
                               merge_gap_ms=float(vad["merge_gap_ms"]), mode=vad.get("mode", "offline"),
                               hysteresis=vad_hysteresis(vad), scorer="mtr-segmentation")
    if not episodes:
        return []
    words = transcribe(audio, rate, asr).words if asr is not None else []
    return [{"speaker": speaker, "start": round(s, 3), "end": round(e, 3),
             "text": " ".join(w.text.strip() for w in words_in_window(words, s, e))} for s, e in episodes]


def dialogue_segments(user: np.ndarray, assistant: np.ndarray, rate: int, vad: dict[str, Any],
                      asr: dict[str, Any] | None) -> list[dict[str, Any]]:
    segs = speech_segments(user, rate, "user", vad, asr) + speech_segments(assistant, rate, "assistant", vad, asr)
    return sorted(segs, key=lambda s: (s["start"], s["end"], s["speaker"]))


def _vote(verdict) -> list[tuple[float, float]] | None:
    if not getattr(verdict, "parsed_ok", True) or verdict.value is None:
        return None
    return [(float(t["start"]), float(t["end"])) for t in verdict.value]


def segment_turns(segments: list[dict[str, Any]], judge, segmentation: dict[str, Any],
                  artifacts: dict[str, str] | None = None) -> Segmentation:
    """Asks the judge for `segmentation.votes` samples and clusters them.

    An LLM judge gives `votes` samples (each its own cache key); a deterministic offline
    judge gives one, counted `votes` times (identical votes cluster to themselves).
    """
    n_votes = int(segmentation["votes"])
    inputs = {"segments": segments}
    if getattr(judge, "samples", 1) > 1 or hasattr(judge, "cache"):
        verdicts = [judge.decide(inputs, artifacts, sample=k) for k in range(n_votes)]
    else:
        verdicts = judge.decide_samples(inputs, artifacts) * n_votes
    votes = [_vote(v) for v in verdicts]
    turns = cluster_votes(votes, overlap_threshold=float(segmentation["overlap_threshold"]),
                          overlap_basis=segmentation.get("overlap_basis", "shorter"),
                          survival=segmentation["survival"], center=segmentation.get("center", "median"))
    keys = list(dict.fromkeys(v.cache_key for v in verdicts))
    return Segmentation(turns, segments, votes, keys, getattr(judge, "id", ""), getattr(judge, "label", ""))


def segment_dialogue(user: np.ndarray, assistant: np.ndarray, rate: int, bench: dict[str, Any], judge,
                     artifacts: dict[str, str] | None = None) -> Segmentation:
    """The whole pipeline with the benchmark spec's vad, asr and segmentation blocks."""
    segments = dialogue_segments(user, assistant, rate, bench["vad"], bench.get("asr"))
    return segment_turns(segments, judge, bench["segmentation"], artifacts)
