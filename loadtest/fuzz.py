"""Fuzzing the served API from its own OpenAPI document (schemathesis), for the served test
(tests/test_serving_openapi_fuzz.py) and the reliability benchmark (benchmarks/reliability_bench.py).

Cases are generated first (hypothesis with a fixed seed, generation only: no shrinking, no
database, so a run is repeatable) and sent after, so that the benchmark can send many at once.
Every response is held to the document: never a 5xx, only documented statuses and media types,
bodies of the documented schema. Both positive cases (what the schema admits) and negative ones
(what it refuses: wrong types, missing fields, bodies that are not JSON) are made.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import APIOperation, BaseSchema, Case, GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance, status_code_conformance

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
MODES = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
PIPELINE_OPERATIONS = frozenset({"POST /v1/ask", "POST /v1/ask/stream", "POST /v1/chat/completions"})
"""Operations whose admitted (positive) cases may run the whole pipeline, 0.2 to 2 s each on a CPU
machine: a run makes few of those and many of the others."""
REQUEST_TIMEOUT_S = 180.0
"""Longer than the service's own request timeout: a slow answer is the service's to report (504)."""


@dataclass(frozen=True)
class Outcome:
    """One request: its status (0 when no response came) and what it broke, if anything."""

    status: int
    failure: str | None = None


def load_schema(url: str, headers: Mapping[str, str]) -> BaseSchema:
    """The document the service serves at /openapi.json (behind the API key, like the API)."""
    return schemathesis.openapi.from_url(f"{url}/openapi.json", headers=dict(headers), timeout=30)


def operations(schema: BaseSchema) -> list[APIOperation]:
    return [result.ok() for result in schema.get_all_operations()]


def runs_pipeline(operation: APIOperation, mode: GenerationMode) -> bool:
    return mode is GenerationMode.POSITIVE and operation.label in PIPELINE_OPERATIONS


def generate(operation: APIOperation, mode: GenerationMode, examples: int, seed_value: int) -> list[Case]:
    """Up to `examples` cases of `operation` (fewer when its inputs run out: a GET without
    parameters has one positive case and no negative one)."""
    cases: list[Case] = []

    @seed(seed_value)
    @settings(max_examples=examples, database=None, deadline=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(operation.as_strategy(generation_mode=mode))
    def collect(case: Case) -> None:
        cases.append(case)

    try:
        collect()
    except Unsatisfiable:  # nothing (more) to make in this mode
        pass
    return cases


def send(case: Case, url: str, headers: Mapping[str, str], session: requests.Session) -> Outcome:
    """Send one case and hold its response to the document."""
    try:
        response = case.call(base_url=url, session=session, headers=dict(headers), timeout=REQUEST_TIMEOUT_S)
    except requests.RequestException as exc:
        return Outcome(0, f"{case.operation.label}: no response: {type(exc).__name__}: {exc}")
    try:
        case.validate_response(response, checks=CHECKS, headers=dict(headers))
    except FailureGroup as exc:
        return Outcome(response.status_code, f"{case.operation.label}: {exc}")
    return Outcome(response.status_code)
