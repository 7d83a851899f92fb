"""TTS backends behind `duplexeval.tts.synthesize`, chosen by a suite's `tts` block.

flite (Debian's, four voices) is the default and lives in `duplexeval.tts`; the papers'
voice, Qwen3-TTS (Duplex-MPE App. A2.3: speakers A-D in four fixed voices), is
`duplexeval.tts_backends.qwen3_tts`. Every other backend is a `module:Class` in
`BACKENDS` (duplexeval.lazy), imported only when chosen; its class has the four static
methods of `TtsBackend`.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from duplexeval.lazy import LazyRegistry


class TtsBackend(Protocol):
    """What `duplexeval.tts` asks of a backend: its settings from the suite's `tts` block, the
    voice of a speaker, the cache key's components, and one clip at the backend's own rate."""

    @staticmethod
    def settings(tts: dict[str, Any]) -> dict[str, Any]: ...

    @staticmethod
    def voice_for(cfg: dict[str, Any], speaker: str | None, voice: str) -> str: ...

    @staticmethod
    def cache_components(text: str, voice: str, rate: int, cfg: dict[str, Any], version_: int) -> dict[str, Any]: ...

    @staticmethod
    def synthesize_native(text: str, voice: str, cfg: dict[str, Any]) -> tuple[np.ndarray, int]: ...


BACKENDS: LazyRegistry[TtsBackend] = LazyRegistry("TTS backend", {
    "qwen3-tts": "duplexeval.tts_backends.qwen3_tts:Qwen3Tts",
})
TTS_BACKENDS = ("flite", *BACKENDS)   # every name a suite's `tts.backend` may give
