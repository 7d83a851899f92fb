"""One session with a Realtime-API server (OpenAI's, or vLLM-Omni's `/v1/realtime`).

The connection is opened by the `openai` package's realtime client
(`AsyncOpenAI.realtime.connect`): it builds the URL (`<base>/realtime?model=`, plus
`&duplex=1` for vLLM-Omni's full-duplex endpoint, `launch.realtime.duplex`), the
`Authorization: Bearer` header and the redirect rule the same way for OpenAI and for any
compatible server. Its reconnection is left off (no `on_reconnecting`): a realtime
session that silently reconnects has lost what the model heard, so a dropped connection
is an error item. Events go out with `send_raw` and come in with `recv_bytes`, parsed
and checked here: the client's typed `send` re-validates every 40 ms append, and its
typed `recv` would accept a malformed event that must be an error item instead.

The session's settings are the server's to refuse: an `error` before `session.updated`
(vLLM-Omni's `ref_audio_required`, an unsupported format) ends the session at once with
the server's message (REMOTE_REFUSED), and the audio rates the server reports in
`session.updated` are checked against the spec's: a server that would read our audio at
another rate (or send its own at one) is refused (REMOTE_RATE), never mislabelled.

Every fault becomes a `RemoteFault` with a protocol error code (wire.ErrorCode.REMOTE):
the bridge sends it to the harness as `error{code, fatal}`, so the item says whose fault
it was. Only opening the connection is retried (bounded, logged, Retry-After honoured,
as duplexeval/judges/retry.py does for judge calls); nothing mid-session is.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
import random
from typing import Any, Protocol

from duplexeval.judges.retry import RetryPolicy, parse_retry_after
from duplexeval.protocol.wire import ErrorCode
from duplexeval.realtime.timing import SessionTiming
from duplexeval.secrets import redact
from duplexeval.specs.realtime_config import RealtimeConfig

log = logging.getLogger("duplexeval.realtime")
AUDIO_DELTAS = ("response.output_audio.delta", "response.audio.delta")  # GA, beta
AUDIO_DONE = ("response.output_audio.done", "response.audio.done")
AUTH_CODES = ("invalid_api_key", "authentication_error", "unauthorized", "insufficient_quota")
RATE_CODES = ("rate_limit_exceeded", "rate_limit_error")
# Fields of a server event worth keeping in events.jsonl (never audio, never the key).
KEPT_FIELDS = ("event_id", "item_id", "response_id", "audio_start_ms", "audio_end_ms", "rate_limits", "transcript")
USAGE_FIELDS = ("total_tokens", "input_tokens", "output_tokens", "input_token_details", "output_token_details")


def deep_merge(base: dict, extra: dict) -> dict:
    """`extra` merged into a copy of `base`, mapping into mapping (a VAD field set through
    `launch.realtime.session` keeps the voice and formats beside it); other values replace."""
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


class RemoteFault(Exception):
    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code, self.message = code, redact(message)


def session_update(cfg: RealtimeConfig, prompt: str | None) -> dict:
    """session.update in the spec's shape: GA (`audio.input.format`) or beta (`input_audio_format`)."""
    turn = None if cfg.turn_detection == "none" else {"type": cfg.turn_detection}
    if cfg.session_shape == "ga":
        session: dict[str, Any] = {
            "type": "realtime", "model": cfg.model, "output_modalities": ["audio"],
            "audio": {"input": {"format": {"type": "audio/pcm", "rate": cfg.in_rate}, "turn_detection": turn},
                      "output": {"format": {"type": "audio/pcm", "rate": cfg.out_rate}}},
        }
        if cfg.voice:
            session["audio"]["output"]["voice"] = cfg.voice
    else:
        session = {"modalities": ["audio", "text"], "input_audio_format": "pcm16", "output_audio_format": "pcm16",
                   "turn_detection": turn}
        if cfg.voice:
            session["voice"] = cfg.voice
    if prompt:
        session["instructions"] = prompt
    return {"type": "session.update", "session": deep_merge(session, cfg.session)}


def _map(value: Any) -> dict[str, Any]:
    """A server's field that should be a mapping, as one (empty when it is not)."""
    return value if isinstance(value, dict) else {}


