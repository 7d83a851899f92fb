"""stable-ts: stabilised Whisper word timestamps (named in the design card); an optional extra.

stable-ts imports torchaudio at top level, and no torchaudio loads beside the CPU torch
2.13.0 this project's venv uses (docs/judges.md), so it runs in the harness image
(`images/harness/`, a matching torch/torchaudio pair). Same weights as whisper-timestamped
(an openai-whisper checkpoint from a spec, or a local path), same option rule, same
`Transcript`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from duplexeval.judges.asr_backends.base import MissingExtraError, OpenAIWhisperBackend
from duplexeval.judges.transcript import Transcript, clean_words

# stable-ts's own defaults for the settings that move words, written out for the key.
DEFAULT_OPTIONS: dict[str, Any] = {
    "beam_size": None,
    "best_of": None,
    "vad": False,
    "regroup": True,
    "suppress_silence": True,
}


def _import():
    try:
        import stable_whisper
    except (ImportError, OSError) as exc:  # OSError: torchaudio's native library failing to load
        raise MissingExtraError("ASR backend 'stable-ts' is not installed or does not load: "
                                "pip install duplexeval[stable-ts] in an environment with a matching "
                                "torch/torchaudio pair, e.g. the harness image images/harness "
                                f"(docs/judges.md) [{type(exc).__name__}: {exc}]") from exc
    return stable_whisper


class StableTsBackend(OpenAIWhisperBackend):
    name = "stable-ts"
    package = "stable-ts"

    def require(self) -> None:
        _import()

    def effective_options(self, options: dict[str, Any]) -> dict[str, Any]:
        return super().effective_options({**DEFAULT_OPTIONS, **options})

    def transcribe(self, audio_16k: np.ndarray, model: str, language: str | None, options: dict[str, Any]):
        sw = _import()
        device, opts = self.call_options(options)
        whisper = self.whisper_model(model, device, prepare=sw.modify_model)  # its transcribe(), patched on once
        result = whisper.transcribe(np.asarray(audio_16k, dtype=np.float32), language=language, verbose=None, **opts)
        raw = [(w.word, w.start, w.end) for seg in result.segments for w in (seg.words or [])]
        words = clean_words(raw, len(audio_16k) / 16000)
        return Transcript(result.text.strip(), words, self.name, model)
