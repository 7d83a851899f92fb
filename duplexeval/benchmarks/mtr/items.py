"""MTR items of a job: one item per (dialogue, scored round), grouped per dialogue for forking.

Where the dialogues come from (`data` block of the benchmark spec, after suite overrides):
- `source: embedded` / `generated`, `path` a script file (kind mtr-dialogues): rendered
  with flite into the cache on first use (`$DUPLEXEVAL_CACHE/mtr/`), reused after;
- any source with `path` a folder of sidecars (`*.json` + stereo WAVs, docs/mtr.md):
  loaded and checked as they are (a user-supplied Candor copy, say);
- `source: public` without a path: the data set's loader (duplexeval.benchmarks.mtr.datasets).

Which rounds are scored: `rounds` caps the round number; a benchmark with `features`
picks rounds by `round_selection`: `feature-dialogues` (the default) scores all rounds of
the dialogues whose features follow the benchmark's list round by round - one feature:
the dialogues made of that feature only (the paper's single-feature columns equal its
S-only ablation, so they come from single-feature dialogues), several: the combination
ablation; safety in interruption contexts selects its dialogues the same way.
`feature-rounds` (dialogue features only, the other reading) scores every round of the
feature in every dialogue, mixed ones too. Turns come from the sidecar, or from turn
segmentation when the benchmark says `turns: segmented` (dialogue quality: every segmented
turn of the clip, no `rounds` cap). Each window follows `segmentation.response_window`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from duplexeval.benchmarks.mtr.context import RoundWindow, round_stimulus
from duplexeval.benchmarks.mtr.format import Dialogue, Round, load_dialogue
from duplexeval.benchmarks.mtr.generate import feature_pattern, render_script_file
from duplexeval.resources import cache_root
from duplexeval.runner.stimulus import Stimulus
from duplexeval.specs import repo_root


@dataclass
class ScoredRound:
    item_id: str
    dialogue: Dialogue
    round: Round               # annotation (or a segmented turn, wrapped as a Round)
    window: RoundWindow
    context: str = ""          # what the user said before (quality judge)


def data_cache_dir() -> Path:
    return cache_root() / "mtr"


def load_dialogues(bench: dict[str, Any], limit: int | None = None) -> list[Dialogue]:
    data = bench["data"]
    rate = int(bench["audio"]["rate"])
    path = data.get("path")
    if path is None:
        from duplexeval.benchmarks.mtr.datasets import dialogues_for

        sidecars = dialogues_for(bench, rate)
    else:
        p = Path(path) if Path(path).is_absolute() else repo_root() / path
        if p.is_dir():
            sidecars = sorted(p.glob("*.json"))
            if not sidecars:
                raise FileNotFoundError(f"benchmark {bench['id']}: no dialogue sidecars (*.json) in {p}")
        elif p.is_file():
            sidecars = render_script_file(p, data_cache_dir() / p.stem / str(rate), rate)
        else:
            raise FileNotFoundError(f"benchmark {bench['id']}: data path {p} does not exist")
    dialogues = [load_dialogue(s) for s in sidecars]
    return dialogues[:limit] if limit else dialogues


ROUND_SELECTIONS = ("feature-dialogues", "feature-rounds")


def round_selection(bench: dict[str, Any]) -> str:
    """The spec's `round_selection` (default feature-dialogues); `feature-rounds` only where
    rounds have feature outcomes (a safety round has no feature rule to pool by)."""
    rule = bench.get("round_selection", ROUND_SELECTIONS[0])
    if rule not in ROUND_SELECTIONS or (rule == "feature-rounds" and bench["dimension"] != "mtr-features"):
        raise ValueError(f"benchmark {bench.get('id')}: round_selection {rule!r} is not one of "
                         f"{ROUND_SELECTIONS if bench['dimension'] == 'mtr-features' else ROUND_SELECTIONS[:1]}")
    return rule


def feature_dialogue(features: list[str], dialogue: Dialogue) -> bool:
    """Whether the dialogue's rounds follow `features` round by round (a feature-less round is smooth)."""
    have = [r.feature or "smooth" for r in dialogue.rounds]
    return have == feature_pattern(features, len(have))


