"""Listening for HTTP, as `serve` and `mcp --http` do: the address an option gives, its socket, and a uvicorn server
that exits 0 after SIGTERM once the requests in flight are done."""

from __future__ import annotations

import signal
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from argo_doctor.errors import ConfigError


def parse_listen(text: str, option: str, default_host: str) -> tuple[str, int]:
    """`HOST:PORT`, `:PORT`, `PORT` or `[::1]:PORT` (HOST `default_host` when not given); ConfigError naming
    `option` otherwise. Port 0 asks the system for a free one."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "", text
    if not port.isdigit() or not 0 <= int(port) < 65536:
        raise ConfigError(f"{option} {text!r} is not HOST:PORT (e.g. 127.0.0.1:8080)")
    return host.strip("[]") or default_host, int(port)


def bind(host: str, port: int, option: str) -> socket.socket:
    """A TCP socket bound to the address; ConfigError, one line, when it cannot be."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"{option}: cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


class QuietServer(uvicorn.Server):
    """uvicorn's server, minus re-raising SIGTERM after a graceful shutdown: the command then exits 0."""

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        handled = (signal.SIGINT, signal.SIGTERM)
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
