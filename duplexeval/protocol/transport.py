"""Where a protocol v1 server listens (a Unix socket by default, or a loopback TCP port), and
its command line (`run_server`)."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from typing import Callable, Sequence

from websockets.asyncio.server import serve, unix_serve

from duplexeval.protocol.session import _handler_for
from duplexeval.protocol.shim_api import MAX_MESSAGE_BYTES, DuplexServer


async def serve_forever(server: DuplexServer, socket_path: str | None = None,
                        host: str = "127.0.0.1", port: int | None = None) -> int:
    """Serves until SIGTERM/SIGINT; returns the signal. A Unix socket is made world-writable so a host user
    can connect to a socket created by root inside a container (docs/protocol.md, "Transport")."""
    handler = _handler_for(server)
    opts = dict(max_size=MAX_MESSAGE_BYTES, compression=None, ping_interval=None)
    stop = asyncio.get_running_loop().create_future()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, lambda s=sig: stop.done() or stop.set_result(int(s)))
    if socket_path:
        if os.path.exists(socket_path):
            os.unlink(socket_path)  # a stale socket from a killed run would make bind fail
        async with unix_serve(handler, socket_path, **opts):
            os.chmod(socket_path, 0o666)
            print(f"{server.model_name}: listening on unix:{socket_path}", file=sys.stderr, flush=True)
            return await stop
    async with serve(handler, host, port, **opts):
        print(f"{server.model_name}: listening on ws://{host}:{port}", file=sys.stderr, flush=True)
        return await stop


def run_server(factory: Callable[[argparse.Namespace], DuplexServer], argv: Sequence[str] | None = None,
               description: str = "", add_arguments: Callable[[argparse.ArgumentParser], None] | None = None) -> None:
    """Command-line entry of a server: `--socket PATH` (default transport) or `--port N` (TCP loopback)."""
    parser = argparse.ArgumentParser(description=description)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--socket", help="Unix domain socket path to listen on")
    where.add_argument("--port", type=int, help="TCP port on --host (loopback by default)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--max-sessions", type=int, default=1,
                        help="sessions served at once, stepped together (batched sessions; default 1)")
    parser.add_argument("--batch-wait-ms", type=float, default=None,
                        help="how long a frame waits for the other sessions' frames before its batch runs")
    if add_arguments:
        add_arguments(parser)
    args = parser.parse_args(argv)
    server = factory(args)
    try:
        server.set_max_sessions(args.max_sessions)
    except ValueError as exc:
        parser.error(str(exc))
    if args.batch_wait_ms is not None:
        if args.batch_wait_ms < 0:
            parser.error(f"--batch-wait-ms must be >= 0, got {args.batch_wait_ms:g}")
        server.batch_wait_s = args.batch_wait_ms / 1000.0
    stopped_by = asyncio.run(serve_forever(server, args.socket, args.host, args.port))
    # 128 + signal, as a shell reports it: the harness tells a server stopped from outside (an
    # item it must replay) from one that ended on its own (docs/reliability.md, "Signals").
    sys.exit(128 + stopped_by)
