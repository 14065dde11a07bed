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


class Alternative(BaseModel):
    """One of the planner's next-best readings of a question, with the program it would run."""

    model_config = ConfigDict(extra="forbid")

    combination: str
    solution: str
    code: str
    probability: float


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
    confidence: float | None = None
    """The planner's probability of the reading it took (a heads model's; None for a planner that
    gives none, or a reading the client chose)."""
    confidence_needed: float | None = None
    """The served model's calibrated bar (soay/heads.py `trust_threshold`): at or above it, its
    readings of validation questions were right at least `trust_precision` of the time. What the
    enlargement trusts a plan by when no person said whether it was right."""
    alternatives: list[Alternative] = Field(default_factory=list)
    """The planner's next-best readings, each with the program it would run: a person who marks
    the answer bad may pick one (Feedback.choice), and that pick becomes a labelled triplet."""
    reading: str | None = None
    """The combination the client asked the question to be answered with (AskRequest.reading: a
    person trying an alternative): not the planner's decision, so never a label by itself."""

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
    choice: StrictStr | None = Field(None, max_length=200)
    """With "bad": the combination of the alternative reading the person picked instead
    (RequestLog.alternatives): the question's label."""
    time: str = Field(default_factory=utc_now)

    def encode(self) -> bytes:
        return self.model_dump_json().encode()

    @classmethod
    def decode(cls, value: bytes) -> Feedback:
        return cls.model_validate_json(value)


OUTBOX_HEADER = "soay-outbox"
"""Header naming the outbox a record was shipped from (serving/outbox.py: one per node)."""
OUTBOX_ID_HEADER = "soay-outbox-id"
"""Header with the record's row id in that outbox."""


def consumed_topic(requests_topic: str) -> str:
    """Where the enlargement says which shipped records it has made durable."""
    return f"{requests_topic}.consumed"


class Consumed(BaseModel):
    """The enlargement's word that these records of one outbox are in the dataset: the outbox may
    forget them. Why not the consumer group's offsets: an in-memory broker that restarted lost
    them, and a consumer's position kept from the old log skips the start of the new one, so
    offsets can say "read" of records never read."""

    model_config = ConfigDict(extra="forbid")

    outbox: StrictStr
    ids: list[int]

    def encode(self) -> bytes:
        return self.model_dump_json().encode()

    @classmethod
    def decode(cls, value: bytes) -> Consumed:
        return cls.model_validate_json(value)


def consumed_records(messages: list[Any]) -> list[Consumed]:
    """The acknowledgements of a batch of Kafka messages: their outbox row ids, per outbox (messages
    without the headers, produced by something else than the stack's shipper, have none)."""
    by_outbox: dict[str, list[int]] = {}
    for message in messages:
        headers = dict(message.headers or ())
        if OUTBOX_HEADER in headers and OUTBOX_ID_HEADER in headers:
            by_outbox.setdefault(headers[OUTBOX_HEADER].decode(), []).append(int(headers[OUTBOX_ID_HEADER]))
    return [Consumed(outbox=outbox, ids=ids) for outbox, ids in by_outbox.items()]
