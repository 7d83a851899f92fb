"""Render a conversation: every turn synthesised on its own with its speaker's voice.

Separate clips give exact turn boundaries (App. A2.3): the scheduler places each clip
and records where it landed, so no forced alignment is ever needed. Clips come from
`duplexeval.tts.synthesize`, which caches each utterance by content hash, so rendering a
scene twice costs nothing and yields identical samples.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from duplexeval.benchmarks.mpe.scenes.model import ConversationTurn, Scene, conversation
from duplexeval.io import sha256_bytes, sha256_json
from duplexeval.tts import synthesize


@dataclass(frozen=True)
class RenderedTurn:
    turn: ConversationTurn
    audio: np.ndarray  # float32 mono at the rendering rate


@dataclass(frozen=True)
class RenderedConversation:
    """The preamble clip and one clip per turn, for one scene in one condition."""

    scene_id: str
    condition: str
    rate: int
    preamble: np.ndarray
    turns: tuple[RenderedTurn, ...]
    content_sha256: str  # hash of every clip's samples + the script: identifies the stimulus

    @property
    def speech_s(self) -> float:
        """Total speech, preamble included (without the scheduler's gaps)."""
        return (len(self.preamble) + sum(len(t.audio) for t in self.turns)) / self.rate


def render_turns(scene: Scene, condition: str, rate: int, cache: Path | None = None,
                 tts: dict | None = None) -> RenderedConversation:
    """Synthesise the preamble and every turn of `scene` in `condition` at `rate`.

    `cache` is the TTS cache folder (None: duplexeval.tts's default, `$DUPLEXEVAL_CACHE`).
    `tts` is a suite's tts block (None: flite with the scene's voices); it pins a voice
    per speaker letter and for 'preamble'.
    """
    turns = conversation(scene, condition)
    preamble = synthesize(scene.preamble_text, scene.preamble_voice, rate, cache_dir=_tts_dir(cache),
                          tts=tts, speaker="preamble")
    clips = (scene.data.get("audio") or {}).get(condition)  # a published set's own clips: never re-synthesised
    if clips is not None and len(clips) != len(turns):
        raise ValueError(f"{scene.path}: audio.{condition} lists {len(clips)} clips for {len(turns)} turns")
    rendered = tuple(
        RenderedTurn(turn, published_clip(scene, clips[turn.index], rate) if clips else
                     synthesize(turn.text, turn.voice, rate, cache_dir=_tts_dir(cache), tts=tts, speaker=turn.speaker))
        for turn in turns
    )
    digest = sha256_json({
        "scene": scene.id,
        "condition": condition,
        "rate": rate,
        "preamble": [scene.preamble_voice, scene.preamble_text, _audio_sha(preamble)],
        "turns": [[t.turn.voice, t.turn.label, t.turn.text, _audio_sha(t.audio)] for t in rendered],
    })
    return RenderedConversation(scene.id, condition, rate, preamble, rendered, digest)


def published_clip(scene: Scene, path: str, rate: int) -> np.ndarray:
    """A published turn clip (mono) at `rate`, float32; the scene file names it (scene `audio` block)."""
    import soundfile as sf

    p = Path(path) if Path(path).is_absolute() or scene.path is None else Path(scene.path).parent / path
    try:
        audio, sr = sf.read(str(p), dtype="float32", always_2d=True)
    except (RuntimeError, OSError) as exc:
        raise FileNotFoundError(f"{scene.path}: audio clip {p}: {exc}") from None
    if audio.shape[1] != 1:
        raise ValueError(f"{p}: a turn clip must be mono, got {audio.shape[1]} channels (scene {scene.id})")
    mono = audio[:, 0]
    if sr != rate:
        import soxr

        mono = soxr.resample(mono, sr, rate).astype(np.float32)
    return mono


def _tts_dir(cache: Path | None) -> Path | None:
    return Path(cache) if cache is not None else None


def _audio_sha(audio: np.ndarray) -> str:
    return sha256_bytes(np.ascontiguousarray(audio, dtype=np.float32).tobytes())
