"""Synthetic MTR dialogues: scripts (LLM-written or hand-written) -> flite TTS -> stereo WAV + sidecar.

A script is a list of rounds (user text, ground-truth assistant text, feature). The
renderer places every utterance itself, so the turn boundaries and feature events in the
sidecar are exact (no segmentation needed for these sets):

- smooth        user turn, `response_gap_s`, assistant reply
- interruption  the user starts `interrupt_after_s` into the previous assistant reply,
                which stops `assistant_overlap_s` later; event = the interrupting turn.
                In round 1 the interrupted reply is the script's `opening` exchange (a
                user turn and its ground-truth reply before round 1, never scored,
                forced on the model's channel like any history: docs/mtr.md)
- pause         the user turn is two parts with `pause_s` of silence between; event = the pause
- background    another voice (channel 0, voice `background`) starts `background_after_s`
                into the assistant reply; event = that speech
- backchannel   the user says a short backchannel `backchannel_after_s` into the reply
Timing lives in the script file's `timing` block (data, not code).

`write_script` asks a writer (a judge spec with task mtr-dialogue-generation, cached like
every verdict, or any callable for tests) for the texts of a 10-round dialogue.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, NamedTuple

import numpy as np
import yaml

from duplexeval.audio import trim_silence
from duplexeval.benchmarks.mtr.format import write_dialogue
from duplexeval.tts import synthesize

FEATURES = ("smooth", "interruption", "pause", "background", "backchannel")
DEFAULT_TIMING = {"lead_in_s": 0.5, "response_gap_s": 0.5, "next_turn_gap_s": 0.8, "pause_s": 2.0,
                  "interrupt_after_s": 1.5, "assistant_overlap_s": 0.3, "background_after_s": 0.8,
                  "backchannel_after_s": 1.0, "tail_s": 2.5}
DEFAULT_VOICES = {"user": "awb", "assistant": "slt", "background": "kal16"}


class ScriptError(ValueError):
    pass


def _speech(text: str, voice: str, rate: int) -> np.ndarray:
    return trim_silence(synthesize(text, voice, rate), rate)


class _Track:
    def __init__(self) -> None:
        self.audio = np.zeros(0, dtype=np.float32)

    def put(self, audio: np.ndarray, start_s: float, rate: int, *, cut_at_s: float | None = None) -> float:
        a = int(round(start_s * rate))
        if cut_at_s is not None:
            audio = audio[: max(0, int(round(cut_at_s * rate)) - a)]
        if len(self.audio) < a + len(audio):
            self.audio = np.concatenate([self.audio, np.zeros(a + len(audio) - len(self.audio), dtype=np.float32)])
        self.audio[a: a + len(audio)] += audio
        return (a + len(audio)) / rate

    def cut(self, at_s: float, rate: int) -> None:
        self.audio[int(round(at_s * rate)):] = 0.0


class Rendered(NamedTuple):
    """One rendered dialogue: both channels and the sidecar's `rounds` (and `opening`, or None)."""

    user: np.ndarray
    assistant: np.ndarray
    rounds: list[dict[str, Any]]
    opening: dict[str, Any] | None


