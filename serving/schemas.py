"""Request and response models of the question-answering API.

Typed and strict, so that a wrong type or a missing field becomes a 4xx with a message (never a
traceback), and OpenAI clients get the chat-completion shapes they parse. Every response carries
the whole record (solution, code, result, timings); chat responses put it under `soay`.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr

MAX_REQUEST_ID_CHARS = 200
"""Longest request id (X-Request-Id) the service takes: the bound of soay.logs.Feedback."""


class Health(BaseModel):
    """`GET /healthz`: every stage "ok" (200), or the state of those that are not (503)."""

    status: Literal["ok", "unavailable"]
    model: str
    stages: dict[str, str]
    sandbox: str | None = None
    """"bwrap" when the sandbox has its OS wall, "none: <why>" when not, null until the executor said."""


class ErrorBody(BaseModel):
    """The body of every error the application answers: what was wrong, in a sentence."""

    error: str


ERRORS = {
    400: "Malformed JSON, or an X-Request-Id longer than 200 characters",
    401: "Missing or wrong API key (`Authorization: Bearer <key>`), when the service has one",
    404: "Unknown model",
    413: "Request body larger than `serve.max_body_bytes`",
    422: "A field missing, of the wrong type or out of bounds; an empty or too long question; a question the engines cannot take",
    429: "Too many requests from this client; `Retry-After` says when to come back",
    503: "Overloaded, or a stage unavailable; `Retry-After` says when to try again",
    504: "No answer within `serve.request_timeout_s`",
}
"""What each error status means, for the OpenAPI document: every status the service answers is in it."""


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """FastAPI `responses=` entries of these error statuses: JSON with the ErrorBody schema, also on
    a route whose success is another media type (FastAPI gives a `model` the route's media type)."""
    content = {"application/json": {"schema": ErrorBody.model_json_schema()}}
    return {status: {"description": ERRORS[status], "content": content} for status in statuses}


EVERY_ROUTE = error_responses(400, 413, 503)
"""What any route may answer: the request-id check, the body limit, an overloaded proxy or stage."""
KEYED = error_responses(401, 429)
"""The routes behind the API key and the rate limit."""
WITH_BODY = error_responses(401, 422, 429)
"""The keyed routes that validate a JSON body (422 replaces FastAPI's own validation schema: the
application answers ErrorBody)."""
ANSWERING = error_responses(401, 422, 429, 504)
"""The routes that answer a question in their response (the streaming ask reports a late failure
as an event instead)."""


class AskRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: StrictStr = Field(min_length=1)
    reading: StrictStr | None = Field(None, max_length=200)
    """Answer with this combination instead of the planner's reading: a person trying one of an
    answer's `alternatives`. Logged as the client's choice, never as the planner's."""


class Record(BaseModel):
    """What the pipeline made of one question."""

    request_id: str
    """Names the request's log record; `POST /v1/feedback` takes it."""
    query: str
    language: str
    solution: str
    code: str
    result: Any = None
    """The program's final result when `kind` is "answer"; None otherwise (a not-found or ambiguous
    run may have read facts, but about someone other than the person asked)."""
    ok: bool = False
    error: str | None = None
    error_type: str | None = None
    code_attempts: int = 0
    """Programs the coder wrote: 0 when `code` is a verified program of the library, 1 when the
    coder wrote it, 2 when its first program broke the sandbox's rules and `code` is its repair
    (as in the request's log record, soay.logs.RequestLog)."""
    answer: str
    timings: dict[str, float]
    kind: Literal["answer", "out_of_scope", "unsupported", "not_found", "ambiguous"] = "answer"
    """out_of_scope: the question is not one this service's APIs answer; `answer` says what it can.
    unsupported: the question asks for something the APIs do not hold about a scholar (an h-index,
    a phone number, an age: soay/intents/unsupported_attributes.yaml); `answer` says what is
    missing and what can be told about that person instead. No code ran, as for out_of_scope.
    not_found: a name (or title) of the question matched nothing; `answer` says what was searched.
    ambiguous: several entities share the name and the question does not say which; `answer` and
    `candidates` list them, so that the client can ask again about one of them."""
    candidates: list[dict[str, Any]] | None = None
    """For `ambiguous`: the namesakes as the search returned them (id, name, organisation,
    interests...), best match first, each with `question`, the question asked again about it
    alone, where its organisation tells it from the others."""
    explanation: list[dict[str, Any]] = Field(default_factory=list)
    """How the answer was obtained: one step per API call (consecutive calls of one API merged),
    {"api", "args", "found": how many results, "took": what the program took from them}."""
    confidence: float | None = None
    """The planner's probability of the reading it took (null when the client chose the reading)."""
    alternatives: list[dict[str, Any]] = Field(default_factory=list)
    """The planner's next-best readings, likeliest first: {"combination", "solution", "text" (the
    question read that way), "probability"}. Ask again with `reading` to see one's answer; send
    its `combination` as `choice` with a "bad" verdict when it is what was meant."""


class FeedbackRequest(BaseModel):
    """A client's verdict on an answered request; the server stamps the time (soay.logs.Feedback)."""

    model_config = ConfigDict(extra="forbid")

    request_id: StrictStr = Field(min_length=1, max_length=MAX_REQUEST_ID_CHARS)
    verdict: Literal["good", "bad"]
    comment: StrictStr | None = Field(None, max_length=2000)
    choice: StrictStr | None = Field(None, max_length=200)
    """With "bad": the `combination` of the alternative reading the person meant (one of the
    answer's `alternatives`); it becomes a labelled training example."""


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "user", "assistant", "tool", "developer"]
    content: StrictStr | list[dict[str, Any]] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(str(part.get("text", "")) for part in self.content if part.get("type") == "text")
        return self.content or ""


class ChatRequest(BaseModel):
    """An OpenAI chat-completion request; sampling fields are accepted and ignored (the pipeline
    decodes greedily), the question is the last user message."""

    model_config = ConfigDict(extra="ignore")

    model: StrictStr
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False

    def query(self) -> str:
        for message in reversed(self.messages):
            if message.role == "user":
                return message.text()
        return ""


def chat_completion(model: str, record: Record) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{record.request_id}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": record.answer}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        "soay": record.model_dump(),
    }


def chat_chunk(chunk_id: str, model: str, delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": chunk_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        **extra,
    }
