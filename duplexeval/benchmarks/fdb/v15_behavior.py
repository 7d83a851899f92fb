"""Full-Duplex-Bench v1.5 behaviour categories: what the model does with the overlap, as a judge labels it.

v1.5 (arXiv 2507.23159) labels each sample's first new stretch of model speech after the
overlap starts with one content tag (C_RESPOND: it takes up what the overlap said;
C_RESUME: it carries on with what it was saying; C_UNCERTAIN_HANDLING: it says it did
not catch something; C_UNKNOWN: none of these, or no speech after the overlap). A text
LLM (gpt-4o-2024-08-06 in the public code, evaluation/eval_behavior.py) reads four
word-timed transcripts and returns the tag. The instruction it reads is the authors'
file (evaluation/instruction/behavior.txt); it is not copied into this project: a judge
spec that reproduces their numbers must load it from a copy of their code.

The parts that need no LLM are here, as pure functions:

- what the judge is shown: the four word lists (clean input, input with the overlap,
  the model's reply to each) as compact JSON under four fixed keys;
- reading its verdict: the first JSON object in the reply that has a "behaviour" key,
  holding exactly one known tag (their code accepts any list; a reply outside the four
  tags is an `error` record here, never counted as a category);
- whether user and model words overlap at all (their code computes it and passes it on
  unused: recorded, never scored);
- the ratios: each tag's count over the samples that got a verdict, with numerator and
  denominator. Their code skips a sample missing any of the four transcripts; so does
  `ratios` (the caller counts those as not judged, with the reason).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence

from duplexeval.benchmarks.fdb.layout import Word

TAGS = ("C_RESPOND", "C_RESUME", "C_UNCERTAIN_HANDLING", "C_UNKNOWN")
VERDICT_KEY = "behaviour"
INPUT_KEYS = ("input_clean", "input_noisy", "output_clean", "output_noisy")


class VerdictError(ValueError):
    """A judge reply that holds no single known tag: an error record with this reason, never a category."""


def _chunks(words: Sequence[Word]) -> list[dict[str, Any]]:
    return [{"text": w.text, "timestamp": [w.start, w.end]} for w in words]


def judge_payload(input_clean: Sequence[Word], input_noisy: Sequence[Word], output_clean: Sequence[Word],
                  output_noisy: Sequence[Word]) -> dict[str, list[dict[str, Any]]]:
    """The four transcripts the judge reads, each a list of {text, timestamp: [start, end]}."""
    return dict(zip(INPUT_KEYS, (_chunks(input_clean), _chunks(input_noisy), _chunks(output_clean),
                                 _chunks(output_noisy))))


def compact(value: Any) -> str:
    """JSON without spaces after separators, non-ASCII kept: how each transcript is written into the message."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def parse_verdict(reply: str) -> str:
    """The one tag of a judge reply; VerdictError naming what was found otherwise."""
    decoder = json.JSONDecoder()
    pos = reply.find("{")
    while pos != -1:
        try:
            obj, end = decoder.raw_decode(reply, pos)
        except json.JSONDecodeError:
            pos = reply.find("{", pos + 1)
            continue
        if isinstance(obj, dict) and VERDICT_KEY in obj:
            tags = obj[VERDICT_KEY]
            tags = [tags] if isinstance(tags, str) else tags
            if not isinstance(tags, list) or len(tags) != 1 or tags[0] not in TAGS:
                raise VerdictError(f"judge verdict {VERDICT_KEY}={obj[VERDICT_KEY]!r}: expected exactly one of "
                                   f"{', '.join(TAGS)}")
            return str(tags[0])
        pos = reply.find("{", end)
    raise VerdictError(f"no JSON object with key {VERDICT_KEY!r} in the judge reply ({reply[:80]!r})")


def words_overlap(a: Sequence[Word], b: Sequence[Word]) -> bool:
    """Whether any word of `a` and any word of `b` share a positive stretch of time."""
    return any(max(x.start, y.start) < min(x.end if x.end is not None else x.start,
                                           y.end if y.end is not None else y.start) for x in a for y in b)


@dataclass(frozen=True)
class Ratio:
    tag: str
    numerator: int
    denominator: int

    @property
    def value(self) -> float | None:
        return self.numerator / self.denominator if self.denominator else None


def ratios(verdicts: Sequence[str | None]) -> list[Ratio]:
    """Each tag's share of the judged samples (None: not judged or an error; left out of the denominator)."""
    judged = [v for v in verdicts if v is not None]
    unknown = sorted({v for v in judged if v not in TAGS})
    if unknown:
        raise VerdictError(f"not behaviour tags: {', '.join(unknown)} (known: {', '.join(TAGS)})")
    return [Ratio(tag, sum(1 for v in judged if v == tag), len(judged)) for tag in TAGS]
