"""The sandbox's one way out: an HTTP proxy, outside the sandbox, that reaches only the API's origin.

Why: inside bubblewrap the server has no network but its own loopback, yet an environment whose
APIs are HTTP calls (the HTTP clone, a live API: any environment given a ``base_url``) must reach
that one service. So the server creates a listening socket on its own loopback and hands it out
over a socket pair (SCM_RIGHTS); this forwarder, in the caller's process and so on the host's
network, accepts on it. Inside, HTTP_PROXY and HTTPS_PROXY name that loopback address, so the
environment's httpx client goes through it with no change to its code: ``CONNECT host:port``
for https (TLS stays end to end), an absolute URL for http. Any other host or port is refused
(403); nothing else crosses.

For plain http the request line is rewritten to the origin form and the connection closed after
one response (``Connection: close``, in the request and in the answer's head), so each request
is checked and no byte needs parsing past the two heads. Connections are bounded in number and
live no longer than the sandbox child that opened them.
"""

from __future__ import annotations

import logging
import select
import socket
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

MAX_HEAD_BYTES = 64 * 1024
MAX_CONNECTIONS = 32
HEAD_TIMEOUT_S = 10.0
CONNECT_TIMEOUT_S = 10.0
CHUNK_BYTES = 64 * 1024
_HOP_HEADERS = (b"connection", b"proxy-connection", b"keep-alive", b"proxy-authorization")


@dataclass(frozen=True)
class Origin:
    """The one service the sandbox may reach: scheme, host (lower case) and port."""

    scheme: str
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"


def api_origin(env_kwargs: Mapping[str, Any]) -> Origin | None:
    """The origin of the environment's ``base_url`` (the HTTP clone's and a live API's option),
    or None for an environment that needs no network."""
    base_url = env_kwargs.get("base_url")
    if not isinstance(base_url, str) or not base_url:
        return None
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
    return Origin(parts.scheme, parts.hostname.lower(), parts.port or (443 if parts.scheme == "https" else 80))


def _target(method: bytes, target: bytes) -> tuple[str, int, bytes] | None:
    """(host, port, origin-form path) a proxy request asks for; None if it is not proxy-shaped."""
    text = target.decode("ascii", "replace")
    if method == b"CONNECT":
        parts = urlsplit("//" + text)
        return (parts.hostname or "", parts.port or 0, b"") if parts.port else None
    parts = urlsplit(text)
    if parts.scheme != "http" or not parts.hostname:
        return None
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.hostname, parts.port or 80, path.encode("ascii", "replace")


def _reply(conn: socket.socket, status: str, message: str) -> None:
    body = message.encode()
    head = f"HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    try:
        conn.sendall(head.encode() + body)
    except OSError:
        pass


def _read_head(conn: socket.socket) -> tuple[bytes, bytes] | None:
    """(request head without its blank line, bytes read after it), or None if none came whole."""
    conn.settimeout(HEAD_TIMEOUT_S)
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > MAX_HEAD_BYTES:
            return None
        chunk = conn.recv(CHUNK_BYTES)
        if not chunk:
            return None
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _closing_head(first_line: bytes, headers: list[bytes]) -> bytes:
    """A message head with the hop-by-hop headers dropped and ``Connection: close`` added."""
    kept = [h for h in headers if h.split(b":", 1)[0].strip().lower() not in _HOP_HEADERS]
    return b"\r\n".join([first_line, *kept, b"Connection: close", b"", b""])


def _relay(a: socket.socket, b: socket.socket, close_b_answer: bool = False) -> None:
    """Copy bytes both ways until either side closes; with `close_b_answer`, the head of what `b`
    sends (an HTTP answer) is passed on with ``Connection: close`` in it."""
    a.setblocking(True)
    b.setblocking(True)
    peers = {a: b, b: a}
    held = b"" if close_b_answer else None  # b's answer head, until it is whole
    while True:
        ready, _, _ = select.select(list(peers), [], [])
        for sock in ready:
            data = sock.recv(CHUNK_BYTES)
            if not data:
                return
            if sock is b and held is not None:
                held += data
                if b"\r\n\r\n" not in held:
                    if len(held) > MAX_HEAD_BYTES:
                        return
                    continue
                head, _, data = held.partition(b"\r\n\r\n")
                status_line, *headers = head.split(b"\r\n")
                data, held = _closing_head(status_line, headers) + data, None
            peers[sock].sendall(data)


class ApiForwarder:
    """Accepts the sandbox's proxied connections on `listener` and connects only to `origin`."""

    def __init__(self, listener: socket.socket, origin: Origin) -> None:
        self.origin = origin
        self._listener = listener
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._thread = threading.Thread(target=self._accept_loop, name=f"sandbox-forwarder-{origin}", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop accepting (connections in flight end with the sandbox child that made them)."""
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() below
        except OSError:
            pass
        self._listener.close()
        self._thread.join(timeout=5.0)

    def _accept_loop(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:  # closed
                return
            if not self._slots.acquire(blocking=False):
                _reply(conn, "503 Service Unavailable", "too many connections from the sandbox")
                conn.close()
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            with conn:
                self._forward(conn)
        except OSError as exc:
            log.debug("sandbox forwarder connection ended: %s", exc)
        finally:
            self._slots.release()

    def _forward(self, conn: socket.socket) -> None:
        """Check one proxied connection's first request and, if it is for the origin, pipe it."""
        received = _read_head(conn)
        if received is None:
            return _reply(conn, "400 Bad Request", "not an HTTP proxy request")
        head, rest = received
        request_line, *headers = head.split(b"\r\n")
        words = request_line.split(b" ")
        target = _target(words[0], words[1]) if len(words) == 3 else None
        if target is None:
            return _reply(conn, "400 Bad Request", "not an HTTP proxy request")
        host, port, path = target
        tunnel = words[0] == b"CONNECT"
        elsewhere = (host.lower(), port) != (self.origin.host, self.origin.port)
        if elsewhere or (not tunnel and self.origin.scheme != "http"):
            return _reply(conn, "403 Forbidden", f"the sandbox may only reach {self.origin}")
        try:
            upstream = socket.create_connection((self.origin.host, self.origin.port), timeout=CONNECT_TIMEOUT_S)
        except OSError as exc:
            return _reply(conn, "502 Bad Gateway", f"{self.origin} is unreachable: {exc}")
        with upstream:
            if tunnel:
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                if rest:
                    upstream.sendall(rest)
            else:
                first = b" ".join([words[0], path, words[2]])
                upstream.sendall(_closing_head(first, headers) + rest)
            # the answer's head says `close` too: a client that took the connection for kept-alive
            # would send its next request as this end closes, and get a reset
            _relay(conn, upstream, close_b_answer=not tunnel)
