"""Voila (autonomous, full duplex) behind protocol v1: the shim owns the generation loop, one audio token per frame.

Written against github:maitrix-org/Voila at commit
6ba63bf6d20cac0d88b78bb2158ddcb9f94aec26 (2025-05-06), read (not copied) with `git show`:

- `model.py`, `VoilaAutonomousModel.run_generate(input_ids, input_generator, ref_embs,
  ref_embs_mask, max_new_tokens, pad_token_id, eos_token_id, llm_audio_token_id,
  min_audio_token_id, llm_assistant_token_id, temperature=0.2, top_k=50,
  audio_temperature=0.8, audio_top_k=50)`: `input_ids` is [1, seq, 2 * num_codebooks]
  (the user's channel, then the assistant's). Each step runs the model
  (`_prepare_inputs_for_generation`, `self(**inputs, return_dict=True)` ->
  `logits`, `voila_pred`, `last_hidden_state`, `past_key_values`), samples the
  assistant's audio codes with `audio_transformer.inference(last_hidden_state, ...)`
  and its next text token (temperature, top-k, multinomial). The Voila head
  (`argmax(voila_pred)`) decides when to start speaking: 1 while not speaking puts the
  `<|VOILA|>` token in; EOS stops speaking. A step whose token is `<au_token>` is an
  audio step: the assistant channel gets the sampled audio codes and the user channel
  the **next user codec token, pulled from `input_generator`**; any other step puts the
  token in both channels and consumes no user audio. `_update_model_kwargs_for_generation`
  keeps the DynamicCache and grows the attention mask. Audio codes are offset per
  codebook (`code + min_audio_token_id + k * codebook_size`);
- `tokenize_func.py` (`_token_input_format_autonomous`: the system prompt, task
  `<stream_chat><chat_audio_output>`, a chat-ref slot, `<|HUMAN|>`, in both channels;
  `SEG_LEN = 640` samples per codec token at `AUDIO_SR = 16000`: 40 ms) and
  `voila_tokenizer.py` (`VoilaTokenizer.encode(wav, sr) -> codes[n_q, T]`, `decode`);
- `infer.py` (`eval_model`: the prompt built by `voila_input_format`, the speaker
  embedding as `ref_embs`, the assistant half of the output decoded) and
  `gradio_demo.py` (precomputed speaker embeddings in `examples/character_ref_emb_demo.pkl`).

Lockstep: upstream's loop pulls the whole pre-tokenised recording; here the shim runs
the same step itself (`VoilaLoop.step`), so one protocol frame = 640 samples = one user
codec token: the frame's codes come from an `IncrementalCodec` (duplexeval/shims/
codec_loop.py: the non-streaming Encodec over a sliding window), then model steps run
until an audio step consumes them; the assistant codes of that step are the frame's
output, decoded incrementally. Text steps in between take no audio time (as upstream).
More than `max_text_steps` of them in a row is reported as an error, not hidden.

Fork: deep copies of the DynamicCache and attention mask, `input_ids`, the speaking
flag, the codec windows, the text decoder state and torch's RNG. Teacher forcing would
be substituting forced codec tokens on the assistant channel; that is not verified
against the model, so it is neither implemented nor declared. Text events: the text
tokens the model writes; state events: the speaking flag.

Everything model-specific is injected (`model`, `codec`, `tokens`, `initial_input_ids`,
`ref_embs`), so tests drive `VoilaServer` with stand-ins of the upstream call signatures
(tests/test_shims_voila.py).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from duplexeval.protocol.server import DuplexServer
from duplexeval.shims.codec_loop import IncrementalCodec
from duplexeval.shims.rng import seed_torch, set_torch_rng_state, torch_rng_state

SEG_LEN = 640          # tokenize_func.py: samples per codec token at 16 kHz
MAX_TEXT_STEPS = 256   # non-audio steps in a row before the shim reports a runaway


@dataclass(frozen=True)
class VoilaTokens:
    """Token ids from the tokenizer (infer.py eval_model) and the codec layout (model.config)."""

    min_audio_token_id: int   # "<|0|>"
    audio_token_id: int       # "<au_token>"
    assistant_token_id: int   # "<|VOILA|>"
    eos_token_id: int
    pad_token_id: int
    num_codebooks: int
    codebook_size: int


@dataclass(frozen=True)
class Sampling:
    """infer.py's eval_model settings."""

    temperature: float = 0.2
    top_k: int = 50
    audio_temperature: float = 0.8
    audio_top_k: int = 50


