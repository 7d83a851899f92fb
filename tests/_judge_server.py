"""A small OpenAI- and Anthropic-shaped HTTP server on 127.0.0.1 for judge tests.

The tests drive the real `openai` and `anthropic` clients against it (no mocks): each
request pops the next scripted action, so a test can play a 429 with Retry-After, a 500,
a stall longer than the client's timeout, or a malformed body, then a normal answer.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Action:
    kind: str  # "answer" | "status" | "stall" | "raw"
    text: str = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0


def answer(text: str) -> Action:
    return Action("answer", text=text)


def status(code: int, headers: dict[str, str] | None = None) -> Action:
    return Action("status", status=code, headers=headers or {})


def stall(seconds: float) -> Action:
    return Action("stall", seconds=seconds)


def echo_key(code: int = 401) -> Action:
    """An error whose body repeats the credential it received (some real APIs do)."""
    return Action("echo_key", status=code)


def raw(body: str) -> Action:
    return Action("raw", text=body)


class FakeLLMServer:
    def __init__(self, default_text: str = '{"verdict": "correct", "reason": "default"}') -> None:
        self.actions: deque[Action] = deque()
        self.requests: list[dict[str, Any]] = []
        self.default_text = default_text
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep pytest output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server naming
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                with server._lock:
                    server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                    action = server.actions.popleft() if server.actions else answer(server.default_text)
                try:
                    server._respond(self, action, body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def start(self) -> "FakeLLMServer":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def script(self, *actions: Action) -> None:
        self.actions.extend(actions)

    def _respond(self, handler: BaseHTTPRequestHandler, action: Action, body: dict[str, Any]) -> None:
        if action.kind == "stall":
            time.sleep(action.seconds)
            action = answer(self.default_text)
        if action.kind == "echo_key":
            sent = handler.headers.get("authorization") or handler.headers.get("x-api-key") or ""
            payload = json.dumps({"error": {"type": "error", "message": f"invalid key {sent}"}}).encode()
            self._send(handler, action.status, payload, {})
        elif action.kind == "status":
            payload = json.dumps({"error": {"type": "error", "message": f"scripted {action.status}"}}).encode()
            self._send(handler, action.status, payload, action.headers)
        elif action.kind == "raw":
            self._send(handler, 200, action.text.encode(), {})
        else:
            self._send(handler, 200, json.dumps(self._shape(handler.path, body, action.text)).encode(), {})

    @staticmethod
    def _shape(path: str, body: dict[str, Any], text: str) -> dict[str, Any]:
        model = body.get("model", "unknown")
        if path.endswith("/messages"):
            return {"id": "msg_test", "type": "message", "role": "assistant", "model": model,
                    "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                    "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}
        return {"id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, code: int, payload: bytes, headers: dict[str, str]) -> None:
        handler.send_response(code)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(payload)))
        for k, v in headers.items():
            handler.send_header(k, v)
        handler.end_headers()
        handler.wfile.write(payload)
