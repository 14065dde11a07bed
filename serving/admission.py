"""Admission control of the ingress: how many questions run at once, how many wait, and a clear
refusal beyond that.

Why the ingress does it and not Serve's proxy: the proxy's queue (`max_queued_requests`) is shared
by every path of the ingress, so a health probe waited behind 200 questions and failed, and what
the proxy sheds is a plain-text 503 without Retry-After. Here only questions take a slot; health,
metrics and the page's files never wait, and a shed question gets a JSON 503 with Retry-After.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class Overloaded(Exception):
    """Every slot is taken and the waiting line is full."""


class Admission:
    """`running` questions at once per replica, at most `waiting` more in line."""

    def __init__(self, running: int, waiting: int) -> None:
        self.running, self.waiting = running, waiting
        self._slots = asyncio.Semaphore(running)
        self._in_line = 0

    @property
    def in_line(self) -> int:
        return self._in_line

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold a slot for one question; Overloaded at once when none is free and the line is full."""
        if self._slots.locked() and self._in_line >= self.waiting:
            raise Overloaded(f"overloaded: {self.running} questions in progress and {self.waiting} waiting; try again shortly")
        self._in_line += 1
        try:
            await self._slots.acquire()
        finally:
            self._in_line -= 1
        try:
            yield
        finally:
            self._slots.release()
