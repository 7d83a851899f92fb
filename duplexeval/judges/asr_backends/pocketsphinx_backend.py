"""pocketsphinx: the weak fallback that always works (it ships its en-us model).

Word timestamps come from the decoder's segmentation at 100 frames per second.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from duplexeval.audio import float_to_s16le
from duplexeval.judges.asr_backends.base import Backend
from duplexeval.judges.transcript import Transcript, Word

_FILLERS = re.compile(r"^(<s>|</s>|<sil>|\[.*\]|\+\+.*\+\+)$")


class PocketsphinxBackend(Backend):
    name = "pocketsphinx"
    package = "pocketsphinx"
    default_model = "en-us"

    def transcribe(self, audio_16k: np.ndarray, model: str, language: str | None, options: dict[str, Any]):
        from pocketsphinx import Decoder

        if model not in ("default", "en-us"):
            raise ValueError(f"pocketsphinx ships only its en-us model; got model {model!r} (use 'en-us')")
        decoder = Decoder(samprate=16000, **options)  # a fresh decoder: no state between calls
        frate = float(decoder.config["frate"])
        decoder.start_utt()
        decoder.process_raw(float_to_s16le(audio_16k), full_utt=True)
        decoder.end_utt()
        words = []
        for seg in decoder.seg():
            token = re.sub(r"\(\d+\)$", "", seg.word)  # alternate pronunciations: word(2)
            if not _FILLERS.match(token):
                words.append(Word(token, round(seg.start_frame / frate, 3), round((seg.end_frame + 1) / frate, 3)))
        return Transcript(" ".join(w.text for w in words), words, self.name, model)
