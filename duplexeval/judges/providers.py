"""LLM providers over the real SDKs: `openai` (also any OpenAI-compatible base_url) and `anthropic`.

* The key is read from the environment variable the spec names, when the first request
  is made - never earlier, so replay needs no key - and never stored, logged or put into
  an error: messages pass through `redact` first.
* The SDKs' own retries are off (max_retries=0): `retry.call_with_retries` is the only
  retry loop, so every retry is bounded and logged.
* The base URL is always passed explicitly (the SDKs would otherwise silently honour
  OPENAI_BASE_URL / ANTHROPIC_BASE_URL) and is part of the cache key.
* One semaphore per (provider, base_url) caps concurrent requests across all judges.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

from duplexeval.judges.retry import Failure
from duplexeval.lazy import LazyRegistry

DEFAULT_BASE_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
DEFAULT_CONCURRENCY = 4
ANTHROPIC_DEFAULT_MAX_TOKENS = 1024  # the Messages API requires max_tokens

# A judge spec's `provider` -> the judge class that runs it (`module:Class[.factory]`, imported
# when a spec chooses it; each takes (spec data, spec path, cache, **options)). openai also
# serves any OpenAI-compatible base_url.
JUDGE_BACKENDS: LazyRegistry[Any] = LazyRegistry("judge provider", {
    "openai": "duplexeval.judges.llm:Judge",
    "anthropic": "duplexeval.judges.llm:Judge",
    "openai-compatible": "duplexeval.judges.llm:Judge",
    "offline": "duplexeval.judges.offline:OfflineJudge.from_spec",
})

_semaphores: dict[tuple[str, str], threading.BoundedSemaphore] = {}
_semaphores_lock = threading.Lock()


class MissingApiKeyError(RuntimeError):
    """The environment variable named by `api_key_env` is unset or empty."""


class MalformedResponseError(ValueError):
    """A 200 response without the fields a chat answer must have (retried as transient)."""


def provider_semaphore(provider: str, base_url: str, limit: int) -> threading.BoundedSemaphore:
    """The shared limit for one endpoint; the first judge to ask sets its size."""
    with _semaphores_lock:
        return _semaphores.setdefault((provider, base_url), threading.BoundedSemaphore(limit))


class Provider:
    """One endpoint; builds its SDK client on first use."""

    def __init__(self, provider: str, base_url: str, api_key_env: str, timeout_s: float, judge_id: str) -> None:
        self.provider = provider
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self.judge_id = judge_id
        self._client: Any = None
        self._secret: str | None = None
        self._lock = threading.Lock()

    def _api_key(self) -> str:
        key = os.environ.get(self.api_key_env, "")
        if not key:
            raise MissingApiKeyError(f"judge {self.judge_id} needs an API key: set the environment variable "
                                     f"{self.api_key_env} (keys are read only from the environment)")
        return key

    def redact(self, text: str) -> str:
        """Removes the key (and any visible part of it) from a message before it is shown."""
        secret = self._secret or os.environ.get(self.api_key_env, "")
        if secret:
            text = text.replace(secret, "***")
            if len(secret) >= 16:  # APIs often echo a key as "sk-abc...wxyz"
                for part in (secret[:8], secret[-6:]):
                    text = text.replace(part, "***")
        return text

    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                key = self._api_key()
                self._secret = key
                if self.provider == "anthropic":
                    import anthropic

                    self._client = anthropic.Anthropic(api_key=key, base_url=self.base_url,
                                                       timeout=self.timeout_s, max_retries=0)
                else:
                    import openai

                    self._client = openai.OpenAI(api_key=key, base_url=self.base_url,
                                                 timeout=self.timeout_s, max_retries=0)
            return self._client

    def complete(self, messages: list[dict[str, str]], model: str, decoding: dict[str, Any]) -> dict[str, Any]:
        """{"text": the answer, "model": the model the provider says answered}."""
        if self.provider == "anthropic":
            return self._anthropic(messages, model, decoding)
        return self._openai(messages, model, decoding)

    def _openai(self, messages, model, decoding) -> dict[str, Any]:
        params = {k: decoding[k] for k in ("temperature", "top_p", "max_tokens", "seed") if k in decoding}
        resp = self.client().chat.completions.create(model=model, messages=messages, **params)
        try:
            content = resp.choices[0].message.content
        except (AttributeError, IndexError, TypeError) as exc:
            raise MalformedResponseError(f"chat completion without choices[0].message ({exc})") from None
        return {"text": content or "", "model": str(getattr(resp, "model", None) or model)}

    def _anthropic(self, messages, model, decoding) -> dict[str, Any]:
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        chat = [m for m in messages if m["role"] != "system"]
        # Only max_tokens: the Messages API of anthropic 2.x has no temperature/top_p/seed
        # (`check_decoding` refuses such specs rather than silently dropping them).
        resp = self.client().messages.create(model=model, messages=chat,
                                             max_tokens=decoding.get("max_tokens", ANTHROPIC_DEFAULT_MAX_TOKENS),
                                             **({"system": system} if system else {}))
        try:
            text = "".join(block.text for block in resp.content if getattr(block, "type", "") == "text")
        except (AttributeError, TypeError) as exc:
            raise MalformedResponseError(f"message without text content ({exc})") from None
        return {"text": text, "model": str(getattr(resp, "model", None) or model)}

    def classify(self, exc: BaseException) -> Failure:
        """Rate limit / transient / permanent, with the server's Retry-After when it sent one."""
        from duplexeval.judges.retry import parse_retry_after

        sdk = _sdk(self.provider)
        name = type(exc).__name__
        message = f"{name}: {exc}"
        if isinstance(exc, sdk.APITimeoutError):
            return Failure(True, "timeout", None, message)
        if isinstance(exc, sdk.APIConnectionError):
            return Failure(True, "connection", None, message)
        if isinstance(exc, (sdk.APIResponseValidationError, MalformedResponseError, json.JSONDecodeError)):
            return Failure(True, "malformed-response", None, message)
        status = getattr(exc, "status_code", None)
        if isinstance(status, int):
            response = getattr(exc, "response", None)
            retry_after = parse_retry_after(getattr(response, "headers", None))
            message = f"HTTP {status} {name}: {_short(exc)}"
            if status == 429:
                return Failure(True, "rate-limit", retry_after, message)
            if status in (408, 409) or status >= 500:
                return Failure(True, "transient", retry_after, message)
            return Failure(False, "permanent", None, message)
        if isinstance(exc, (MissingApiKeyError,)):
            return Failure(False, "configuration", None, str(exc))
        return Failure(False, "permanent", None, message)


def check_decoding(provider: str, decoding: dict[str, Any], judge_id: str) -> None:
    """Refuses decoding parameters the provider's API cannot take (never drop them silently)."""
    if provider == "anthropic":
        unsupported = sorted(set(decoding) - {"max_tokens"})
        if unsupported:
            raise ValueError(f"judge {judge_id}: the Anthropic Messages API (anthropic SDK 2.x) takes no "
                             f"{', '.join(unsupported)}; remove them from `decoding`")


def _sdk(provider: str):
    if provider == "anthropic":
        import anthropic

        return anthropic
    import openai

    return openai


def _short(exc: BaseException, limit: int = 300) -> str:
    text = str(exc)
    return text if len(text) <= limit else text[:limit] + "..."
