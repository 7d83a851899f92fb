"""VocalNet (half-duplex) behind protocol v1: shim turn-taking around its one-utterance-in, one-reply-out API.

Written against github:SJTU-OmniAgent/VocalNet at commit
bdf01d2d4edcf4c86c193e6b5170cf65a83adadf (2025-09-18), read (not copied) with `git show`:

- `omni_speech/infer/vocalnet.py`, class `VocalNetModel(model_name_or_path,
  vocoder_path, s2s=True, temperature=0, top_p=0.1, max_new_tokens=512, streaming=False)`:
  `__initilize__()` loads the LLM (`load_pretrained_model`: Whisper-large-v3 encoder at
  16 kHz, the LLM, the MTP speech decoder) and CosyVoice2's flow + HiFT vocoder
  (`CosyvoiceVocoder`, `sample_rate=24000`) with a voice prompt (`PROMPT_SPEECH`, a
  module constant, default `./omni_speech/infer/cn_prompt.wav`); `set_audio_dir(dir)`;
  `__call__([{"role": "user", "content": "<speech>", "path": wav}])` reads the file with
  `whisper.load_audio`, generates text and speech units (`infer_mtp_token_num=2`),
  vocodes them and writes `<audio_dir>/<basename of the input>` (`.mp3` renamed `.wav`)
  at 24 kHz; it returns `{"text": ..., "audio": <that path>}`.
  So: **24 kHz out** (the old spec's 22050 was wrong), one user utterance per call, no
  conversation history (each call is a new single-turn conversation).

The shim (`TurnTakingServer`, duplexeval/shims/turns.py) does the turn-taking VocalNet
does not: Silero VAD endpointing (duplexeval/shims/endpointer.py) ends a user turn after
0.8 s of silence (the rules: the spec's `endpointer` section, `endpoint_rules` here);
the turn goes to `__call__` through a wav file in a private temp folder, the reply's
wav is read back and played out in 1920-sample frames (80 ms at 24 kHz); a new user
turn stops a reply that is still playing (barge-in). Every result is labelled "shim
turn-taking" (the spec's caveat), as the MTR paper's "VocalNet (HD)" row is. In
lockstep the reply's compute is outside the timing (the reply starts the frame after the
endpoint); in realtime it is latency.

Fork is exact and cheap (the model keeps no state between calls): the VAD's recurrent
state, the endpointer, the reply queue, the turn counter and torch's RNG. No teacher
forcing (nothing to force: VocalNet has no history). Text events: the reply's text.

The model object is injected (anything with `set_audio_dir` and `__call__(messages)`),
so the tests drive this class with a stand-in of that signature
(tests/test_shims_vocalnet.py).
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, Callable

import numpy as np

from duplexeval.shims.endpointer import SileroProbs, VadEndpointer
from duplexeval.shims.rng import seed_torch, set_torch_rng_state, torch_rng_state
from duplexeval.shims.turns import TurnTakingServer

VOCODER_RATE = 24000  # CosyvoiceVocoder(sample_rate=24000)


def _write_wav(path: str, audio: np.ndarray, rate: int) -> None:
    import soundfile as sf

    sf.write(path, np.asarray(audio, dtype=np.float32), rate, subtype="PCM_16")


def _read_wav(path: str) -> tuple[np.ndarray, int]:
    import soundfile as sf

    audio, rate = sf.read(path, dtype="float32", always_2d=True)
    return audio.mean(axis=1), int(rate)


class VocalNetServer(TurnTakingServer):
    model_name = "vocalnet"
    in_rate = 16000
    out_rate = VOCODER_RATE
    frame_ms = 80.0
    capabilities = ("fork", "text_events", "state_events")

    def __init__(self, model: Any, *, probs: SileroProbs | None = None, barge_in: bool = True,
                 seed_fn: Callable[[int], None] = seed_torch, workdir: str | None = None,
                 endpoint_rules: dict | None = None) -> None:
        self.model = model
        self._probs = probs
        self._rules = dict(endpoint_rules or {})
        self.seed_fn = seed_fn
        self.seed = 0
        self.workdir = workdir or tempfile.mkdtemp(prefix="vocalnet-shim-")
        self.in_dir = os.path.join(self.workdir, "in")
        self.out_dir = os.path.join(self.workdir, "out")
        os.makedirs(self.in_dir, exist_ok=True)
        os.makedirs(self.out_dir, exist_ok=True)
        model.set_audio_dir(self.out_dir)
        super().__init__(barge_in=barge_in)

    def make_endpointer(self) -> VadEndpointer:
        return VadEndpointer(self.frame_ms / 1000.0, probs=self._probs, **self._rules)

    def start_session(self, clock: str, seed: int, prompt: str | None) -> None:
        self.seed = seed
        self.seed_fn(seed)

    def reset_model(self) -> None:
        self.seed_fn(self.seed)

    def respond(self, turn_audio: np.ndarray, frame_idx: int) -> tuple[str, np.ndarray | None]:
        # Upstream writes the reply under the input's own file name: a new name per turn,
        # and input and output in different folders, so nothing is overwritten or reread.
        name = f"turn-{self.turns:05d}-{frame_idx:07d}.wav"
        path = os.path.join(self.in_dir, name)
        _write_wav(path, turn_audio, self.in_rate)
        try:
            result = self.model([{"role": "user", "content": "<speech>", "path": path}])
        finally:
            os.unlink(path)
        text = str(result.get("text", "")).strip()
        out_path = result.get("audio")
        if not out_path:
            return text, None
        audio, rate = _read_wav(out_path)
        os.unlink(out_path)
        if rate != self.out_rate:
            raise RuntimeError(f"VocalNet wrote {out_path} at {rate} Hz; the vocoder's rate is {self.out_rate} Hz")
        return text, audio

    def extra_state(self) -> Any:
        return {"rng": torch_rng_state()}

    def load_extra_state(self, state: Any) -> None:
        set_torch_rng_state(state["rng"])