def render_script(script: dict[str, Any], rate: int, *, timing: dict[str, float] | None = None,
                  voices: dict[str, str] | None = None) -> Rendered:
    """Both channels and the sidecar annotations of one scripted dialogue.

    A script may start with an `opening` ({user, assistant}): an exchange before round 1
    that is context only (never a round). It exists so that round 1 can be an
    interruption: the paper's tables have a round-1 interruption column, and an
    interruption needs a reply to cut.
    """
    tm = {**DEFAULT_TIMING, **(timing or {})}
    vc = {**DEFAULT_VOICES, **(voices or {})}
    user, asst = _Track(), _Track()
    rounds: list[dict[str, Any]] = []
    t = tm["lead_in_s"]
    prev_asst: dict[str, float] | None = None
    opening: dict[str, Any] | None = None
    if script.get("opening") is not None:
        op = script["opening"]
        if not isinstance(op, dict) or not isinstance(op.get("user"), str) or not isinstance(op.get("assistant"), str):
            raise ScriptError(f"{script.get('id')}: opening: expected {{user: text, assistant: text}}")
        ue = user.put(_speech(op["user"], vc["user"], rate), t, rate)
        a_start = ue + tm["response_gap_s"]
        a_end = asst.put(_speech(op["assistant"], vc["assistant"], rate), a_start, rate)
        opening = {"user": {"start": round(t, 3), "end": round(ue, 3), "text": op["user"]},
                   "assistant": {"start": round(a_start, 3), "end": round(a_end, 3), "text": op["assistant"]}}
        prev_asst = {"start": a_start, "end": a_end}
        t = a_end + tm["next_turn_gap_s"]
    for n, r in enumerate(script["rounds"], 1):
        feature = r.get("feature", "smooth")
        if feature not in FEATURES:
            raise ScriptError(f"{script.get('id')}: round {n}: unknown feature {feature!r}")
        events: list[dict[str, Any]] = []
        if feature == "interruption":
            if prev_asst is None:
                raise ScriptError(f"{script.get('id')}: round {n}: an interruption needs an assistant reply before it "
                                  "(round 1: give the script an `opening` exchange)")
            t = prev_asst["start"] + tm["interrupt_after_s"]
            whose = f"round {n - 1}" if rounds else "the opening"
            if t >= prev_asst["end"]:
                raise ScriptError(f"{script.get('id')}: round {n}: the reply of {whose} is too short to interrupt")
            stop = t + tm["assistant_overlap_s"]
            asst.cut(stop, rate)
            cut = (rounds[-1] if rounds else opening)["assistant"]  # type: ignore[index]
            cut["end"] = round(min(stop, prev_asst["end"]), 3)
        parts = r["user"] if isinstance(r["user"], list) else [r["user"]]
        if (feature == "pause") != (len(parts) == 2):
            raise ScriptError(f"{script.get('id')}: round {n}: a pause round has exactly two user parts, others one")
        us = t
        for i, part in enumerate(parts):
            if i:
                events.append({"type": "pause", "start": round(t, 3), "end": round(t + tm["pause_s"], 3)})
                t += tm["pause_s"]
            t = user.put(_speech(part, vc["user"], rate), t, rate)
        ue = t
        if feature == "interruption":
            events.append({"type": "interruption", "start": round(us, 3), "end": round(ue, 3)})
        a_start = ue + tm["response_gap_s"]
        a_end = asst.put(_speech(r["assistant"], vc["assistant"], rate), a_start, rate)
        for kind, key, voice in (("background", "background_after_s", "background"), ("backchannel", "backchannel_after_s", "user")):
            if feature == kind:
                bs = a_start + tm[key]
                be = user.put(_speech(r[kind], vc[voice], rate), bs, rate)
                if be >= a_end:
                    raise ScriptError(f"{script.get('id')}: round {n}: the {kind} outlasts the assistant reply")
                events.append({"type": kind, "start": round(bs, 3), "end": round(be, 3), "text": r[kind]})
        rd: dict[str, Any] = {"round": n, "feature": feature,
                              "user": {"start": round(us, 3), "end": round(ue, 3), "text": " ".join(parts)},
                              "assistant": {"start": round(a_start, 3), "end": round(a_end, 3), "text": r["assistant"]}}
        if events:
            rd["events"] = events
        for key in ("question", "gold_answer", "request"):
            if key in r:
                rd[key] = r[key]
        if "gold_answer" in r and "question" not in r:
            rd["question"] = " ".join(parts)
        rounds.append(rd)
        prev_asst = {"start": a_start, "end": a_end}
        t = a_end + tm["next_turn_gap_s"]
    end = int(round((t - tm["next_turn_gap_s"] + tm["tail_s"]) * rate))
    u = np.zeros(end, dtype=np.float32)
    a = np.zeros(end, dtype=np.float32)
    u[: min(end, len(user.audio))] = user.audio[:end]
    a[: min(end, len(asst.audio))] = asst.audio[:end]
    return Rendered(np.clip(u, -1, 1), np.clip(a, -1, 1), rounds, opening)


def load_script_file(path: str | Path) -> dict[str, Any]:
    data = yaml.safe_load(Path(path).read_text("utf-8"))
    if not isinstance(data, dict) or data.get("kind") != "mtr-dialogues" or not isinstance(data.get("dialogues"), list):
        raise ScriptError(f"{path}: expected kind: mtr-dialogues with a list of dialogues")
    return data


