"""MiniCPM-o 4.5 behind protocol v1: 1 s units in, fixed 1 s frames of its voice out.

Written against MiniCPM-o 4.5's own duplex code, read (not copied) from
github:OpenBMB/minicpm-o-4_5-pytorch-simple-demo at commit
c7e16605c3ae9623a0caee5845bd0183b1d6d5b3, `MiniCPMO45/modeling_minicpmo.py` (the model
code the hub repo `openbmb/MiniCPM-o-4_5` ships for `trust_remote_code`; the same folder
also has `modeling_minicpmo_unified.py` with `DuplexCapability`), class `MiniCPMODuplex`:

- `AutoModel.from_pretrained(path, trust_remote_code=True, torch_dtype=bfloat16)`,
  `.eval().cuda()`, `init_tts()`, then `as_duplex()` gives the duplex object;
- per session `prepare(prefix_system_prompt=..., ref_audio=<16 kHz float>,
  prompt_wav_path=<the voice>)`; `prompt_wav_path` initialises the token2wav cache, and
  without it `_generate_waveform_from_tokens` returns None ("token2wav_initialized is
  uninitialized"): no voice at all, so the shim refuses to start without a voice file;
- every 1 s: `streaming_prefill(audio_waveform=<16000 float32 at 16 kHz>, frame_list=[])`
  -> `{"success": bool, "reason": str, ...}` (the first unit needs 1035 ms: upstream pads
  the first call with zeros in front, `FIRST_CHUNK_MS`), then
  `streaming_generate(prompt_wav_path=..., max_new_speak_tokens_per_chunk=20,
  decode_mode="sampling")` -> `{"is_listen", "text", "audio_waveform", "end_of_turn", ...}`;
  `audio_waveform` is float32 at 24 kHz of **variable length**: zeros for a listening
  unit, None when speaking but token2wav has not flushed yet, a left-zero-padded second,
  or several 25-token chunks joined (`_generate_waveform_from_tokens`).

So lockstep at 1 s frames is native; what the shim adds:

- a `FrameFifo` (duplexeval/shims/framing.py) turns the variable-length waveforms into
  exactly 24000 samples per frame (zeros while nothing is queued); `end` tail frames
  drain it;
- every waveform passes `pcm_float32`: an int16 array is scaled, float values outside
  [-1, 1] by far (int16 read as float, the "unintelligible PCM" users report) raise
  error{INTERNAL} instead of reaching the recording as noise;
- a stuck-listening watch: upstream users report sessions that never leave listening.
  After `stuck_listen_s` (default 60 s) of listening while the input had speech-level
  energy, the shim writes one warning to stderr and emits `state{listen}` with nothing
  else; it does not force the model (that would change what is measured);
- `text` events with `streaming_generate`'s text, `state` events from `is_listen`;
- a failed prefill (`success: False`, e.g. "audio not enough") is passed on as upstream
  does: that unit's generate returns listening silence.

No fork (the decoder's KV cache, TTS cache and token2wav stream caches are spread over
the model object, with no copy API) and no teacher forcing (no way to feed assistant
audio): neither is declared. `prompt`: `hello.prompt` becomes `prefix_system_prompt`.
Seeding: torch's generators per session (sampling decode).

The core is injected (`core`: the object `as_duplex()` returns), so tests drive this
class with a stand-in of the same call signature (tests/test_shims_minicpm_o.py).
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import numpy as np

from duplexeval.protocol.server import DuplexServer
from duplexeval.shims.framing import FrameFifo, pcm_float32, rms
from duplexeval.shims.rng import seed_torch

# Our paraphrase of the English duplex preset of OpenBMB's demo
# (assets/presets/audio_duplex/english_call.yaml at the commit above).
DEFAULT_SYSTEM_PROMPT = ("Be a helpful assistant and speak in the voice of the reference audio. Answer the user's "
                         "questions seriously and naturally. You are in duplex mode: you listen and speak at the same time.")
STUCK_LISTEN_S = 60.0
SPEECH_RMS = 0.01  # input energy that counts as "someone is talking" for the stuck watch


class StuckListenWatch:
    """Counts consecutive listening units that heard speech-level input; fires once per session."""

    def __init__(self, limit_units: int, speech_rms: float = SPEECH_RMS) -> None:
        self.limit_units, self.speech_rms = limit_units, speech_rms
        self.run = 0
        self.fired = False

    def update(self, is_listen: bool, input_audio: np.ndarray) -> bool:
        """True exactly once: the unit at which the run of heard-but-listening units reaches the limit."""
        if not is_listen:
            self.run = 0
            return False
        if rms(input_audio) >= self.speech_rms:
            self.run += 1
        if self.run >= self.limit_units and not self.fired:
            self.fired = True
            return True
        return False


class MiniCPMOServer(DuplexServer):
    model_name = "minicpm-o-4.5"
    in_rate = 16000
    out_rate = 24000
    frame_ms = 1000.0
    capabilities = ("prompt", "text_events", "state_events")

    def __init__(self, core: Any, *, prompt_wav_path: str, ref_audio: np.ndarray | None = None,
                 system_prompt: str = DEFAULT_SYSTEM_PROMPT, max_new_speak_tokens_per_chunk: int = 20,
                 decode_mode: str = "sampling", stuck_listen_s: float = STUCK_LISTEN_S,
                 seed_fn: Callable[[int], None] | None = None, log: Callable[[str], None] | None = None) -> None:
        super().__init__()
        if not prompt_wav_path:
            raise ValueError("MiniCPM-o needs a voice file (prompt_wav_path): without one upstream's token2wav is "
                             "never initialised and every spoken unit comes back without audio")
        self.core = core
        self.prompt_wav_path = prompt_wav_path
        self.ref_audio = ref_audio
        self.system_prompt = system_prompt
        self.max_new_speak_tokens_per_chunk = max_new_speak_tokens_per_chunk
        self.decode_mode = decode_mode
        self.stuck_units = max(1, int(round(stuck_listen_s * 1000.0 / self.frame_ms)))
        self.seed_fn = seed_fn or seed_torch
        self.log = log or (lambda line: print(line, file=sys.stderr, flush=True))
        self.fifo = FrameFifo(self.out_frame_samples)
        self.watch = StuckListenWatch(self.stuck_units)
        self.listening = True
        self.prefill_failures = 0
        self.prompt: str | None = None
        self.seed = 0
        self._needs_prepare = True

    def reset(self) -> None:
        self.fifo = FrameFifo(self.out_frame_samples)
        self.watch = StuckListenWatch(self.stuck_units)
        self.listening = True
        self.prefill_failures = 0
        self._needs_prepare = True  # prepare() runs before the first unit: a reset repeats it

    def start_session(self, clock: str, seed: int, prompt: str | None) -> None:
        self.seed, self.prompt = seed, prompt
        self._needs_prepare = True

    def _prepare(self) -> None:
        self.seed_fn(self.seed)
        self.core.prepare(prefix_system_prompt=self.prompt or self.system_prompt, ref_audio=self.ref_audio,
                          prompt_wav_path=self.prompt_wav_path)
        self._needs_prepare = False

    def step(self, frame_idx: int, input_audio: np.ndarray, forced: np.ndarray | None) -> np.ndarray:
        if self._needs_prepare:
            self._prepare()
        pre = self.core.streaming_prefill(audio_waveform=np.asarray(input_audio, dtype=np.float32), frame_list=[])
        if isinstance(pre, dict) and not pre.get("success", True):
            self.prefill_failures += 1
        res = self.core.streaming_generate(prompt_wav_path=self.prompt_wav_path,
                                           max_new_speak_tokens_per_chunk=self.max_new_speak_tokens_per_chunk,
                                           decode_mode=self.decode_mode)
        is_listen = bool(res.get("is_listen", True))
        audio = res.get("audio_waveform")
        if audio is not None:
            # A listening unit's waveform is upstream's silence: checked like any other, never queued.
            pcm = pcm_float32(audio, f"MiniCPM-o audio_waveform of unit {frame_idx}")
            if not is_listen:
                self.fifo.push(pcm)
        text = res.get("text") or ""
        if text:
            self.emit({"type": "text", "frame_idx": frame_idx, "text": text})
        if is_listen != self.listening:
            self.listening = is_listen
            self.emit({"type": "state", "frame_idx": frame_idx, "state": "listen" if is_listen else "speak"})
        if self.watch.update(is_listen, input_audio):
            self.log(f"{self.model_name}: warning: listening for {self.watch.run} units while the input had speech "
                     f"(frame {frame_idx}); upstream sessions are known to get stuck listening")
        return self.fifo.pop()