def _selected(bench: dict[str, Any], dialogue: Dialogue) -> list[Round]:
    rounds = [r for r in dialogue.rounds if r.round <= int(bench["rounds"])]
    if "features" not in bench:
        return rounds
    features = list(bench["features"])
    if round_selection(bench) == "feature-dialogues":
        return rounds if feature_dialogue(features, dialogue) else []
    return [r for r in rounds if r.feature in features]


RESPONSE_WINDOWS = ("turn-start-to-next-turn-end",)


def response_window_rule(bench: dict[str, Any]) -> str:
    """segmentation.response_window: a round's window runs from its user turn's start to the
    next user turn's end (the paper; the last round's to the end of the audio)."""
    rule = bench.get("segmentation", {}).get("response_window", RESPONSE_WINDOWS[0])
    if rule not in RESPONSE_WINDOWS:
        raise ValueError(f"benchmark {bench.get('id')}: segmentation.response_window must be one of "
                         f"{RESPONSE_WINDOWS}, got {rule!r}")
    return rule


def scored_rounds(bench: dict[str, Any], dialogues: list[Dialogue], judges: dict[str, Any] | None = None) -> list[ScoredRound]:
    response_window_rule(bench)
    out: list[ScoredRound] = []
    turn_tables: dict[Path, dict[str, list[tuple[float, float]]]] = {}
    for d in dialogues:
        user, _ = d.audio()
        audio_end = len(user) / d.rate
        found = bench.get("turns") in FOUND_TURNS
        if bench.get("turns") == "segmented":
            rounds = segmented_rounds(bench, d, (judges or {}).get("segmentation"))
        elif bench.get("turns") == "published":
            rounds = published_rounds(bench, d, turn_tables)
        else:
            rounds = _selected(bench, d)
        by_no = {r.round: r for r in (rounds if found else d.rounds)}
        for r in rounds:
            nxt = by_no.get(r.round + 1)
            end = nxt.user.end if nxt is not None else audio_end
            gold = r.assistant.text if r.assistant is not None else ""
            context = " / ".join(x.user.text for x in by_no.values() if x.round < r.round)
            out.append(ScoredRound(f"{d.id}.r{r.round:02d}", d, r,
                                   RoundWindow(r.round, r.user.start, r.user.end, min(end, audio_end), gold), context))
    return out


FOUND_TURNS = ("segmented", "published")  # turns found per clip (not a sidecar's annotated rounds)


def segmented_rounds(bench: dict[str, Any], dialogue: Dialogue, judge) -> list[Round]:
    """User turns by segmentation (votes + clustering); texts from the ASR of each channel.

    The ground-truth reply of a turn (what the oracle says) is the assistant's speech
    between the turn's end and the next turn's start.
    """
    from duplexeval.benchmarks.mtr.segmentation import segment_dialogue

    if judge is None:
        raise ValueError(f"benchmark {bench['id']}: turns: segmented needs a segmentation judge")
    user, asst = dialogue.audio()
    seg = segment_dialogue(user, asst, dialogue.rate, bench, judge, {"dialogue": str(dialogue.audio_path)})
    # Every segmented turn of the clip is scored (issue 13, item 12): `rounds` bounds the
    # annotated 10-round dialogues, never a Candor clip's turns.
    return rounds_from_turns(bench, [(t.start, t.end) for t in seg.turns], seg.segments, len(user) / dialogue.rate)


def rounds_from_turns(bench: dict[str, Any], turns: list[tuple[float, float]], segments: list[dict[str, Any]],
                      audio_end: float) -> list[Round]:
    """User turns as rounds, with each channel's segment texts: the user's inside the turn, the
    assistant's (the ground-truth reply) from the turn's end to the next turn's start."""
    from duplexeval.benchmarks.mtr.format import Span

    # A segment whose start lies up to text_slack_s before a turn still gives it its text (ours).
    slack = float(bench.get("segmentation", {}).get("text_slack_s", 0.05))
    rounds = []
    for k, (start, end) in enumerate(turns, 1):
        nxt = turns[k][0] if k < len(turns) else audio_end
        utext = " ".join(s["text"] for s in segments if s["speaker"] == "user" and start - slack <= s["start"] < end)
        atext = " ".join(s["text"] for s in segments if s["speaker"] == "assistant" and end - slack <= s["start"] < nxt)
        rounds.append(Round(k, Span(start, end, utext), Span(end, nxt, atext)))
    return rounds


