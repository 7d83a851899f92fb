"""TTS backends behind `duplexeval.tts.synthesize`, chosen by a suite's `tts` block.

flite (Debian's, four voices) is the default and lives in `duplexeval.tts`; the papers'
voice, Qwen3-TTS (Duplex-MPE App. A2.3: speakers A-D in four fixed voices), is
`duplexeval.tts_backends.qwen3_tts`. A backend module is imported only when chosen.
"""

from __future__ import annotations

TTS_BACKENDS = ("flite", "qwen3-tts")
