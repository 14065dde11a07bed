"""Requests a careless or hostile client sends, each of which the service must refuse with a 4xx.

Under load they check that refusing stays cheap and correct: a 4xx is the right answer (a success
for the load test), a 2xx means garbage was accepted and a 5xx means the service broke (failures).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

OVERSIZED_BYTES = 2**20
"""Well past the default body limit (64 KiB): the body limit answers 413 while the body streams in."""


@dataclass(frozen=True)
class BadRequest:
    name: str
    path: str
    body: bytes
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "application/json"})


def _json(value: Any) -> bytes:
    return json.dumps(value).encode()


def bad_requests(model: str, max_query_chars: int) -> tuple[BadRequest, ...]:
    """One of each kind of bad request; `model` and `max_query_chars` are the service's settings,
    so that a request is wrong for exactly one reason."""
    question = [{"role": "user", "content": "Who are the co-authors of Ann Lee?"}]
    return (
        BadRequest("empty query", "/v1/ask", _json({"query": ""})),
        BadRequest("blank query", "/v1/ask", _json({"query": "   "})),
        BadRequest("query too long", "/v1/ask", _json({"query": "x" * (max_query_chars + 1)})),
        BadRequest("oversized body", "/v1/ask", _json({"query": "x" * OVERSIZED_BYTES})),
        BadRequest("malformed JSON", "/v1/ask", b'{"query": '),
        BadRequest("wrong type", "/v1/ask", _json({"query": 42})),
        BadRequest("missing field", "/v1/ask", _json({"question": "who?"})),
        BadRequest("unknown model", "/v1/chat/completions", _json({"model": f"not-{model}", "messages": question})),
        BadRequest("no messages", "/v1/chat/completions", _json({"model": model, "messages": []})),
    )
