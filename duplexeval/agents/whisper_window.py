"""One short utterance through Whisper without paying for the 30 s window it does not fill.

Why: faster-whisper pads every clip's log-Mel features to Whisper's 30 s window (3,000
frames) before the encoder, whatever the clip's length. The cascade agent hears 1-15 s
utterances, so ~90% of its encoder's work was padding; measured on this project's 2-core
machine, the encoder of Whisper tiny.en (CTranslate2, int8, 1 thread) took 1.47 s on the
padded window of a 2.5 s question and 0.04 s on its 253 frames (bench/bench_cascade_asr.py
replays every utterance of a run's cascade recordings through both paths). CTranslate2's
Whisper encoder takes any length up to the window (its positional table is sliced to the
input), so the agent can encode the utterance padded to a shorter window instead.

What stays the same as faster-whisper's `transcribe` with the agent's options (English,
greedy, temperature 0, no previous text, no VAD filter): the features (the fixed-order
extractor, duplexeval.judges.asr_backends.whisper_features), the prompt with timestamp
tokens sampled (`timestamps=False` leaves them out: other words, measured, not used), the
tokens suppressed, the length limit, the first timestamp's limit (1 s), and the no-speech
rule (a window whose no-speech probability exceeds 0.6 and whose mean log-probability is
at most -1 says nothing). At 30 s it gives faster-whisper's text word for word (388 of 388
utterances of a run; tests/test_cascade_asr_window.py). What differs: the window is
`window_s` (the utterance is padded to a whole multiple of it, never past 30 s, with the
same zero features faster-whisper pads with), and an utterance is one window (the agent's
are at most 15 s). A shorter window can change a word, so the cascade names its window in
its spec (specs/models/cascade.yaml, `--asr-window-s`) and its transcripts' cache key.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

WHISPER_WINDOW_S = 30.0  # Whisper's own window: 3,000 feature frames, 1,500 encoder positions
NO_SPEECH_THRESHOLD = 0.6  # faster-whisper's defaults for the no-speech rule
LOG_PROB_THRESHOLD = -1.0


def window_frames(content_frames: int, window_s: float, frames_per_s: float = 100.0) -> int:
    """The frames the encoder sees: `content_frames` rounded up to a whole number of
    `window_s` windows, at most Whisper's 30 s (longer content is cut, as upstream cuts it)."""
    if window_s <= 0 or window_s > WHISPER_WINDOW_S:
        raise ValueError(f"the ASR window must be in (0, {WHISPER_WINDOW_S:g}] s, got {window_s:g}")
    full = int(round(WHISPER_WINDOW_S * frames_per_s))
    step = int(round(window_s * frames_per_s))
    return min(full, max(1, math.ceil(content_frames / step)) * step)


class WindowedWhisper:
    """A faster-whisper `WhisperModel` (with fixed-order features) that decodes one utterance
    in a `window_s` window: greedy, English, no timestamps (module docstring)."""

    def __init__(self, whisper: Any, window_s: float, timestamps: bool = True) -> None:
        from faster_whisper.tokenizer import Tokenizer
        from faster_whisper.transcribe import get_suppressed_tokens

        window_frames(1, window_s)  # checks the window
        self.whisper, self.window_s = whisper, float(window_s)
        self.tokenizer = Tokenizer(whisper.hf_tokenizer, whisper.model.is_multilingual, task="transcribe",
                                   language="en")
        self.suppress = list(get_suppressed_tokens(self.tokenizer, [-1]))
        self.timestamps = timestamps
        self.prompt = list(self.tokenizer.sot_sequence) + ([] if timestamps else [self.tokenizer.no_timestamps])

    def transcribe(self, audio: np.ndarray) -> str:
        """The utterance's text ('' when Whisper hears no speech in it)."""
        from faster_whisper.transcribe import get_ctranslate2_storage

        features = self.whisper.feature_extractor(np.asarray(audio, dtype=np.float32))
        content = features[:, : max(1, features.shape[-1] - 1)]  # upstream drops the padding's last frame too
        frames = window_frames(content.shape[-1], self.window_s)
        window = np.zeros((content.shape[0], frames), dtype=np.float32)
        window[:, : min(frames, content.shape[-1])] = content[:, :frames]
        encoded = self.whisper.model.encode(get_ctranslate2_storage(window[None]), to_cpu=False)
        result = self.whisper.model.generate(
            encoded, [self.prompt], beam_size=1, patience=1, length_penalty=1, repetition_penalty=1,
            no_repeat_ngram_size=0, max_length=self.whisper.max_length, return_scores=True,
            return_no_speech_prob=True, suppress_blank=True, suppress_tokens=self.suppress,
            max_initial_timestamp_index=50)[0]
        tokens = result.sequences_ids[0]
        avg_logprob = result.scores[0] * len(tokens) / (len(tokens) + 1)
        if result.no_speech_prob > NO_SPEECH_THRESHOLD and avg_logprob <= LOG_PROB_THRESHOLD:
            return ""
        return " ".join(str(self.tokenizer.decode(tokens)).split())
