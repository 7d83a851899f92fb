"""The `launch.realtime` section of a `realtime-api` model spec, read and checked once.

The bridge process gets it as JSON in its environment (`CONFIG_ENV`), never the key:
the key stays in the variable the spec names (`api_key_env`) and is read only when a
connection is opened, so it cannot reach a file, a log line or a manifest by way of
the configuration.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import asdict, dataclass, field
from typing import Any

CONFIG_ENV = "DUPLEXEVAL_REALTIME_CONFIG"
TURN_DETECTION = ("server_vad", "semantic_vad", "none")
SESSION_SHAPES = ("ga", "beta")
KEY_ENV_PATTERN = re.compile(r"^[A-Z][A-Z0-9_]*(_API_KEY|_TOKEN)$")  # duplexeval.secrets redacts these names
DEFAULT_MAX_SEND_LATENESS_MS = 250.0
DEFAULT_STALL_TIMEOUT_S = 15.0
DEFAULT_CONNECT_RETRIES = 3
DEFAULT_JITTER_BUFFER_MS = 80.0
# Token classes a `usage` block of response.done bills (OpenAI's realtime pricing rows).
TOKEN_CLASSES = ("input_text", "input_audio", "cached_input_text", "cached_input_audio", "output_text", "output_audio")
# What the pre-run estimate assumes of a session, from the same token model (docs/models.md, "Cost").
ESTIMATE_FIELDS = ("input_audio_tokens_per_s", "output_audio_tokens_per_s", "turn_s", "reply_s")


class RealtimeConfigError(ValueError):
    """A `launch.realtime` field that cannot work; the message names the field."""


@dataclass(frozen=True)
class RealtimeConfig:
    model_id: str
    base_url: str                 # websocket base: the client connects to <base_url>/realtime?model=<model>[&duplex=1]
    model: str
    api_key_env: str | None       # None: a server that takes no key (a local vLLM-Omni)
    in_rate: int
    out_rate: int
    frame_ms: float
    session_shape: str = "ga"     # where formats and turn detection go in session.update (GA or beta field names)
    turn_detection: str = "server_vad"
    voice: str | None = None
    session: dict[str, Any] = field(default_factory=dict)  # merged verbatim into session.update (a duplex mode)
    max_send_lateness_ms: float = DEFAULT_MAX_SEND_LATENESS_MS
    stall_timeout_s: float = DEFAULT_STALL_TIMEOUT_S
    connect_timeout_s: float = 20.0
    connect_retries: int = DEFAULT_CONNECT_RETRIES
    retry_backoff_s: float = 1.0
    price_per_minute: float | None = None
    duplex: bool = False          # vLLM-Omni's full-duplex endpoint: <base_url>/realtime?duplex=1
    jitter_buffer_ms: float = DEFAULT_JITTER_BUFFER_MS
    token_prices: dict[str, float] = field(default_factory=dict)   # per million tokens, by TOKEN_CLASSES
    token_estimate: dict[str, float] = field(default_factory=dict)  # by ESTIMATE_FIELDS

    def query(self) -> dict[str, str]:
        """Extra query parameters of the WebSocket URL (the client adds ?model=)."""
        return {"duplex": "1"} if self.duplex else {}

    def url(self) -> str:
        """Where the bridge connects, as the openai client builds it (for messages and tests)."""
        extra = "".join(f"&{k}={v}" for k, v in self.query().items())
        return f"{self.base_url}/realtime?model={self.model}{extra}"

    def api_key(self) -> str:
        """The key from the environment, read at the last moment ('' when unset; a placeholder for a
        server that takes none, since the openai client insists on one)."""
        if not self.api_key_env:
            return "no-key"  # a keyless server ignores the header
        return os.environ.get(self.api_key_env, "")

    def to_env(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_env(cls, text: str | None = None) -> "RealtimeConfig":
        text = os.environ.get(CONFIG_ENV) if text is None else text
        if not text:
            raise RealtimeConfigError(f"${CONFIG_ENV} is not set: the bridge is started by the realtime-api backend")
        return cls(**json.loads(text))


def _number(section: dict, key: str, where: str, default: float, minimum: float = 0.0) -> float:
    value = section.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= minimum:
        bound = ">= 0" if minimum < 0 else f"> {minimum:g}"
        raise RealtimeConfigError(f"{where}.{key} must be a finite number {bound}, got {value!r}")
    return float(value)


def config_from_spec(model_id: str, data: dict[str, Any], base_url: str | None = None) -> RealtimeConfig:
    """The bridge's configuration from a spec's data; `base_url` overrides (a run's `--endpoint`)."""
    where = f"model {model_id}: launch.realtime"
    section = data.get("launch", {}).get("realtime")
    if not isinstance(section, dict):
        raise RealtimeConfigError(f"{where} is missing: a realtime-api model needs base_url and model")
    url = base_url or section.get("base_url")
    if not isinstance(url, str) or not re.match(r"^wss?://[^/\s]+", url):
        raise RealtimeConfigError(f"{where}.base_url must be a ws:// or wss:// URL, got {url!r}")
    if not isinstance(section.get("model"), str) or not section["model"]:
        raise RealtimeConfigError(f"{where}.model must name the served model, got {section.get('model')!r}")
    key_env = section.get("api_key_env")
    if key_env is not None and (not isinstance(key_env, str) or not KEY_ENV_PATTERN.match(key_env)):
        raise RealtimeConfigError(f"{where}.api_key_env must be an environment variable name ending in _API_KEY or "
                                  f"_TOKEN (so every log is redacted of it), got {key_env!r}")
    for key, allowed in (("turn_detection", TURN_DETECTION), ("session_shape", SESSION_SHAPES)):
        if key in section and section[key] not in allowed:
            raise RealtimeConfigError(f"{where}.{key} must be one of {', '.join(allowed)}, got {section[key]!r}")
    if not isinstance(section.get("session", {}), dict):
        raise RealtimeConfigError(f"{where}.session must be a mapping of session fields, got {section['session']!r}")
    duplex = section.get("duplex", False)
    if not isinstance(duplex, bool):
        raise RealtimeConfigError(f"{where}.duplex must be true or false, got {duplex!r}")
    if section.get("turn_detection") == "none" and not duplex:
        raise RealtimeConfigError(
            f"{where}.turn_detection none needs duplex: true (a server that decides by itself when to speak, "
            "vLLM-Omni's /v1/realtime?duplex=1): on a turn-based API (OpenAI's gpt-realtime) the bridge never "
            "commits the buffer nor asks for a response, so the model would never answer")
    prices = section.get("token_prices", {})
    if not isinstance(prices, dict) or any(k not in TOKEN_CLASSES for k in prices):
        raise RealtimeConfigError(f"{where}.token_prices must map some of {', '.join(TOKEN_CLASSES)} to a price per "
                                  f"million tokens, got {prices!r}")
    estimate = section.get("token_estimate", {})
    if not isinstance(estimate, dict) or any(k not in ESTIMATE_FIELDS for k in estimate):
        raise RealtimeConfigError(f"{where}.token_estimate must map some of {', '.join(ESTIMATE_FIELDS)} to numbers, "
                                  f"got {estimate!r}")
    token_prices = {k: _number(prices, k, f"{where}.token_prices", 0.0, minimum=-1e-12) for k in prices}
    token_estimate = {k: _number(estimate, k, f"{where}.token_estimate", 0.0, minimum=-1e-12) for k in estimate}
    if token_prices and set(ESTIMATE_FIELDS) - set(token_estimate):
        raise RealtimeConfigError(f"{where}.token_estimate needs {', '.join(sorted(set(ESTIMATE_FIELDS) - set(token_estimate)))}"
                                  " beside token_prices: the dry run and --max-cost estimate a session's tokens with it")
    audio = data.get("audio", {})
    retries = section.get("connect_retries", DEFAULT_CONNECT_RETRIES)
    if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 10:
        raise RealtimeConfigError(f"{where}.connect_retries must be an integer 0..10, got {retries!r}")
    price = section.get("price_per_minute")
    if price is not None:
        price = _number(section, "price_per_minute", where, 0.0, minimum=-1e-12)
    return RealtimeConfig(
        model_id=model_id, base_url=url.rstrip("/"), model=section["model"], api_key_env=key_env,
        in_rate=int(audio.get("in_rate", 24000)), out_rate=int(audio.get("out_rate", 24000)),
        frame_ms=float(audio.get("frame_ms", 40)),
        session_shape=section.get("session_shape", "ga"), turn_detection=section.get("turn_detection", "server_vad"),
        voice=section.get("voice"), session=dict(section.get("session", {})),
        max_send_lateness_ms=_number(section, "max_send_lateness_ms", where, DEFAULT_MAX_SEND_LATENESS_MS),
        stall_timeout_s=_number(section, "stall_timeout_s", where, DEFAULT_STALL_TIMEOUT_S),
        connect_timeout_s=_number(section, "connect_timeout_s", where, 20.0),
        connect_retries=retries, retry_backoff_s=_number(section, "retry_backoff_s", where, 1.0, minimum=-1e-12),
        price_per_minute=price, duplex=duplex,
        jitter_buffer_ms=_number(section, "jitter_buffer_ms", where, DEFAULT_JITTER_BUFFER_MS, minimum=-1e-12),
        token_prices=token_prices, token_estimate=token_estimate,
    )


__all__ = ["CONFIG_ENV", "RealtimeConfig", "RealtimeConfigError", "config_from_spec"]
