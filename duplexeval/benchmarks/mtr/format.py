"""The MTR dual-channel dialogue format: a stereo WAV plus a JSON sidecar (docs/mtr.md).

One convention everywhere (the anchor repo contradicts itself): channel 0 is the user,
channel 1 the assistant, exactly as in every `recording.wav` (duplexeval.audio). The
sidecar declares the channels and the loader checks the declaration, the WAV's shape and
rate, its sha256 when given, and that the user channel really carries the user turns
(energy check): a mismatch is an error naming the file, never a silent swap. Input files
are only ever read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from duplexeval.audio import INPUT_CHANNEL, MODEL_CHANNEL, read_wav, write_wav
from duplexeval.io import atomic_write_json, sha256_file

SCHEMA_ID = "duplexeval.mtr-dialogue/1"
CHANNELS = {"0": "user", "1": "assistant"}
assert INPUT_CHANNEL == 0 and MODEL_CHANNEL == 1  # the user is what the model hears


class DialogueFormatError(ValueError):
    """A dialogue file that breaks the format; the message names the file."""


@dataclass(frozen=True)
class Span:
    start: float
    end: float
    text: str = ""

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class Event:
    type: str  # interruption | pause | background | backchannel
    start: float
    end: float
    text: str = ""


@dataclass(frozen=True)
class Round:
    round: int
    user: Span
    assistant: Span | None = None
    feature: str | None = None
    events: tuple[Event, ...] = ()
    question: str | None = None
    gold_answer: str | None = None
    request: str | None = None

    def event(self, type_: str) -> Event | None:
        return next((e for e in self.events if e.type == type_), None)


@dataclass
class Dialogue:
    id: str
    path: Path              # the sidecar
    audio_path: Path
    rate: int
    rounds: list[Round]
    source: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    # Context before round 1, never scored (its user turn and ground-truth reply): what a
    # round-1 interruption cuts. Round number 0, feature smooth.
    opening: Round | None = None

    def audio(self) -> tuple[np.ndarray, np.ndarray]:
        """(user, assistant) float32 channels at `self.rate`."""
        st = self.audio_path.stat()
        return _read_channels(str(self.audio_path), self.rate, st.st_mtime_ns, st.st_size)

    @property
    def duration_s(self) -> float:
        user, _ = self.audio()
        return len(user) / self.rate

    @property
    def features(self) -> tuple[str, ...]:
        return tuple(r.feature for r in self.rounds if r.feature)


@lru_cache(maxsize=8)
def _read_channels(path: str, rate: int, mtime_ns: int = 0, size: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Cached per file version (mtime and size are part of the key)."""
    data, file_rate = read_wav(path)
    if file_rate != rate:
        raise DialogueFormatError(f"{path}: WAV rate {file_rate} Hz, the sidecar says {rate} Hz")
    if data.ndim != 2 or data.shape[1] != 2:
        shape = "mono" if data.ndim == 1 else f"{data.shape[1]} channels"
        raise DialogueFormatError(f"{path}: an MTR dialogue must be stereo (ch0 user, ch1 assistant), got {shape}")
    user, assistant = data[:, 0].copy(), data[:, 1].copy()
    user.setflags(write=False)
    assistant.setflags(write=False)
    return user, assistant


def _validator():
    import jsonschema

    from duplexeval.specs.loader import schema_for

    return jsonschema.Draft202012Validator(schema_for("mtr-dialogue"))


def _span(d: dict[str, Any] | None) -> Span | None:
    return None if d is None else Span(float(d["start"]), float(d["end"]), d.get("text", ""))


