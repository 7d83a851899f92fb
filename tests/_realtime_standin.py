"""A STAND-IN for a Realtime-API server (OpenAI's GA API, vLLM-Omni's duplex endpoint): never a model, never a result.

It speaks the Realtime event protocol over a real WebSocket on 127.0.0.1 so the bridge
(duplexeval/realtime/) can be tested end to end on a machine with no key and no internet.
Every event it sends is first checked against the openai SDK's own typed server events
(tests/_realtime_sdk.py); a violation is kept in `invalid` (tests assert it stays empty),
so what the bridge is tested against is what the SDK says a server sends.

The event sequences follow the real servers:

- handshake: Bearer key (401 on a wrong one, 429 when told to); OpenAI at
  /v1/realtime?model=; vLLM-Omni's full-duplex session at /v1/realtime?duplex=1 or
  /v1/duplex (its plain /v1/realtime is turn-based: it answers only after a client
  commit, which the bridge never sends, so the stand-in stays silent there, as the real
  server does);
- session.created, then session.update -> session.updated (the session as the server
  runs it, audio formats with their rates), or `error` when it refuses the settings
  (mode `reject_session`, or vLLM-Omni's MiniCPM-o preset without `ref_audio`:
  `ref_audio_required`);
- a crude energy VAD: input_audio_buffer.speech_started / speech_stopped with audio
  positions, then input_audio_buffer.committed, conversation.item.added, response.created,
  rate_limits.updated, response.output_item.added, response.content_part.added, the reply
  as response.output_audio.delta (a tone, or flite's speech with `reply_text`; faster than
  real time, as the API sends it), response.output_audio.done, response.content_part.done,
  response.output_item.done, response.done with `usage` (audio tokens: 10 per second
  heard, 20 per second said, as OpenAI counts them);
- user speech over a reply: with OpenAI's server VAD (interrupt_response true) the server
  cancels it (response.done, status cancelled); vLLM-Omni's duplex server cancels it too
  (its audio.cancelled, sent as response.done cancelled); conversation.item.truncate is
  answered with conversation.item.truncated.

Fault modes (`mode`): http429, http429_once, rate_event, server_error, echo_key, stall
(response.created, then nothing), close, malformed, bad_audio, no_update,
reject_session, gap (a 0.5 s pause inside a reply), burst (the whole reply in one
delta), late_after_cancel (deltas of a cancelled reply keep coming), rate_mismatch (the
session reports another input rate than asked). Nothing it says is a model's behaviour:
the specs it serves keep their status (needs-key / needs-server).
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import threading
from dataclasses import dataclass, field
from http import HTTPStatus
from urllib.parse import parse_qs, urlsplit

import numpy as np
from _realtime_sdk import validate_server_event
from websockets.asyncio.server import serve
from websockets.datastructures import Headers
from websockets.http11 import Response

REPLY_S = 0.6          # the stand-in's answer: a 0.6 s tone
SPEECH_RMS = 0.02      # its "VAD": 20 ms windows louder than this are speech
SILENCE_TO_STOP_S = 0.3
IN_TOKENS_PER_S, OUT_TOKENS_PER_S = 10, 20


@dataclass
class StandInRealtimeServer:
    key: str = "sk-test-standin-0123456789abcdef"
    rate: int = 24000               # the rate the stand-in's own audio is made at (and its VAD assumes)
    mode: str = "ok"
    dialect: str = "openai"         # openai | vllm-omni
    preset: str | None = None       # vllm-omni: "minicpm-o" refuses a session without ref_audio
    fault_after_appends: int = 10
    handshakes: int = 0
    appends: int = 0
    received: list[dict] = field(default_factory=list)
    sent: list[dict] = field(default_factory=list)      # every event sent (audio deltas without their audio)
    invalid: list[str] = field(default_factory=list)    # SDK validation failures of events sent: must stay empty
    paths: list[str] = field(default_factory=list)
    port: int = 0
    reply_text: str | None = None  # None: the answer is a 0.6 s tone; text: flite says it (Silero hears speech)
    pace_s: float = 0.02           # between 200 ms deltas: faster than real time, as the API sends them (0.2: real time)

    # ---- lifecycle ------------------------------------------------------------------------------
    def start(self) -> "StandInRealtimeServer":
        ready = threading.Event()
        self.loop = asyncio.new_event_loop()
        self.ids = itertools.count(1)

        async def main() -> None:
            self.stop_future = self.loop.create_future()
            async with serve(self.handler, "127.0.0.1", 0, process_request=self.check_request,
                             max_size=16 * 1024 * 1024) as server:
                self.port = server.sockets[0].getsockname()[1]
                ready.set()
                await self.stop_future

        self.thread = threading.Thread(target=lambda: self.loop.run_until_complete(main()), daemon=True)
        self.thread.start()
        ready.wait(10)
        return self

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(lambda: self.stop_future.done() or self.stop_future.set_result(None))
        self.thread.join(10)

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/v1"

    # ---- handshake --------------------------------------------------------------------------------
    def check_request(self, connection, request):
        self.handshakes += 1
        self.paths.append(request.path)
        if not request.path.startswith(("/v1/realtime", "/v1/duplex")):
            return connection.respond(HTTPStatus.NOT_FOUND, "stand-in: no such path\n")
        if request.headers.get("Authorization") != f"Bearer {self.key}":
            return connection.respond(HTTPStatus.UNAUTHORIZED, "stand-in: invalid_api_key\n")
        if self.mode == "http429" or (self.mode == "http429_once" and self.handshakes == 1):
            return Response(429, "Too Many Requests", Headers({"Retry-After": "0", "Content-Length": "0"}), b"")
        return None

    def duplex_path(self, path: str) -> bool:
        url = urlsplit(path)
        return url.path == "/v1/duplex" or parse_qs(url.query).get("duplex") == ["1"]

    # ---- events -----------------------------------------------------------------------------------
    def eid(self, prefix: str = "event") -> str:
        return f"{prefix}_{next(self.ids):06d}"

    async def send(self, ws, event: dict) -> None:
        event = {"event_id": self.eid(), **event}
        problems = validate_server_event(event, self.dialect)
        if problems:
            self.invalid.extend(problems)
        self.sent.append({k: (v if k != "delta" else len(v)) for k, v in event.items()})
        await ws.send(json.dumps(event))

    def session_object(self, asked: dict) -> dict:
        """The session as the server runs it: GA shape, the formats with the rates it really uses."""
        audio = asked.get("audio") if isinstance(asked.get("audio"), dict) else {}
        inp = audio.get("input") if isinstance(audio.get("input"), dict) else {}
        out = audio.get("output") if isinstance(audio.get("output"), dict) else {}
        in_rate = (inp.get("format") or {}).get("rate", 24000)
        out_rate = (out.get("format") or {}).get("rate", 24000)
        if self.mode == "rate_mismatch":
            in_rate = 16000 if in_rate != 16000 else 24000
        turn = inp["turn_detection"] if "turn_detection" in inp else {"type": "server_vad", "interrupt_response": True}
        session = {"type": "realtime", "object": "realtime.session", "id": "sess_standin", "model": "stand-in",
                   "output_modalities": ["audio"],
                   "audio": {"input": {"format": {"type": "audio/pcm", "rate": in_rate}, "turn_detection": turn},
                             "output": {"format": {"type": "audio/pcm", "rate": out_rate},
                                        **({"voice": out["voice"]} if "voice" in out else {})}}}
        if asked.get("instructions"):
            session["instructions"] = asked["instructions"]
        return session

    def refusal(self, asked: dict) -> tuple[str, str] | None:
        if self.mode == "reject_session":
            return "unsupported_audio_format", "stand-in: this session's audio format is not supported"
        if self.dialect == "vllm-omni" and self.preset == "minicpm-o" and not asked.get("ref_audio"):
            return "ref_audio_required", "MiniCPM-o native duplex audio output requires ref_audio"
        return None

    # ---- a session -----------------------------------------------------------------------------------
    async def handler(self, ws) -> None:
        duplex = self.duplex_path(ws.request.path)
        turn_based_only = self.dialect == "vllm-omni" and not duplex  # waits for a commit that never comes
        heard = 0            # samples received
        speech_from = None   # sample where speech began
        quiet = 0            # samples of silence since the last loud window
        responding: asyncio.Task | None = None
        interrupt = True
        state: dict = {}
        await self.send(ws, {"type": "session.created", "session": self.session_object({})})
        try:
            async for text in ws:
                event = json.loads(text)
                self.received.append({k: v for k, v in event.items() if k != "audio"})
                kind = event["type"]
                if kind == "session.update":
                    asked = event.get("session", {})
                    refused = self.refusal(asked)
                    if refused:
                        await self.send(ws, {"type": "error", "error": {
                            "type": "invalid_request_error", "code": refused[0], "message": refused[1],
                            "event_id": event.get("event_id")}})
                    elif self.mode != "no_update":
                        session = self.session_object(asked)
                        turn = session["audio"]["input"]["turn_detection"]
                        interrupt = bool(turn is None or turn.get("interrupt_response", True))
                        await self.send(ws, {"type": "session.updated", "session": session})
                    continue
                if kind == "conversation.item.truncate":
                    await self.send(ws, {"type": "conversation.item.truncated", "item_id": event["item_id"],
                                         "content_index": event.get("content_index", 0),
                                         "audio_end_ms": event["audio_end_ms"]})
                    continue
                if kind != "input_audio_buffer.append":
                    continue
                self.appends += 1
                if self.appends == self.fault_after_appends and await self.fault(ws):
                    return
                if turn_based_only:
                    continue
                pcm = np.frombuffer(base64.b64decode(event["audio"]), dtype="<i2").astype(np.float32) / 32768.0
                for chunk in np.array_split(pcm, max(1, len(pcm) // (self.rate // 50))):
                    loud = float(np.sqrt(np.mean(chunk ** 2))) > SPEECH_RMS if len(chunk) else False
                    if loud and speech_from is None:
                        speech_from, quiet = heard, 0
                        await self.send(ws, {"type": "input_audio_buffer.speech_started",
                                             "audio_start_ms": heard * 1000 // self.rate, "item_id": f"item_in{heard}"})
                        if responding is not None and not responding.done() and interrupt:
                            responding.cancel()  # barge-in: the server stops its answer
                    elif speech_from is not None:
                        quiet = 0 if loud else quiet + len(chunk)
                        if quiet >= SILENCE_TO_STOP_S * self.rate:
                            await self.send(ws, {"type": "input_audio_buffer.speech_stopped",
                                                 "audio_end_ms": (heard + len(chunk)) * 1000 // self.rate,
                                                 "item_id": f"item_in{speech_from}"})
                            speech_from = None
                            responding = asyncio.create_task(self.respond(ws, heard, state))
                    heard += len(chunk)
        except Exception:  # noqa: BLE001 - the bridge went away
            pass

    async def respond(self, ws, at: int, state: dict) -> None:
        rid, item = f"resp_{at}", f"item_out{at}"
        await self.send(ws, {"type": "input_audio_buffer.committed", "item_id": f"item_in{at}",
                             "previous_item_id": state.get("last")})
        await self.send(ws, {"type": "conversation.item.added", "previous_item_id": state.get("last"),
                             "item": {"id": f"item_in{at}", "type": "message", "role": "user", "status": "completed",
                                      "content": [{"type": "input_audio", "transcript": None}]}})
        state["last"] = item
        await self.send(ws, {"type": "response.created", "response": {
            "id": rid, "object": "realtime.response", "status": "in_progress", "output": []}})
        await self.send(ws, {"type": "rate_limits.updated",
                             "rate_limits": [{"name": "tokens", "limit": 1000, "remaining": 990, "reset_seconds": 1.0}]})
        if self.mode == "stall":
            return  # response.created, then nothing: the bridge must call it a stall
        msg = {"id": item, "type": "message", "role": "assistant", "status": "in_progress", "content": []}
        await self.send(ws, {"type": "response.output_item.added", "response_id": rid, "output_index": 0, "item": msg})
        await self.send(ws, {"type": "response.content_part.added", "response_id": rid, "item_id": item,
                             "output_index": 0, "content_index": 0, "part": {"type": "audio", "transcript": ""}})
        pcm = self.reply_pcm()
        step = self.rate // 5 * 2  # 200 ms deltas
        if self.mode == "burst":
            step = len(pcm)
        sent = 0
        status = "completed"
        try:
            for k in range(0, len(pcm), step):
                await self.delta(ws, rid, item, pcm[k: k + step])
                sent = k + step
                await asyncio.sleep(0.5 if (self.mode == "gap" and k == 0) else self.pace_s)
        except asyncio.CancelledError:
            status = "cancelled"
        if status == "completed":
            await self.send(ws, {"type": "response.output_audio.done", "response_id": rid, "item_id": item,
                                 "output_index": 0, "content_index": 0})
            await self.send(ws, {"type": "response.content_part.done", "response_id": rid, "item_id": item,
                                 "output_index": 0, "content_index": 0, "part": {"type": "audio", "transcript": ""}})
        await self.send(ws, {"type": "response.output_item.done", "response_id": rid, "output_index": 0,
                             "item": {**msg, "status": "completed" if status == "completed" else "incomplete"}})
        said_s = min(sent, len(pcm)) / 2 / self.rate
        usage = {"total_tokens": 0, "input_tokens": int(at / self.rate * IN_TOKENS_PER_S) + 20,
                 "output_tokens": int(said_s * OUT_TOKENS_PER_S) + 5,
                 "input_token_details": {"audio_tokens": int(at / self.rate * IN_TOKENS_PER_S), "text_tokens": 20,
                                         "cached_tokens": 0, "cached_tokens_details": {"audio_tokens": 0, "text_tokens": 0}},
                 "output_token_details": {"audio_tokens": int(said_s * OUT_TOKENS_PER_S), "text_tokens": 5}}
        usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
        details = {"type": "cancelled", "reason": "turn_detected"} if status == "cancelled" else None
        await self.send(ws, {"type": "response.done", "response": {
            "id": rid, "object": "realtime.response", "status": status, "output": [],
            **({"status_details": details} if details else {}), "usage": usage}})
        if status == "cancelled" and self.mode == "late_after_cancel":
            for k in range(sent, min(len(pcm), sent + 2 * step), step):  # in flight when the server cancelled
                await self.delta(ws, rid, item, pcm[k: k + step])

    async def delta(self, ws, rid: str, item: str, pcm: bytes) -> None:
        await self.send(ws, {"type": "response.output_audio.delta", "response_id": rid, "item_id": item,
                             "output_index": 0, "content_index": 0, "delta": base64.b64encode(pcm).decode()})

    def reply_pcm(self) -> bytes:
        if self.reply_text:
            from duplexeval.tts import synthesize

            audio = synthesize(self.reply_text, "slt", self.rate)  # cached on disk after the first reply
            return (np.clip(audio, -1, 1) * 32767).astype("<i2").tobytes()
        t = np.arange(int(REPLY_S * self.rate)) / self.rate
        return (0.3 * np.sin(2 * np.pi * 440 * t) * 32767).astype("<i2").tobytes()

    async def fault(self, ws) -> bool:
        """The fault this stand-in was told to make, after `fault_after_appends` appends; True: session over."""
        if self.mode == "rate_event":
            await self.send(ws, {"type": "error", "error": {"type": "rate_limit_error", "code": "rate_limit_exceeded",
                                                            "message": "stand-in: tokens per minute exceeded"}})
        elif self.mode == "echo_key":  # a server that quotes the credential it was given
            await self.send(ws, {"type": "error", "error": {"type": "server_error",
                                                            "message": f"stand-in: cannot serve key {self.key}"}})
        elif self.mode == "server_error":
            await self.send(ws, {"type": "error", "error": {"type": "server_error", "message": "stand-in: internal failure"}})
        elif self.mode == "close":
            await ws.close(1011, "stand-in closes mid-session")
            return True
        elif self.mode == "malformed":
            await ws.send("{not json")
        elif self.mode == "bad_audio":  # deliberately invalid: not through send(), which checks events
            await ws.send(json.dumps({"type": "response.output_audio.delta", "event_id": self.eid(), "response_id": "r",
                                      "item_id": "x", "output_index": 0, "content_index": 0, "delta": "@@not base64@@"}))
        return False


__all__ = ["StandInRealtimeServer"]


TONE_RATE = 16000


def speech_then_silence(speech_s: float = 0.6, silence_s: float = 1.6, rate: int = TONE_RATE) -> np.ndarray:
    """A loud tone (the stand-in's VAD hears speech), then silence long enough for its answer."""
    t = np.arange(int(speech_s * rate)) / rate
    return np.concatenate([(0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32),
                           np.zeros(int(silence_s * rate), dtype=np.float32)])


def running_standin(monkeypatch, key: str, **kwargs):
    """Body of a test module's `standin` fixture: the server with `key` as OPENAI_API_KEY, and at
    teardown the check that every event it sent is one the openai SDK's types accept."""
    server = StandInRealtimeServer(key=key, **kwargs).start()
    monkeypatch.setenv("OPENAI_API_KEY", key)
    yield server
    server.stop()
    assert server.invalid == []
