"""Scene rules a JSON Schema cannot express (paper 004, §3.1-§3.2, App. A2).

- exactly one T, never the first or the last turn (§3.2);
- the gold answer is stated earlier in the scene (Table 11: in all 100 checked scenes the
  answer had been said aloud), checked by matching normalised key terms;
- N4R directly follows N4Q, and every N4Q is resolved by an N4R (§3.1); so a pair lies
  wholly before or wholly after T, never around it. Either side is allowed: 968 scenarios
  have an N4 event after T (App. A2.2) but each condition has 1,911 N4 events (Table 7);
- every speaker used has a voice.

`plan_problems` adds the generator's own checks (turn count, N4 pair count and side, from
the judge spec's `scene_plan`); hand-written scenes are not held to a plan.

Each problem is returned as (turn index or None, message) so the loader can name the
file, line and turn.
"""

from __future__ import annotations

from duplexeval.benchmarks.mpe.scenes.model import CONDITIONS, Scene
from duplexeval.judges.textnorm import content_words, numbers, tokens


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
    problems: list[tuple[int | None, str]] = []
    for condition in CONDITIONS:
        earlier: set[str] = set()
        for turn in scene.turns[: t.index]:
            text = turn.text_in(condition)
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
    around_t = " (T comes between: a pair lies wholly before or wholly after T)"
    for turn in turns:
        if turn.label == "N4Q" and (turn.index + 1 >= len(turns) or turns[turn.index + 1].label != "N4R"):
            split = turn.index + 1 < len(turns) and turns[turn.index + 1].label == "T"
            problems.append((turn.index, "N4Q must be directly followed by its N4R" + (around_t if split else "")))
        if turn.label == "N4R" and (turn.index == 0 or turns[turn.index - 1].label != "N4Q"):
            split = turn.index > 0 and turns[turn.index - 1].label == "T"
            problems.append((turn.index, "N4R must directly follow an N4Q" + (around_t if split else "")))
    # Our generation rule, not the paper's: the published set is read as published.
    if len(t_indices) == 1 and 0 < t_indices[0] and not str(scene.data.get("source", "")).startswith("published:"):
        problems.extend(gold_answer_problems(scene))
    return problems


PLACEMENTS = ("either", "before-t", "after-t", "both")


def n4_sides(scene: Scene) -> tuple[int, int]:
    """(pairs before T, pairs after T) of a rule-valid scene, counted by their N4Q."""
    t = scene.t_index
    n4q = [turn.index for turn in scene.turns if turn.label == "N4Q"]
    return sum(i < t for i in n4q), sum(i > t for i in n4q)


def n4_placement_counts(scenes: list[Scene]) -> dict[str, int]:
    """App. A2.2 / Table 7 style counts of a scene set: scenes with an N4 after T (the
    paper's 968), scenes with one before T, and N4 events on each side (the paper's 1,911
    is their sum)."""
    sides = [n4_sides(scene) for scene in scenes]
    return {"scenes_with_n4_after_t": sum(a > 0 for _, a in sides),
            "scenes_with_n4_before_t": sum(b > 0 for b, _ in sides),
            "n4_events_after_t": sum(a for _, a in sides), "n4_events_before_t": sum(b for b, _ in sides),
            "n4_events": sum(a + b for b, a in sides)}


def plan_problems(scene: Scene, *, turns: tuple[int, int], n4_pairs: tuple[int, int],
                  placement: str) -> list[tuple[int | None, str]]:
    """What a rule-valid generated scene breaks of its plan (counts inclusive at both ends).

    `placement` is the scene's own side ("either", "before-t", "after-t", "both": at least
    one pair on each side); the generator resolves the spec's "alternate" and "totals" per
    scene before calling this.
    """
    if placement not in PLACEMENTS:
        raise ValueError(f"unknown N4 placement {placement!r}; use one of {', '.join(PLACEMENTS)}")
    problems: list[tuple[int | None, str]] = []
    n = len(scene.turns)
    if not turns[0] <= n <= turns[1]:
        problems.append((None, f"{n} turns; the plan asks for {turns[0]} to {turns[1]}"))
    before, after = n4_sides(scene)
    if not n4_pairs[0] <= before + after <= n4_pairs[1]:
        problems.append((None, f"{before + after} N4Q/N4R pairs; the plan asks for {n4_pairs[0]} to {n4_pairs[1]}"))
    if placement == "both" and not (before and after):
        problems.append((None, f"N4 pairs {before} before and {after} after T; the plan puts one on each side"))
    wrong_side = {"before-t": "after", "after-t": "before"}.get(placement)
    for turn in scene.turns:
        if turn.label == "N4Q" and wrong_side and (turn.index > scene.t_index) == (wrong_side == "after"):
            problems.append((turn.index, f"N4 pair {wrong_side} T; the plan puts every pair {placement[:-2]} T"))
    return problems