def parse_dialogue(data: dict[str, Any], path: Path) -> Dialogue:
    errors = sorted(_validator().iter_errors(data), key=lambda e: list(e.path))
    if errors:
        e = errors[0]
        where = ".".join(str(p) for p in e.path) or "(top)"
        raise DialogueFormatError(f"{path}: {where}: {e.message}")
    if data["channels"] != CHANNELS:
        raise DialogueFormatError(
            f"{path}: channels declared {data['channels']}, the harness convention is {CHANNELS} "
            "(ch0 user, ch1 assistant); convert the file, it is never swapped silently")
    rounds = []
    for n, r in enumerate(data["rounds"], 1):
        if r["round"] != n:
            raise DialogueFormatError(f"{path}: rounds[{n - 1}].round is {r['round']}, expected {n}")
        user = _span(r["user"])
        if user.end <= user.start:
            raise DialogueFormatError(f"{path}: rounds[{n - 1}].user ends before it starts")
        if rounds and user.start < rounds[-1].user.start:
            raise DialogueFormatError(f"{path}: rounds[{n - 1}] starts before round {n - 1}")
        events = tuple(Event(e["type"], float(e["start"]), float(e["end"]), e.get("text", "")) for e in r.get("events", []))
        rounds.append(Round(n, user, _span(r.get("assistant")), r.get("feature"), events,
                            r.get("question"), r.get("gold_answer"), r.get("request")))
    opening = None
    if "opening" in data:
        opening = Round(0, _span(data["opening"]["user"]), _span(data["opening"]["assistant"]), "smooth")
        if rounds and opening.user.end > rounds[0].user.start:
            raise DialogueFormatError(f"{path}: opening.user ends after round 1 starts (the opening comes before round 1)")
    if rounds and rounds[0].feature == "interruption" and opening is None:
        raise DialogueFormatError(
            f"{path}: rounds[0] is an interruption but the dialogue has no `opening`: a round-1 interruption "
            "cuts the opening exchange's reply (docs/mtr.md)")
    return Dialogue(data["id"], path, (path.parent / data["audio"]).resolve(), int(data["rate"]), rounds,
                    data.get("source", ""), data, opening)


def load_dialogue(path: str | Path, *, check_energy: bool = True) -> Dialogue:
    """Reads and checks a sidecar and its WAV (never writes either)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DialogueFormatError(f"{path}: cannot read the dialogue sidecar: {exc}") from None
    dialogue = parse_dialogue(data, path)
    if not dialogue.audio_path.is_file():
        raise DialogueFormatError(f"{path}: audio {data['audio']} not found ({dialogue.audio_path})")
    if "audio_sha256" in data and sha256_file(dialogue.audio_path) != data["audio_sha256"]:
        raise DialogueFormatError(f"{path}: {dialogue.audio_path.name} does not match audio_sha256 (changed or wrong file)")
    user, assistant = dialogue.audio()
    if check_energy:
        check_channel_roles(dialogue, user, assistant)
    return dialogue


def check_channel_roles(dialogue: Dialogue, user: np.ndarray, assistant: np.ndarray) -> None:
    """The declared user channel must carry more energy than the other inside the user turns.

    Catches a file whose channels were swapped without its sidecar saying so.
    """
    rate = dialogue.rate
    e_user = e_asst = 0.0
    for r in dialogue.rounds:
        a, b = int(r.user.start * rate), int(r.user.end * rate)
        e_user += float(np.sum(user[a:b].astype(np.float64) ** 2))
        e_asst += float(np.sum(assistant[a:b].astype(np.float64) ** 2))
    if dialogue.rounds and e_asst > e_user:
        raise DialogueFormatError(
            f"{dialogue.path}: channel 1 (assistant) is louder than channel 0 (user) during the annotated user turns; "
            "the channels look swapped (the convention is ch0 user, ch1 assistant)")


def write_dialogue(sidecar: str | Path, dialogue_id: str, user: np.ndarray, assistant: np.ndarray, rate: int,
                   rounds: list[dict[str, Any]], **extra: Any) -> Path:
    """Writes `<id>.wav` (stereo, ch0 user) next to the sidecar, then the sidecar (with the WAV's sha256)."""
    sidecar = Path(sidecar)
    n = max(len(user), len(assistant))
    stereo = np.zeros((n, 2), dtype=np.float32)
    stereo[: len(user), 0] = user
    stereo[: len(assistant), 1] = assistant
    wav = sidecar.with_suffix(".wav")
    write_wav(wav, stereo, rate)
    data = {"schema": SCHEMA_ID, "id": dialogue_id, "audio": wav.name, "audio_sha256": sha256_file(wav), "rate": rate,
            "channels": dict(CHANNELS), **extra, "rounds": rounds}
    parse_dialogue(data, sidecar)  # never write a file the loader would refuse
    atomic_write_json(sidecar, data)
    return sidecar
