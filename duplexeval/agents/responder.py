"""The cascade agent's responder: decide whether Aria is addressed, and what to say.

Rule-based on purpose: deterministic and offline, so the cascade can run in tests and
on machines with no LLM access. The addressee check accepts the spellings Whisper
tiny.en writes for flite's "Aria" ("Aria", "Arya", "Ari").
"""

from __future__ import annotations

import re

ADDRESSED = re.compile(r"\b(aria|arya|ariya|ariah|ari)\b", re.IGNORECASE)
NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty".split())}
NUMBER_WORDS.update({"free": 3, "tree": 3, "to": 2, "too": 2, "for": 4})  # frequent ASR slips
OPS = {"plus": lambda a, b: a + b, "minus": lambda a, b: a - b, "times": lambda a, b: a * b}
CAPITALS = {"france": "Paris", "germany": "Berlin", "italy": "Rome", "spain": "Madrid", "japan": "Tokyo"}


def is_addressed(transcript: str) -> bool:
    return bool(ADDRESSED.search(transcript))


def _number(token: str) -> int | None:
    token = token.strip(".,?!").lower()
    if token.isdigit():
        return int(token)
    return NUMBER_WORDS.get(token)


def reply_to(transcript: str) -> str | None:
    """The reply, or None when Aria is not addressed (the cascade then stays silent)."""
    if not is_addressed(transcript):
        return None
    words = re.findall(r"[\w']+", transcript.lower())
    for i, w in enumerate(words[1:-1], 1):
        if w in OPS:
            a, b = _number(words[i - 1]), _number(words[i + 1])
            if a is not None and b is not None:
                return f"That is {OPS[w](a, b)}."
    for country, capital in CAPITALS.items():
        if country in words:
            return f"The capital of {country.title()} is {capital}."
    return "Let me think about that. I am not sure, but I can look it up for you."