def published_rounds(bench: dict[str, Any], dialogue: Dialogue,
                     tables: dict[Path, dict[str, list[tuple[float, float]]]] | None = None) -> list[Round]:
    """The clip's user turns from the authors' published turn file (`turns: published`,
    duplexeval.benchmarks.mtr.published_turns); texts from each channel's VAD + ASR segments."""
    from duplexeval.benchmarks.mtr.published_turns import clip_turns, read_turn_file, turn_file
    from duplexeval.benchmarks.mtr.segmentation import dialogue_segments

    source = turn_file(bench)
    tables = {} if tables is None else tables
    if source not in tables:
        tables[source] = read_turn_file(source)
    turns = clip_turns(tables[source], dialogue.id, dialogue.audio_path, source)
    user, asst = dialogue.audio()
    segments = dialogue_segments(user, asst, dialogue.rate, bench["vad"], bench.get("asr"))
    return rounds_from_turns(bench, turns, segments, len(user) / dialogue.rate)


def item_factories(bench: dict[str, Any], rounds: list[ScoredRound], teacher_forcing: bool) -> list[tuple[str, list[tuple[str, Callable[[], Stimulus]]]]]:
    """Items grouped per dialogue (in branch order), each with a lazy stimulus factory."""
    groups: dict[str, list[tuple[str, Callable[[], Stimulus]]]] = {}

    def factory(sr: ScoredRound) -> Callable[[], Stimulus]:
        def make() -> Stimulus:
            user, asst = sr.dialogue.audio()
            return round_stimulus(user, asst, sr.dialogue.rate, sr.window, teacher_forcing=teacher_forcing, item_id=sr.item_id)
        return make

    for sr in sorted(rounds, key=lambda s: (s.dialogue.id, s.window.start_s)):
        groups.setdefault(sr.dialogue.id, []).append((sr.item_id, factory(sr)))
    return list(groups.items())


HISTORY_AS_HEARD = ("one-pass", "per-round")


def history_as_heard(bench: dict[str, Any]) -> str:
    """context.history_as_heard (default one-pass): how a history-as-heard job plays its rounds.

    `one-pass`: one session per dialogue, to the last scored round's window end, each round
    cut from it at its own window end (runner/one_pass.py: linear in rounds); `per-round`:
    a fresh session per round (quadratic). Nothing is forced and the stimulus depends on the
    round only through where it ends, so a causal, deterministic model records the same
    bytes either way; a sampling one draws one trajectory per dialogue instead of one per round.
    """
    rule = bench.get("context", {}).get("history_as_heard", HISTORY_AS_HEARD[0])
    if rule not in HISTORY_AS_HEARD:
        raise ValueError(f"benchmark {bench.get('id')}: context.history_as_heard must be one of {HISTORY_AS_HEARD}, "
                         f"got {rule!r}")
    return rule


def plays_dialogue_once(bench: dict[str, Any], mode: str) -> bool:
    """Whether a dialogue's audio is played once (fork; history-as-heard one-pass) rather than
    round k replaying rounds 1..k (replay; history-as-heard per-round): the cost's shape."""
    return mode == "fork" or (mode == "history-as-heard" and history_as_heard(bench) == "one-pass")


def context_mode(bench: dict[str, Any], capabilities: list[str], clock: str) -> str:
    """fork | replay | history-as-heard | skip: how round k's history reaches this model."""
    wants_tf = bool(bench["context"]["teacher_forcing"])
    if wants_tf and "teacher_forcing" in capabilities:
        return "fork" if "fork" in capabilities and clock == "lockstep" else "replay"
    if wants_tf:
        return bench["context"].get("without_capability", "history-as-heard")
    return "history-as-heard"
