"""ASR words as windows claim them: sub-word pieces glued back onto their word first.

Faster-whisper (and Whisper generally) emits a number as pieces - "$1" then ",200" for
"twelve hundred dollars" - each with its own times. A window that claims words by their
midpoint can then keep ",200" and drop "$1", turning a correct answer into a wrong one
(issue 13, item 2). Backends strip each word's text, so whether a piece had a leading
space is read back from the transcript's text: a word found in the text directly after
the previous one, with no whitespace between, is a piece of it. This runs before any
window (Answer, Shush, every MTR rule) claims words.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

# Without the text to read spacing from: pieces that cannot start a word (",200", ".5", "%").
_PIECE = re.compile(r"^(?:[,.][0-9]|%)")


def merge_word_pieces(words: Sequence[Any], text: str | None) -> list[Any]:
    """Words with every piece merged into the word before it (times: first start, last end)."""
    out: list[Any] = []
    pos = 0
    text = text or ""
    for w in words:
        piece = w.text.strip()
        at = text.find(piece, pos) if piece and text else -1
        if at >= 0:
            glued = bool(out) and at == pos and at > 0 and not text[at - 1].isspace()
            pos = at + len(piece)
        else:
            glued = bool(out) and bool(_PIECE.match(piece))
        if glued:
            prev = out[-1]
            out[-1] = type(prev)(prev.text + piece, prev.start, max(prev.end, w.end))
        else:
            out.append(w)
    return out
