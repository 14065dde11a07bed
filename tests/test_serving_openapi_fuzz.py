"""The served application does what its OpenAPI document says (loadtest/fuzz.py): schemathesis
makes cases of every documented operation from the document the service serves, positive and
negative, with a fixed seed, and every response is held to it: no 5xx, only documented statuses
and media types, bodies of the documented schemas. The benchmark runs the same at 10,000 requests
(benchmarks/reliability_bench.py, section fuzz); this is its short form.
"""

from __future__ import annotations

import uuid
from collections import Counter

import httpx
import requests
from prometheus_client.parser import text_string_to_metric_families

from conftest import AUTH
from loadtest.fuzz import MODES, PIPELINE_OPERATIONS, generate, load_schema, operations, runs_pipeline, send

SEED = 25
PIPELINE_EXAMPLES, EXAMPLES = 5, 25
"""Cases per operation and mode: few of those that run the pipeline (0.2 to 2 s each), more of the rest."""


def test_every_documented_operation_answers_as_its_document_says(served):
    url, _, _ = served
    schema = load_schema(url, AUTH)
    documented = operations(schema)
    assert PIPELINE_OPERATIONS <= {op.label for op in documented}
    statuses: Counter[int] = Counter()
    failures: list[str] = []
    with requests.Session() as session:
        for operation in documented:
            for mode in MODES:
                for case in generate(operation, mode, PIPELINE_EXAMPLES if runs_pipeline(operation, mode) else EXAMPLES, SEED):
                    outcome = send(case, url, AUTH, session)
                    statuses[outcome.status] += 1
                    if outcome.failure:
                        failures.append(outcome.failure)
    assert not failures, "\n\n".join(failures[:5])
    assert statuses[200] and statuses[202] and statuses[422] and statuses[400], statuses  # answered, accepted and refused cases


def test_paths_no_route_serves_share_one_metrics_series(served):
    """The `endpoint` label is the route's template: made-up paths are one "unmatched" series,
    not one series each."""
    url, _, _ = served
    made_up = [f"/v1/{uuid.uuid4().hex}", "/wp-login.php", "/v1/ask/extra"]
    for path in made_up:
        assert httpx.get(f"{url}{path}", headers=AUTH, timeout=30).status_code == 404
    text = httpx.get(f"{url}/metrics", timeout=30).text
    endpoints = {s.labels["endpoint"] for f in text_string_to_metric_families(text) if f.name == "soay_requests" for s in f.samples}
    assert "unmatched" in endpoints and not endpoints & set(made_up), endpoints
