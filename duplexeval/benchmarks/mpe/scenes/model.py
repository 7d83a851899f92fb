"""Duplex-MPE scenes as plain data, and the two conversations each scene yields.

A scene is written once; the explicit and the implicit conversation are derived from it
(§3.3, App. A2.4), so a pair can only differ where the scene says so: the T turn, and the
turn just before T when the scene overrides it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CONDITIONS = ("explicit", "implicit")
LABELS = ("T", "N1", "N2", "N3", "N4Q", "N4R")
# Labels whose windows Shush scores by default (Table 2); the spec decides which are used.
SILENCE_LABELS = ("N1", "N2", "N3")


@dataclass(frozen=True)
class SceneTurn:
    """One scripted turn as written: T carries variants and a gold answer, others a text."""

    index: int
    speaker: str
    label: str
    text: str | None = None
    variants: dict[str, str] | None = None
    gold_answer: str | None = None
    previous_text: dict[str, str] | None = None
    condition_text: dict[str, str] | None = None   # a published pair that differs outside T: each wording

    def text_in(self, condition: str) -> str:
        """This (non-T) turn's text as played in `condition`."""
        if self.condition_text and condition in self.condition_text:
            return self.condition_text[condition]
        return self.text or ""


@dataclass(frozen=True)
class Scene:
    id: str
    attributes: dict[str, str]
    speakers: dict[str, str]
    preamble_text: str
    preamble_voice: str
    turns: tuple[SceneTurn, ...]
    path: Path | None = None
    data: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def t_index(self) -> int:
        return next(t.index for t in self.turns if t.label == "T")

    @property
    def gold_answer(self) -> str:
        return self.turns[self.t_index].gold_answer or ""


@dataclass(frozen=True)
class ConversationTurn:
    """A turn as played in one condition: the text and voice the TTS gets."""

    index: int
    turn_id: str
    speaker: str
    voice: str
    label: str
    text: str
    gold_answer: str | None = None


def scene_from_dict(data: dict[str, Any], path: Path | None = None) -> Scene:
    """Builds a Scene from schema-valid data (validation lives in the loader)."""
    turns = tuple(
        SceneTurn(
            index=i,
            speaker=t["speaker"],
            label=t["label"],
            text=t.get("text"),
            variants=dict(t["variants"]) if "variants" in t else None,
            gold_answer=t.get("gold_answer"),
            previous_text=dict(t["previous_text"]) if "previous_text" in t else None,
            condition_text=dict(t["condition_text"]) if "condition_text" in t else None,
        )
        for i, t in enumerate(data["turns"])
    )
    return Scene(
        id=data["id"],
        attributes=dict(data["attributes"]),
        speakers=dict(data["speakers"]),
        preamble_text=data["preamble"]["text"],
        preamble_voice=data["preamble"]["voice"],
        turns=turns,
        path=path,
        data=data,
    )


def conversation(scene: Scene, condition: str) -> list[ConversationTurn]:
    """The ordered turns of `scene` as played in `condition` ('explicit' or 'implicit')."""
    if condition not in CONDITIONS:
        raise ValueError(f"unknown condition {condition!r}; choose one of {', '.join(CONDITIONS)}")
    t_turn = scene.turns[scene.t_index]
    out = []
    for turn in scene.turns:
        if turn.label == "T":
            text = (turn.variants or {})[condition]
        elif turn.index == t_turn.index - 1 and t_turn.previous_text and condition in t_turn.previous_text:
            text = t_turn.previous_text[condition]
        else:
            text = turn.text_in(condition)
        out.append(ConversationTurn(
            index=turn.index,
            turn_id=f"{scene.id}:{turn.index}",
            speaker=turn.speaker,
            voice=scene.speakers[turn.speaker],
            label=turn.label,
            text=text,
            gold_answer=turn.gold_answer if turn.label == "T" else None,
        ))
    return out
