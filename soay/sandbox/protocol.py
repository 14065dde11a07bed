"""What the caller, the sandbox server and its per-snippet children agree on.

Both pipes (caller <-> server, child -> server) carry the same frames: a 4-byte big-endian
length followed by that many bytes of ASCII JSON. JSON rather than pickle because everything
that crosses is JSON-compatible by contract (code, limits, results, call traces), and because
unpickling what a process that ran untrusted code wrote would hand that code a way out.
ASCII-only JSON (``ensure_ascii``) also round-trips lone surrogates that generated code may put
into strings. Frames go through raw file descriptors with ``select`` so that every read can
carry a deadline, which is how the server bounds a child and the caller bounds the server.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from dataclasses import asdict, dataclass
from typing import Any, Literal

ErrorType = Literal[
    "policy", "timeout", "memory", "recursion", "runtime", "output_too_large", "no_result", "crash"
]

_HEADER = struct.Struct(">I")
# Far above any legitimate frame (results and stdout are bounded by Limits.max_output_bytes);
# a larger length means the stream is corrupt, and trusting it would allocate gigabytes.
MAX_FRAME_BYTES = 256 * 1024 * 1024


class ProtocolError(Exception):
    """The peer closed the stream mid-frame or sent something that is not a frame."""


class FrameTimeout(Exception):
    """The deadline passed before a whole frame arrived."""


@dataclass(frozen=True)
class Limits:
    """Per-snippet resource limits, enforced inside the forked child and by the server.

    cpu_seconds: CPU time (user + system) before the snippet is interrupted.
    wall_seconds: elapsed time before it is interrupted (the server SIGKILLs it shortly after
        if it does not stop by itself, e.g. because it swallowed the interruption).
    memory_mb: address space the snippet may add on top of what the server already maps.
    max_output_bytes: bound on the serialised ``final_result`` and on captured print output.
    max_api_calls: bound on API calls per snippet, so a runaway loop cannot hammer the
        environment or grow the call trace without limit.
    os_isolation: the OS wall (soay/sandbox/isolation.py, seccomp.py): "auto" puts the server
        in bubblewrap namespaces where this machine allows it and warns where not, "bwrap"
        refuses to start without them, "off" turns the wall off (logged). Each snippet's process
        gets the seccomp filter unless "off". It travels with the limits because it is part of
        how a snippet is confined, and because the sandbox settings map onto Limits.
    """

    cpu_seconds: float = 2.0
    wall_seconds: float = 5.0
    memory_mb: int = 256
    max_output_bytes: int = 1_000_000
    max_api_calls: int = 1_000
    os_isolation: Literal["auto", "bwrap", "off"] = "auto"

    def __post_init__(self) -> None:
        for name in ("cpu_seconds", "wall_seconds", "memory_mb", "max_output_bytes"):
            if not getattr(self, name) > 0:
                raise ValueError(f"Limits.{name} must be positive, got {getattr(self, name)!r}")
        if self.max_api_calls < 0:
            raise ValueError(f"Limits.max_api_calls must be >= 0, got {self.max_api_calls!r}")
        if self.os_isolation not in ("auto", "bwrap", "off"):
            raise ValueError(f"Limits.os_isolation must be 'auto', 'bwrap' or 'off', got {self.os_isolation!r}")

    def to_dict(self) -> dict[str, Any]:
        """The limits as a JSON-compatible dict (how they travel to the server)."""
        return asdict(self)


def encode_frame(obj: Any) -> bytes:
    """Serialise one message into a length-prefixed frame."""
    body = json.dumps(obj, ensure_ascii=True, separators=(",", ":")).encode("ascii")
    return _HEADER.pack(len(body)) + body


def send_frame(fd: int, obj: Any) -> None:
    """Write one whole frame to a blocking file descriptor."""
    view = memoryview(encode_frame(obj))
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _read_exact(fd: int, size: int, deadline: float | None, at_boundary: bool) -> bytes | None:
    """Read exactly `size` bytes; None on a clean EOF before the first byte of a frame."""
    chunks: list[bytes] = []
    missing = size
    while missing:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise FrameTimeout
        chunk = os.read(fd, min(missing, 1 << 20))
        if not chunk:
            if at_boundary and missing == size:
                return None
            raise ProtocolError("stream closed in the middle of a frame")
        chunks.append(chunk)
        missing -= len(chunk)
    return b"".join(chunks)


def recv_frame(fd: int, deadline: float | None = None) -> Any | None:
    """Read one frame; None when the peer closed the stream cleanly between frames.

    `deadline` is a ``time.monotonic()`` value; past it, FrameTimeout is raised and the stream
    must be considered unusable (part of a frame may have been consumed).
    """
    header = _read_exact(fd, _HEADER.size, deadline, at_boundary=True)
    if header is None:
        return None
    (size,) = _HEADER.unpack(header)
    if size > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {size} bytes exceeds the {MAX_FRAME_BYTES}-byte bound")
    body = _read_exact(fd, size, deadline, at_boundary=False)
    assert body is not None  # only a header read may see a clean EOF
    try:
        return json.loads(body)
    except ValueError as exc:
        raise ProtocolError(f"frame is not valid JSON: {exc}") from exc
