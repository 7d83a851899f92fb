"""A STAND-IN for a Realtime-API server (OpenAI's, vLLM-Omni's): never a model, never a result.

It speaks the Realtime event protocol over a real WebSocket on 127.0.0.1 so the bridge
(duplexeval/realtime/) can be tested end to end on a machine with no key and no internet:
the handshake with its Bearer key (401 on a wrong one, 429 when told to), session.created /
session.update / session.updated, input_audio_buffer.append, a crude energy VAD giving
speech_started / speech_stopped with audio positions, then committed, response.created,
rate_limits.updated, a tone as output audio deltas (faster than real time, as the API
sends them), response.done; and on request the faults: an error event, a stall, a
mid-session close, a malformed event. Nothing it says is a model's behaviour: the specs
it serves keep their status (needs-key / needs-server).
"""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from dataclasses import dataclass, field
from http import HTTPStatus

import numpy as np
from websockets.asyncio.server import serve
from websockets.datastructures import Headers
from websockets.http11 import Response

REPLY_S = 0.6          # the stand-in's answer: a 0.6 s tone
SPEECH_RMS = 0.02      # its "VAD": 20 ms windows louder than this are speech
SILENCE_TO_STOP_S = 0.3


@dataclass
class StandInRealtimeServer:
    key: str = "sk-test-standin-0123456789abcdef"
    rate: int = 24000
    mode: str = "ok"  # ok | http429 | http429_once | rate_event | server_error | echo_key | stall | close | malformed
    #                   | bad_audio | no_update
    fault_after_appends: int = 10
    handshakes: int = 0
    appends: int = 0
    received: list[dict] = field(default_factory=list)
    port: int = 0
    reply_text: str | None = None  # None: the answer is a 0.6 s tone; text: flite says it (Silero hears speech)

    # ---- lifecycle ------------------------------------------------------------------------------
    def start(self) -> "StandInRealtimeServer":
        ready = threading.Event()
        self.loop = asyncio.new_event_loop()

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
        if not request.path.startswith("/v1/realtime"):
            return connection.respond(HTTPStatus.NOT_FOUND, "stand-in: no such path\n")
        if request.headers.get("Authorization") != f"Bearer {self.key}":
            return connection.respond(HTTPStatus.UNAUTHORIZED, "stand-in: invalid_api_key\n")
        if self.mode == "http429" or (self.mode == "http429_once" and self.handshakes == 1):
            return Response(429, "Too Many Requests", Headers({"Retry-After": "0", "Content-Length": "0"}), b"")
        return None

    # ---- a session -----------------------------------------------------------------------------------
    async def send(self, ws, event: dict) -> None:
        await ws.send(json.dumps(event))

    async def handler(self, ws) -> None:
        heard = 0            # samples received
        speech_from = None   # sample where speech began
        quiet = 0            # samples of silence since the last loud window
        responding: asyncio.Task | None = None
        await self.send(ws, {"type": "session.created", "session": {"model": "stand-in"}})
        try:
            async for text in ws:
                event = json.loads(text)
                self.received.append({k: v for k, v in event.items() if k != "audio"})
                kind = event["type"]
                if kind == "session.update":
                    if self.mode != "no_update":
                        await self.send(ws, {"type": "session.updated", "session": event["session"]})
                    continue
                if kind != "input_audio_buffer.append":
                    continue
                self.appends += 1
                if self.appends == self.fault_after_appends and await self.fault(ws):
                    return
                pcm = np.frombuffer(base64.b64decode(event["audio"]), dtype="<i2").astype(np.float32) / 32768.0
                for chunk in np.array_split(pcm, max(1, len(pcm) // (self.rate // 50))):
                    loud = float(np.sqrt(np.mean(chunk ** 2))) > SPEECH_RMS if len(chunk) else False
                    if loud and speech_from is None:
                        speech_from, quiet = heard, 0
                        await self.send(ws, {"type": "input_audio_buffer.speech_started",
                                             "audio_start_ms": heard * 1000 // self.rate, "item_id": f"in{heard}"})
                        if responding is not None and not responding.done():
                            responding.cancel()  # barge-in: the server stops its answer
                    elif speech_from is not None:
                        quiet = 0 if loud else quiet + len(chunk)
                        if quiet >= SILENCE_TO_STOP_S * self.rate:
                            await self.send(ws, {"type": "input_audio_buffer.speech_stopped",
                                                 "audio_end_ms": (heard + len(chunk)) * 1000 // self.rate})
                            speech_from = None
                            responding = asyncio.create_task(self.respond(ws, heard))
                    heard += len(chunk)
        except Exception:  # noqa: BLE001 - the bridge went away
            pass

    async def respond(self, ws, at: int) -> None:
        rid, item = f"resp{at}", f"item{at}"
        await self.send(ws, {"type": "input_audio_buffer.committed", "item_id": f"in{at}"})
        await self.send(ws, {"type": "response.created", "response": {"id": rid, "status": "in_progress"}})
        await self.send(ws, {"type": "rate_limits.updated",
                             "rate_limits": [{"name": "tokens", "limit": 1000, "remaining": 990, "reset_seconds": 1.0}]})
        if self.mode == "stall":
            return  # response.created, then nothing: the bridge must call it a stall
        pcm = self.reply_pcm()
        status = "completed"
        try:
            for k in range(0, len(pcm), self.rate // 5 * 2):  # 200 ms deltas, sent faster than real time
                await self.send(ws, {"type": "response.output_audio.delta", "response_id": rid, "item_id": item,
                                     "delta": base64.b64encode(pcm[k: k + self.rate // 5 * 2]).decode()})
                await asyncio.sleep(0.02)
        except asyncio.CancelledError:
            status = "cancelled"
        await self.send(ws, {"type": "response.done", "response": {"id": rid, "status": status}})

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
        elif self.mode == "bad_audio":
            await self.send(ws, {"type": "response.output_audio.delta", "item_id": "x", "delta": "@@not base64@@"})
        return False


__all__ = ["StandInRealtimeServer"]