def _sample(logits: Any, temperature: float, top_k: int) -> Any:
    """Temperature, top-k, then one multinomial draw per row (the same recipe as run_generate)."""
    import torch

    if temperature > 0:
        logits = logits / temperature
    if top_k > 0:
        k = min(top_k, logits.size(-1))
        cutoff = torch.topk(logits, k)[0][..., -1, None]
        logits = logits.masked_fill(logits < cutoff, -float("inf"))
    probs = torch.nn.functional.softmax(logits, dim=-1)
    return torch.multinomial(probs, num_samples=1).squeeze(1)


class VoilaLoop:
    """One session of Voila's autonomous generation, advanced one user codec token at a time."""

    def __init__(self, model: Any, tokens: VoilaTokens, input_ids: Any, ref_embs: Any = None, ref_embs_mask: Any = None,
                 sampling: Sampling = Sampling(), max_text_steps: int = MAX_TEXT_STEPS) -> None:
        import torch

        self.model, self.t, self.sampling = model, tokens, sampling
        self.ref_embs, self.ref_embs_mask = ref_embs, ref_embs_mask
        self.max_text_steps = max_text_steps
        self.input_ids = input_ids.clone()
        if self.input_ids.dim() == 2:
            self.input_ids = self.input_ids[:, :, None].expand(1, -1, 2 * tokens.num_codebooks).clone()
        self.model_kwargs: dict[str, Any] = {
            "use_cache": True,
            "past_key_values": _dynamic_cache(model),
            "attention_mask": model._prepare_attention_mask_for_generation(self.input_ids, tokens.pad_token_id,
                                                                           tokens.eos_token_id),
        }
        self.speaking = False
        self.text_ids: list[int] = []
        self._torch = torch

    def _offsets(self) -> Any:
        t = self.t
        return self._torch.tensor([t.min_audio_token_id + k * t.codebook_size for k in range(t.num_codebooks)],
                                  device=self.input_ids.device)

    def user_tokens(self, codes: np.ndarray) -> Any:
        """Raw codes (n_q,) -> the user channel's token row (1, 1, n_q)."""
        raw = self._torch.as_tensor(np.asarray(codes), dtype=self._torch.long, device=self.input_ids.device)
        return (raw + self._offsets())[None, None, :]

    def _one_step(self) -> tuple[Any, bool]:
        """Forward once, sample; returns (next tokens (1, 1, n_q), is an audio step)."""
        torch, t, s, model = self._torch, self.t, self.sampling, self.model
        inputs = model._prepare_inputs_for_generation(self.input_ids, ref_embs=self.ref_embs,
                                                      ref_embs_mask=self.ref_embs_mask, **self.model_kwargs)
        outputs = model(**inputs, return_dict=True)
        audio = model.audio_transformer.inference(outputs.last_hidden_state, temperature=s.audio_temperature,
                                                  top_k=s.audio_top_k)
        audio = audio[:, -1:, :] + self._offsets()[None, None, :]
        head = int(torch.argmax(outputs.voila_pred[:, -1, :], dim=-1).cpu()[0].item())
        next_token = _sample(outputs.logits[:, -1, :], s.temperature, s.top_k)
        if head == 1 and not self.speaking:
            next_token[0] = t.assistant_token_id
            self.speaking = True
        elif int(next_token[0]) == t.eos_token_id:
            self.speaking = False
        is_audio = int(next_token[0]) == t.audio_token_id
        row = audio if is_audio else next_token[:, None, None].expand(-1, 1, t.num_codebooks)
        self.model_kwargs = model._update_model_kwargs_for_generation(outputs, self.model_kwargs)
        return row, is_audio

    def step(self, user_row: Any) -> tuple[np.ndarray, list[int]]:
        """Runs model steps until an audio step consumes `user_row`; returns (assistant raw codes (n_q,), text ids).

        Without autograd (upstream's `run_generate` runs under its caller's `no_grad`): the
        weights from `from_pretrained` require grad, and a recorded graph would chain every
        step's KV tensors to all the steps before (memory growing per frame) and make them
        non-leaf tensors, which `state()`'s deep copy refuses (bench/gpu_check_voila.py found it).
        """
        with self._torch.no_grad():
            return self._step(user_row)

    def _step(self, user_row: Any) -> tuple[np.ndarray, list[int]]:
        torch = self._torch
        texts: list[int] = []
        for _ in range(self.max_text_steps + 1):
            row, is_audio = self._one_step()
            if is_audio:
                self.input_ids = torch.cat([self.input_ids, torch.cat([user_row, row], dim=2)], dim=1)
                return (row[0, 0] - self._offsets()).cpu().numpy().astype(np.int64), texts
            token = int(row[0, 0, 0])
            if token not in (self.t.eos_token_id, self.t.assistant_token_id, self.t.pad_token_id):
                texts.append(token)
            self.input_ids = torch.cat([self.input_ids, torch.cat([row, row], dim=2)], dim=1)
        raise RuntimeError(f"Voila wrote {self.max_text_steps + 1} non-audio tokens in a row without an audio step")

    def state(self) -> dict:
        return {"input_ids": self.input_ids.clone(), "model_kwargs": copy.deepcopy(self.model_kwargs),
                "speaking": self.speaking, "text_ids": list(self.text_ids)}

    def load_state(self, state: dict) -> None:
        self.input_ids = state["input_ids"].clone()
        self.model_kwargs = copy.deepcopy(state["model_kwargs"])
        self.speaking = state["speaking"]
        self.text_ids = list(state["text_ids"])


