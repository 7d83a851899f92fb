"""ASR backends behind `duplexeval.judges.asr.transcribe`.

Each backend module is imported only when chosen, so an optional extra that is not
installed costs nothing until someone selects it - and then fails with what to install,
not with a bare ImportError. Every backend returns the same `Transcript` of `Word`s
(`duplexeval.judges.transcript`), passed through `clean_words` (order kept, times inside
the clip, monotonic).
"""

from __future__ import annotations

from duplexeval.judges.asr_backends.base import (  # noqa: F401  (the package's API, as before)
    Backend,
    LocalWeights,
    LocalWeightsBackend,
    MissingExtraError,
    MissingWeightsError,
    OpenAIWhisperBackend,
    find_spec,
    is_local_path,
    path_weights,
    spec_weights,
    torch_device,
)
from duplexeval.lazy import LazyRegistry

# name -> module:Class (written out whole: image_sources reads these strings), imported when a spec's `asr.backend` chooses it.
BACKENDS: LazyRegistry[Backend] = LazyRegistry("ASR backend", {
    "faster-whisper": "duplexeval.judges.asr_backends.faster_whisper_backend:FasterWhisperBackend",
    "whisper-timestamped": "duplexeval.judges.asr_backends.whisper_timestamped_backend:WhisperTimestampedBackend",
    "stable-ts": "duplexeval.judges.asr_backends.stable_ts_backend:StableTsBackend",
    "qwen3-asr": "duplexeval.judges.asr_backends.qwen3_asr_backend:Qwen3AsrBackend",
    "pocketsphinx": "duplexeval.judges.asr_backends.pocketsphinx_backend:PocketsphinxBackend",
    "parakeet-tdt": "duplexeval.judges.asr_backends.parakeet_backend:ParakeetBackend",
})
