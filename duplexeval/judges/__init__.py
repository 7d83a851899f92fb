"""Judges: Silero VAD, ASR and LLM judges behind one interface, with a content-hash cache.

The names below can be imported from `duplexeval.judges` directly; they are loaded on
first use (PEP 562), so importing this package (the CLI does) costs nothing - torch,
onnxruntime and the SDKs load only when a judge actually runs.

    detect_episodes, StreamingVAD, EpisodeTracker      duplexeval.judges.vad
    transcribe, Transcript, Word, words_in_window      duplexeval.judges.asr
    Judge, load_judge                                  duplexeval.judges.llm
    OfflineJudge, OFFLINE_LABEL                        duplexeval.judges.offline
    Verdict                                            duplexeval.judges.verdict
    JudgeCache, CacheMiss                              duplexeval.judges.cache
    JudgeCallError                                     duplexeval.judges.retry
    MissingApiKeyError                                 duplexeval.judges.providers
    MissingExtraError                                  duplexeval.judges.asr
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "detect_episodes": "vad", "StreamingVAD": "vad", "EpisodeTracker": "vad",
    "transcribe": "asr", "Transcript": "asr", "Word": "asr", "words_in_window": "asr",
    "MissingExtraError": "asr",
    "Judge": "llm", "load_judge": "llm",
    "OfflineJudge": "offline", "OFFLINE_LABEL": "offline",
    "Verdict": "verdict",
    "JudgeCache": "cache", "CacheMiss": "cache",
    "JudgeCallError": "retry",
    "MissingApiKeyError": "providers",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
