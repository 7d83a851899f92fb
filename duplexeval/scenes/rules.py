"""Scene rules a JSON Schema cannot express (paper 004, §3.1-§3.2, App. A2).

- exactly one T, never the first or the last turn (§3.2);
- the gold answer is stated earlier in the scene (Table 11: in all 100 checked scenes the
  answer had been said aloud), checked by matching normalised key terms;
- N4R directly follows N4Q, and every N4Q is resolved by an N4R (§3.1);
- every speaker used has a voice.

Each problem is returned as (turn index or None, message) so the loader can name the
file, line and turn.
"""

from __future__ import annotations

from duplexeval.judges.textnorm import content_words, numbers, tokens
from duplexeval.scenes.model import CONDITIONS, Scene


def key_terms(text: str) -> set[str]:
    """Numbers and content words of `text`, in the offline judge's normal form.

    The same normaliser (duplexeval.judges.textnorm) reads ASR output, so "nine dollars"
    in a script and "$9" in a transcript both become {"9", "dollar"}: a gold answer that
    passes this rule can also be matched by the offline answer judge.
    """
    toks = tokens(text)
    return numbers(toks) | content_words(toks)


def gold_answer_problems(scene: Scene) -> list[tuple[int | None, str]]:
    """Key terms of the gold answer missing from what was said before T (either condition)."""
    t = scene.turns[scene.t_index]
    gold_terms = key_terms(t.gold_answer or "")
    if not gold_terms:
        return [(t.index, "gold_answer has no key terms (only stop words)")]
    problems = []
    for condition in CONDITIONS:
        earlier: set[str] = set()
        for turn in scene.turns[: t.index]:
            text = turn.text or ""
            if turn.index == t.index - 1 and t.previous_text and condition in t.previous_text:
                text = t.previous_text[condition]
            earlier |= key_terms(text)
        missing = sorted(gold_terms - earlier)
        if missing:
            problems.append((t.index, f"gold answer {t.gold_answer!r} is not stated before T in the "
                                      f"{condition} conversation: missing key terms {missing}"))
    return problems


def rule_problems(scene: Scene) -> list[tuple[int | None, str]]:
    """Every rule violation of a schema-valid scene; empty when the scene is usable."""
    problems: list[tuple[int | None, str]] = []
    turns = scene.turns
    for turn in turns:
        if turn.speaker not in scene.speakers:
            problems.append((turn.index, f"speaker {turn.speaker!r} has no voice in `speakers`"))
    t_indices = [t.index for t in turns if t.label == "T"]
    if len(t_indices) != 1:
        where = t_indices[1] if len(t_indices) > 1 else None
        problems.append((where, f"a scene needs exactly one T turn, found {len(t_indices)}"
                                + (f" (turns {t_indices})" if t_indices else "")))
    for i in t_indices:
        if i == 0:
            problems.append((i, "T is the first turn; T is never first (§3.2)"))
        if i == len(turns) - 1:
            problems.append((i, "T is the last turn; T is never last (§3.2)"))
    for turn in turns:
        if turn.label == "N4Q" and (turn.index + 1 >= len(turns) or turns[turn.index + 1].label != "N4R"):
            problems.append((turn.index, "N4Q must be directly followed by its N4R"))
        if turn.label == "N4R" and (turn.index == 0 or turns[turn.index - 1].label != "N4Q"):
            problems.append((turn.index, "N4R must directly follow an N4Q"))
    if len(t_indices) == 1 and 0 < t_indices[0]:
        problems.extend(gold_answer_problems(scene))
    return problems
