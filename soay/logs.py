"""The log-stream contract: one record per served request and one per feedback, as Kafka values.

Serving produces them (serving/), the enlargement job consumes them (training/); both import these
models from the core so that a field means the same on both sides of the topic. Values are UTF-8
JSON; the message key is the request id, so a request's record and its feedback land on the same
partition of their topics.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr

RequestStatus = Literal["ok", "execution_error", "failed", "out_of_scope"]
"""ok: the code ran and left a result; execution_error: the code ran and failed in the sandbox;
failed: a stage could not produce its part (no code was run)."""


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class RequestLog(BaseModel):
    """What the service did with one question."""

    model_config = ConfigDict(extra="forbid")

    request_id: str
    time: str = Field(default_factory=utc_now)
    endpoint: str
    query: str
    language: str = ""
    solution: str = ""
    code: str = ""
    result: Any = None
    status: RequestStatus
    error: str | None = None
    error_type: str | None = None
    code_attempts: int = 0
    """Programs the coder wrote for this request: 0 when the code is a verified program of the
    library (copied or ranked, or no code was needed), 1 when the coder wrote it and its first
    program passed the sandbox's AST check, 2 when that one did not and it wrote a repair (which
    is what ran, whatever the check makes of it)."""
    kind: Literal["answer", "not_found", "ambiguous"] = "answer"
    """What the answer stage made of the run (soay/outcomes.py): `not_found` when a searched name
    matched nobody, `ambiguous` when several entities carry it; such a request's program is no
    example to learn from as it stands."""
    timings: dict[str, float] = Field(default_factory=dict)
    """Seconds per stage (retrieve, plan, code, execute, answer)."""
    models: dict[str, str] = Field(default_factory=dict)
    """Model name -> version (checkpoint path or promoted run) that served this request."""

    def encode(self) -> bytes:
        return self.model_dump_json().encode()

    @classmethod
    def decode(cls, value: bytes) -> RequestLog:
        return cls.model_validate_json(value)


class Feedback(BaseModel):
    """A client's verdict on one answered request (`POST /v1/feedback`)."""

    model_config = ConfigDict(extra="forbid")

    request_id: StrictStr = Field(min_length=1, max_length=200)
    verdict: Literal["good", "bad"]
    comment: StrictStr | None = Field(None, max_length=2000)
    time: str = Field(default_factory=utc_now)

    def encode(self) -> bytes:
        return self.model_dump_json().encode()

    @classmethod
    def decode(cls, value: bytes) -> Feedback:
        return cls.model_validate_json(value)