def turn_detection_of(session: dict) -> dict | None:
    """The turn detection a session.update (or the server's session) sets, in either shape."""
    audio = _map(session.get("audio"))
    inp = _map(audio.get("input"))
    turn = inp.get("turn_detection", session.get("turn_detection"))
    return turn if isinstance(turn, dict) else None


def interrupts(session: dict) -> bool:
    """Whether the session stops the model's reply when the user starts speaking: server VAD's
    `interrupt_response` (default true); never without turn detection (the server decides)."""
    turn = turn_detection_of(session)
    return turn is not None and turn.get("interrupt_response", True) is not False


def reported_rates(session: dict) -> dict[str, int | str]:
    """The audio rates a server's session says it uses: GA `audio.<dir>.format.rate`, or a beta
    format name ("pcm16" is 24 kHz to OpenAI, a server's own default elsewhere: returned as the name)."""
    out: dict[str, int | str] = {}
    audio = _map(session.get("audio"))
    for direction in ("input", "output"):
        block = _map(audio.get(direction))
        fmt = block.get("format")
        if isinstance(fmt, dict) and isinstance(fmt.get("rate"), int) and not isinstance(fmt.get("rate"), bool):
            out[direction] = fmt["rate"]
        elif isinstance(session.get(f"{direction}_audio_format"), str):
            out[direction] = session[f"{direction}_audio_format"]
    return out


def classify_connect_error(exc: BaseException) -> tuple[str, bool, float | None, str]:
    """(code, retryable, retry_after_s, message) of a failed connection attempt."""
    from websockets.exceptions import InvalidStatus

    if isinstance(exc, InvalidStatus):
        status = exc.response.status_code
        after = parse_retry_after(exc.response.headers)
        body = exc.response.body.decode("utf-8", "replace")[:200] if exc.response.body else ""
        text = f"HTTP {status} on the WebSocket handshake" + (f": {body}" if body else "")
        if status in (401, 403):
            return ErrorCode.AUTH, False, None, f"{text} (the key in the spec's api_key_env was refused)"
        if status == 429:
            return ErrorCode.RATE_LIMITED, True, after, text
        return ErrorCode.REMOTE_CONNECT, status >= 500 or status in (408, 409), after, text
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
        return ErrorCode.REMOTE_CONNECT, True, None, "no WebSocket handshake within the connect timeout"
    return ErrorCode.REMOTE_CONNECT, True, None, f"{type(exc).__name__}: {exc}"


class Sink(Protocol):
    """Where a session's audio and events go (the bridge, under its lock): duplexeval/realtime/playback.py."""

    def audio(self, rid: str, pcm: bytes) -> bool: ...            # False: a reply already cut or cancelled
    def finished(self, rid: str) -> None: ...
    def cancelled(self, rid: str) -> int: ...                     # samples dropped
    def cut(self) -> tuple[int, str | None, int]: ...             # (dropped, reply, samples of it played)
    def event(self, event: dict) -> None: ...