def render_script_file(path: str | Path, out_dir: str | Path, rate: int) -> list[Path]:
    """Renders every dialogue of a script file into out_dir (<id>.wav + <id>.json); skips ones up to date."""
    import json

    from duplexeval.io import sha256_json

    data = load_script_file(path)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for script in data["dialogues"]:
        key = sha256_json({"v": 1, "script": script, "timing": data.get("timing"), "voices": data.get("voices"), "rate": rate})
        sidecar = out / f"{script['id']}.json"
        if sidecar.exists() and (out / f"{script['id']}.wav").exists():
            try:
                if json.loads(sidecar.read_text("utf-8")).get("script_sha256") == key:
                    paths.append(sidecar)
                    continue
            except ValueError:
                pass
        r = render_script(script, rate, timing=data.get("timing"), voices=data.get("voices"))
        extra = {"opening": r.opening} if r.opening is not None else {}
        write_dialogue(sidecar, script["id"], r.user, r.assistant, rate, r.rounds, source=f"script {Path(path).name}",
                       voices={**DEFAULT_VOICES, **(data.get("voices") or {})}, script_sha256=key, **extra)
        paths.append(sidecar)
    return paths


# ---- LLM-written scripts ---------------------------------------------------------------

def feature_pattern(features: list[str], rounds: int) -> list[str]:
    """Features alternate round by round (the paper's combination ablation); one feature:
    every round has it. Round 1 keeps its feature, an interruption too (the paper reports a
    round-1 interruption column): such a dialogue gets an `opening` for it to interrupt."""
    return [features[i % len(features)] for i in range(rounds)]


Writer = Callable[[dict[str, Any]], dict[str, Any]]


def judge_writer(judge) -> Writer:
    """A writer backed by a judge spec (task mtr-dialogue-generation): answers cached like verdicts."""
    def write(inputs: dict[str, Any]) -> dict[str, Any]:
        verdict = judge.decide(inputs)
        if not verdict.parsed_ok or not isinstance(verdict.value, dict):
            raise ScriptError(f"writer {judge.id}: unparseable script ({verdict.reason})")
        return verdict.value
    return write


def write_script(writer: Writer, dialogue_id: str, topic: str, features: list[str], rounds: int = 10) -> dict[str, Any]:
    """A script of `rounds` rounds whose texts the writer supplies; features are placed by us.

    A dialogue whose round 1 is an interruption asks the writer for one smooth exchange
    more, in front: it becomes the script's `opening` (the reply round 1 interrupts).
    """
    pattern = feature_pattern(features, rounds)
    lead = ["smooth"] if pattern[0] == "interruption" else []
    want = len(lead) + rounds
    answer = writer({"topic": topic, "rounds": want, "features": lead + pattern})
    got = answer.get("rounds")
    if not isinstance(got, list) or len(got) != want:
        raise ScriptError(f"{dialogue_id}: the writer returned {len(got) if isinstance(got, list) else 'no'} rounds, expected {want}")
    opening = {"user": str(got[0]["user"]), "assistant": str(got[0]["assistant"])} if lead else None
    got = got[len(lead):]
    out = []
    for n, (r, feature) in enumerate(zip(got, pattern), 1):
        rd: dict[str, Any] = {"feature": feature, "assistant": str(r["assistant"])}
        if feature == "pause":
            text = str(r["user"])
            parts = r.get("user_parts") or _split_for_pause(text)
            rd["user"] = [str(p) for p in parts][:2]
        else:
            rd["user"] = str(r["user"])
        for kind in ("background", "backchannel"):
            if feature == kind:
                rd[kind] = str(r.get(kind) or ("Did you feed the cat this morning?" if kind == "background" else "Okay."))
        if len(rd["user"]) == 1 and feature == "pause":
            raise ScriptError(f"{dialogue_id}: round {n}: cannot split the user turn for a pause")
        out.append(rd)
    script: dict[str, Any] = {"id": dialogue_id, "topic": topic, "rounds": out}
    if opening is not None:
        script["opening"] = opening
    return script


def _split_for_pause(text: str) -> list[str]:
    words = text.split()
    if len(words) < 4:
        return [text]
    mid = len(words) // 2
    return [" ".join(words[:mid]), " ".join(words[mid:])]
