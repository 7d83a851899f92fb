"""What both Full-Duplex-Bench scorers share (v1.0: score.py, v1.5: score_v15.py): the results
version, the ASR words of a stretch of audio, and why an item is not ok."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

RESULTS_VERSION = 1
Words = list[Any]


def asr_words(audio: np.ndarray, rate: int, offset_s: float, bench: dict[str, Any], calls: Counter) -> Words:
    """ASR words of `audio` (which starts `offset_s` into the recording), on the recording's axis.
    Digital silence has no words without running the ASR (options.silence_floor; ours)."""
    from duplexeval.judges.asr import transcribe
    from duplexeval.judges.transcript import Word
    from duplexeval.scoring.words import merge_word_pieces

    if len(audio) == 0 or float(np.max(np.abs(audio))) < float(bench["options"]["silence_floor"]):
        return []
    calls["asr"] += 1
    t = transcribe(audio, rate, bench["asr"])
    return [Word(w.text, round(w.start + offset_s, 3), round(w.end + offset_s, 3))
            for w in merge_word_pieces(list(t.words), t.text)]


def not_ok_reason(item_dir: Path, status: str) -> str:
    """Why an item is not ok: its verified status's reason (a damaged file is named there)."""
    from duplexeval.runner.integrity import item_status

    verified = item_status(item_dir) if item_dir.is_dir() else None
    return str((verified or {}).get("reason") or status)