class RemoteSession:
    """A live connection. The sink's methods run on this loop; faults land in `fault`."""

    def __init__(self, cfg: RealtimeConfig, timing: SessionTiming, sink: Sink):
        self.cfg, self.timing, self.sink = cfg, timing, sink
        self.conn: Any = None
        self.fault: RemoteFault | None = None
        self.retries: list[dict] = []
        self.sends: asyncio.Queue = asyncio.Queue()
        self.tasks: list[asyncio.Task] = []
        self.updated = asyncio.Event()
        self.last_event = timing.now()
        self.owed: str | None = None  # what the server owes us now (the stall watch), or None
        self.sent_session: dict = {}
        self.interrupts = False       # the session stops a reply when the user speaks (server VAD's interrupt_response)
        self.reply_items: dict[str, str] = {}  # response id -> its audio item id (for conversation.item.truncate)
        self.errors = 0
        self.usage: list[dict] = []   # `usage` of each response.done, as billed

    # ---- opening --------------------------------------------------------------------------
    async def open(self, prompt: str | None) -> None:
        await self._connect_with_retries()
        self.tasks = [asyncio.create_task(self._receive()), asyncio.create_task(self._send_loop()),
                      asyncio.create_task(self._watch())]
        self.owed = "session.updated after session.update"
        self.last_event = self.timing.now()
        update = session_update(self.cfg, prompt)
        self.sent_session = update["session"]
        self.interrupts = interrupts(self.sent_session)
        await self.conn.send_raw(json.dumps(update))
        while not self.updated.is_set():
            if self.fault is not None:
                raise self.fault
            await asyncio.sleep(0.01)
        if self.fault is not None:
            raise self.fault
        self.owed = None

    async def _connect_with_retries(self) -> None:
        from openai import AsyncOpenAI

        policy = RetryPolicy(max_retries=self.cfg.connect_retries, backoff_base_s=self.cfg.retry_backoff_s)
        rng = random.Random()
        attempts = policy.max_retries + 1
        for attempt in range(attempts):
            client = AsyncOpenAI(api_key=self.cfg.api_key(), websocket_base_url=self.cfg.base_url, max_retries=0)
            try:
                async with asyncio.timeout(self.cfg.connect_timeout_s):
                    self.conn = await client.realtime.connect(model=self.cfg.model, extra_query=self.cfg.query()).enter()
                return
            except Exception as exc:  # noqa: BLE001 - classified: a code, retried or not
                code, retryable, after, message = classify_connect_error(exc)
                message = redact(message)
                if not retryable or attempt + 1 == attempts:
                    tail = f" (after {attempt + 1} attempts)" if attempt else ""
                    raise RemoteFault(code, f"{self.cfg.url()}: {message}{tail}") from None
                delay = min(after, 60.0) if after is not None else policy.backoff(attempt, rng)
                log.warning("realtime %s: connect attempt %d/%d failed (%s: %s); retrying in %.1f s",
                            self.cfg.model_id, attempt + 1, attempts, code, message, delay)
                self.retries.append({"attempt": attempt + 1, "code": code, "reason": message, "delay_s": round(delay, 3)})
                await asyncio.sleep(delay)

    # ---- sending --------------------------------------------------------------------------
    def queue_append(self, n: int, pcm: bytes) -> None:
        self.sends.put_nowait((n, pcm))

    async def _send_loop(self) -> None:
        bound = self.cfg.max_send_lateness_ms / 1000.0
        rate = self.cfg.in_rate
        try:
            while True:
                n, pcm = await self.sends.get()
                msg = json.dumps({"type": "input_audio_buffer.append", "audio": base64.b64encode(pcm).decode("ascii")})
                await self.conn.send_raw(msg)
                late = self.timing.append_sent(n, self.timing.now(), len(pcm) / 2 / rate)
                if late > bound:
                    self._fail(ErrorCode.LATE, f"the append of input frame {n} left {late * 1000:.1f} ms after its "
                                               f"deadline; the stated bound is {self.cfg.max_send_lateness_ms:g} ms "
                                               "(launch.realtime.max_send_lateness_ms): the model heard this session late")
                    return
        except Exception as exc:  # noqa: BLE001 - a send on a dead connection
            self._closed(exc)

    async def send_event(self, event: dict) -> None:
        await self.conn.send_raw(json.dumps(event))

    # ---- receiving ------------------------------------------------------------------------
    async def _receive(self) -> None:
        try:
            while True:
                data = await self.conn.recv_bytes()
                t = self.timing.now()
                self.last_event = t
                self._handle(self._parse(data), t)
        except RemoteFault as fault:
            self._fail(fault.code, fault.message)
        except Exception as exc:  # noqa: BLE001 - the connection went away
            self._closed(exc)

    def _parse(self, data: bytes | str) -> dict:
        try:
            event = json.loads(data)
        except (ValueError, UnicodeDecodeError):
            raise RemoteFault(ErrorCode.REMOTE_BAD_EVENT, f"server sent a message that is not JSON: {data[:60]!r}") from None
        if not isinstance(event, dict) or not isinstance(event.get("type"), str) or not event["type"]:
            raise RemoteFault(ErrorCode.REMOTE_BAD_EVENT, f"server event without a string 'type': {str(event)[:120]}")
        return event

    def _handle(self, event: dict, t: float) -> None:
        kind = event["type"]
        if kind in AUDIO_DELTAS:
            self._audio(event, t)
            return
        if kind.endswith(".delta"):
            return  # transcript/text deltas: the .done event carries the whole text
        kept: dict[str, Any] = {"event": kind, "arrival_ms": round(self.timing.stream_time(t) * 1000, 1)}
        kept.update({k: event[k] for k in KEPT_FIELDS if k in event})
        resp = _map(event.get("response"))
        if kind == "session.updated":
            self._session_updated(event, kept)
        elif kind in ("input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped"):
            pos = event.get("audio_start_ms" if kind.endswith("started") else "audio_end_ms")
            if not isinstance(pos, (int, float)) or isinstance(pos, bool):
                raise RemoteFault(ErrorCode.REMOTE_BAD_EVENT, f"{kind} without a numeric audio position: {str(event)[:160]}")
            kept["clock_offset_ms"] = round(self.timing.server_position(t, float(pos)) * 1000, 1)
            if kind.endswith("started") and self.interrupts:
                kept["dropped_samples"] = self._barge_in()
        elif kind == "response.created":
            self.owed = "the rest of a response after response.created"
        elif kind in AUDIO_DONE:
            self.sink.finished(self._rid(event))
        elif kind == "output_audio_buffer.cleared":
            kept["dropped_samples"] = self.sink.cancelled(self._rid(event))
        elif kind == "response.done":
            self.owed = None
            self.timing.response_ended()
            rid = str(resp.get("id") or event.get("response_id") or "")
            kept["response"] = {k: resp[k] for k in ("id", "status", "status_details") if k in resp}
            if resp.get("status") == "cancelled":
                kept["dropped_samples"] = self.sink.cancelled(rid)  # the server stopped it: so does the listener
            else:
                self.sink.finished(rid)
            if isinstance(resp.get("usage"), dict):
                usage = {k: resp["usage"][k] for k in USAGE_FIELDS if k in resp["usage"]}
                self.usage.append(usage)
                kept["usage"] = usage
        elif kind == "error":
            err = event.get("error") if isinstance(event.get("error"), dict) else {"message": str(event.get("error", ""))}
            kept["error"] = {k: redact(str(err[k])) for k in ("type", "code", "message", "param", "event_id") if k in err}
            self.errors += 1
            self.sink.event(kept)
            self._remote_error(err)
            return
        self.sink.event(kept)

    @staticmethod
    def _rid(event: dict) -> str:
        return str(event.get("response_id") or event.get("item_id") or "")

    def _session_updated(self, event: dict, kept: dict) -> None:
        """The server's session: its turn detection decides interruptions, its rates must be ours."""
        session = _map(event.get("session"))
        audio = _map(session.get("audio"))
        block = _map(audio.get("input"))
        if "turn_detection" in block or "turn_detection" in session:  # the server says what it does
            self.interrupts = interrupts(session)
        kept["interrupts"] = self.interrupts
        rates = reported_rates(session)
        kept["rates"] = rates
        for direction, ours in (("input", self.cfg.in_rate), ("output", self.cfg.out_rate)):
            theirs = rates.get(direction)
            if isinstance(theirs, int) and theirs != ours:
                self._fail(ErrorCode.REMOTE_ERROR,
                           f"the server's session reads {direction} audio at {theirs} Hz, the spec's is {ours} Hz "
                           f"(audio.{'in' if direction == 'input' else 'out'}_rate): refused rather than "
                           f"{'sent' if direction == 'input' else 'recorded'} at the wrong rate")
        self.updated.set()

    def _audio(self, event: dict, t: float) -> None:
        delta = event.get("delta")
        if not isinstance(delta, str):
            raise RemoteFault(ErrorCode.REMOTE_BAD_EVENT, f"{event['type']} without a base64 'delta' string")
        try:
            pcm = base64.b64decode(delta, validate=True)
        except (binascii.Error, ValueError):
            raise RemoteFault(ErrorCode.REMOTE_BAD_EVENT, f"{event['type']}: 'delta' is not base64 ({delta[:40]!r})") from None
        if len(pcm) % 2:
            raise RemoteFault(ErrorCode.REMOTE_BAD_EVENT, f"{event['type']}: {len(pcm)} bytes is not whole 16-bit samples")
        rid = self._rid(event)
        if isinstance(event.get("item_id"), str):
            self.reply_items.setdefault(rid, event["item_id"])
        if self.sink.audio(rid, pcm):
            self.timing.delta_arrived(t, len(pcm) / 2 / self.cfg.out_rate)

    def _barge_in(self) -> int:
        """The user spoke over the model and the session interrupts: a client stops playing, tells the
        server what was heard (conversation.item.truncate); later deltas of that reply are dropped."""
        dropped, rid, played = self.sink.cut()
        item = self.reply_items.get(rid or "")
        if item is not None and dropped:
            played_ms = played * 1000 // self.cfg.out_rate
            asyncio.get_running_loop().create_task(self._truncate(item, played_ms))
        return dropped

    async def _truncate(self, item_id: str, played_ms: int) -> None:
        try:
            await self.send_event({"type": "conversation.item.truncate", "item_id": item_id, "content_index": 0,
                                   "audio_end_ms": played_ms})
        except Exception as exc:  # noqa: BLE001
            self._closed(exc)

    def _remote_error(self, err: dict) -> None:
        """Errors that end the session: any refusal of the session's settings (before session.updated),
        a refused key, a rate limit, the server's own failure.

        Others mid-session (a request the server could not honour, e.g. truncating an item it
        already finished) are kept in events.jsonl and counted, not fatal: the model still
        hears and speaks.
        """
        code, etype = str(err.get("code", "") or ""), str(err.get("type", "") or "")
        message = str(err.get("message", "")) or "(no message)"
        if code in AUTH_CODES or etype in AUTH_CODES:
            self._fail(ErrorCode.AUTH, f"server error {code or etype}: {message}")
        elif code in RATE_CODES or etype in RATE_CODES:
            self._fail(ErrorCode.RATE_LIMITED, f"server error {code or etype}: {message}")
        elif not self.updated.is_set():
            self._fail(ErrorCode.REMOTE_ERROR, f"the server refused the session's settings (session.update): "
                                               f"error {code or etype or '?'}: {message}")
        elif etype in ("server_error", "internal_error") or code in ("server_error", "internal_error"):
            self._fail(ErrorCode.REMOTE_ERROR, f"server error {code or etype}: {message}")

    async def _watch(self) -> None:
        """REMOTE_STALL: the server owes us something and has said nothing for stall_timeout_s."""
        limit = self.cfg.stall_timeout_s
        while self.fault is None:
            await asyncio.sleep(min(0.25, limit / 4))
            quiet = self.timing.now() - self.last_event
            if self.owed is not None and quiet > limit:
                self._fail(ErrorCode.REMOTE_STALL, f"server silent for {quiet:.1f} s while it owed {self.owed} "
                                                   f"(launch.realtime.stall_timeout_s = {limit:g})")

    # ---- faults and closing ------------------------------------------------------------------
    def _fail(self, code: str, message: str) -> None:
        if self.fault is None:
            self.fault = RemoteFault(code, message)
            log.warning("realtime %s: %s %s", self.cfg.model_id, code, self.fault.message)

    def _closed(self, exc: BaseException) -> None:
        from websockets.exceptions import ConnectionClosed

        if isinstance(exc, ConnectionClosed):
            rcvd = exc.rcvd
            how = f"close code {rcvd.code}{': ' + rcvd.reason if rcvd.reason else ''}" if rcvd else "no close frame"
            self._fail(ErrorCode.REMOTE_CLOSED, f"server closed the session mid-stream ({how})")
        else:
            self._fail(ErrorCode.REMOTE_CLOSED, f"connection lost: {type(exc).__name__}: {exc}")

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        if self.conn is not None:
            try:
                async with asyncio.timeout(2.0):
                    await self.conn.close()
            except Exception:  # noqa: BLE001 - closing a dead connection
                pass
            self.conn = None


__all__ = ["RemoteFault", "RemoteSession", "Sink", "classify_connect_error", "deep_merge", "interrupts",
           "reported_rates", "session_update"]