def _dynamic_cache(model: Any) -> Any:
    factory = getattr(model, "new_cache", None)
    if factory is not None:  # a stand-in may bring its own cache type
        return factory()
    from transformers import DynamicCache

    return DynamicCache()


class VoilaServer(DuplexServer):
    model_name = "voila"
    in_rate = 16000
    out_rate = 16000
    frame_ms = 40.0  # SEG_LEN / AUDIO_SR: one codec token per frame
    capabilities = ("prompt", "fork", "text_events", "state_events")

    def __init__(self, model: Any, codec: IncrementalCodec, tokens: VoilaTokens,
                 initial_input_ids: Callable[[str], Any], *, ref_embs: Any = None, ref_embs_mask: Any = None,
                 decode_text: Callable[[list[int]], str] | None = None, instruction: str = "",
                 sampling: Sampling = Sampling(), seed_fn: Callable[[int], None] = seed_torch) -> None:
        super().__init__()
        if codec.frame_samples != self.in_frame_samples:
            raise ValueError(f"codec hop {codec.frame_samples} != frame of {self.in_frame_samples} samples")
        self.model, self.codec, self.tokens = model, codec, tokens
        self.initial_input_ids = initial_input_ids
        self.ref_embs, self.ref_embs_mask = ref_embs, ref_embs_mask
        self.decode_text = decode_text
        self.instruction = instruction
        self.sampling = sampling
        self.seed_fn = seed_fn
        self.prompt: str | None = None
        self.seed = 0
        self._prompt_ids: dict[str, Any] = {}
        self.loop: VoilaLoop | None = None
        self.spoken_text = ""

    def reset(self) -> None:
        self.seed_fn(self.seed)
        instruction = self.prompt if self.prompt is not None else self.instruction
        if instruction not in self._prompt_ids:
            self._prompt_ids[instruction] = self.initial_input_ids(instruction)
        self.loop = VoilaLoop(self.model, self.tokens, self._prompt_ids[instruction], self.ref_embs,
                              self.ref_embs_mask, self.sampling)
        self.codec.reset()
        self.spoken_text = ""
        self._was_speaking = False

    def start_session(self, clock: str, seed: int, prompt: str | None) -> None:
        self.seed, self.prompt = seed, prompt
        self.reset()

    def step(self, frame_idx: int, input_audio: np.ndarray, forced: np.ndarray | None) -> np.ndarray:
        user_codes = self.codec.encode_frame(input_audio)
        loop = self.loop
        codes, text_ids = loop.step(loop.user_tokens(user_codes))
        if text_ids and self.decode_text is not None:
            loop.text_ids.extend(text_ids)
            text = self.decode_text(loop.text_ids)
            if "\ufffd" not in text and len(text) > len(self.spoken_text):
                self.emit({"type": "text", "frame_idx": frame_idx, "text": text[len(self.spoken_text):]})
                self.spoken_text = text
        if loop.speaking != self._was_speaking:
            self._was_speaking = loop.speaking
            self.emit({"type": "state", "frame_idx": frame_idx, "state": "speak" if loop.speaking else "listen"})
        return self.codec.decode_frame(codes)

    def snapshot(self) -> dict:
        return {"loop": self.loop.state(), "codec": self.codec.state(), "rng": torch_rng_state(),
                "spoken_text": self.spoken_text, "was_speaking": self._was_speaking}

    def restore(self, state: dict) -> None:
        self.loop.load_state(state["loop"])
        self.codec.load_state(state["codec"])
        set_torch_rng_state(state["rng"])
        self.spoken_text, self._was_speaking = state["spoken_text"], state["was_speaking"]
