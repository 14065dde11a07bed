"""The HTTP clone of the AMiner APIs, as its own process on loopback."""

from __future__ import annotations

import random

import httpx
import pytest

from soay.settings import SandboxSettings
from training.generate import sandbox_for


def _calls(env, rng):
    person = env.sample_entity("person", rng)
    pub = env.sample_entity("publication", rng)
    inputs = env.head_inputs("searchPerson", person)
    return [
        ("searchPerson", {"name": inputs["name"], "organization": inputs["organization"]}),
        ("searchPerson", {"name": inputs["name"].split()[-1], "interest": inputs["interest"]}),
        ("searchPublication", env.head_inputs("searchPublication", pub)),
        ("getCoauthors", {"person_id": person}),
        ("getPersonInterest", {"person_id": person}),
        ("getPersonBasicInfo", {"person_id": person}),
        ("getPersonPubs", {"person_id": person}),
        ("getPublication", {"pub_id": pub}),
    ]


def test_every_api_answers_the_same_over_http(api_server, aminer_env):
    url, _ = api_server
    rng = random.Random(3)
    seen = set()
    with httpx.Client(base_url=url) as client:
        for _ in range(15):
            for api, args in _calls(aminer_env, rng):
                response = client.post(f"/api/{api}", json=args)
                assert response.status_code == 200, response.text
                assert response.json() == aminer_env.call(api, **args), (api, args)
                seen.add(api)
    assert seen == set(aminer_env.spec.api_names)


@pytest.mark.parametrize(
    "method, path, kwargs, status, fragment",
    [
        ("post", "/api/getNobelPrize", {"json": {}}, 404, "no API"),
        ("get", "/api/searchPerson", {}, 405, "POST"),
        ("post", "/api/searchPerson", {"content": b"{not json", "headers": {"content-type": "application/json"}}, 400, "JSON"),
        ("post", "/api/searchPerson", {"json": {"name": 42}}, 422, "name"),
        ("post", "/api/searchPerson", {"json": {"name": "x", "shoe_size": 3}}, 422, "shoe_size"),
        ("post", "/api/getCoauthors", {"json": {}}, 422, "person_id"),
        ("post", "/api/getCoauthors", {"json": {"person_id": "../../etc"}}, 400, "person"),
        ("post", "/api/searchPerson", {"json": {}}, 400, ""),
        ("post", "/api/searchPerson", {"json": {"name": "x" * 200_000}}, 413, "larger"),
        ("post", "/api/searchPerson", {"json": ["a", "list"]}, 422, ""),
    ],
)
def test_bad_requests_get_a_clear_4xx(api_server, method, path, kwargs, status, fragment):
    url, proc = api_server
    response = getattr(httpx, method)(url + path, **kwargs)
    assert response.status_code == status, response.text
    assert fragment in response.json()["error"]
    assert proc.poll() is None and httpx.get(f"{url}/healthz").status_code == 200


def test_metrics_and_spec(api_server):
    url, _ = api_server
    httpx.post(f"{url}/api/getPersonInterest", json={"person_id": "0" * 24})
    metrics = httpx.get(f"{url}/metrics").text
    assert 'api_clone_requests_total{api="getPersonInterest",status="200"}' in metrics
    assert "api_clone_latency_seconds_bucket" in metrics
    assert {a["name"] for a in httpx.get(f"{url}/spec").json()["apis"]} >= {"searchPerson", "getPublication"}


def test_sandbox_runs_code_against_the_http_clone(api_server, aminer_env, aminer_db):
    url, _ = api_server
    rng = random.Random(5)
    person = aminer_env.sample_entity("person", rng)
    inputs = aminer_env.head_inputs("searchPerson", person)
    code = (
        f"people = searchPerson(name={inputs['name']!r}, organization={inputs['organization']!r})\n"
        "final_result = getPersonPubs(person_id=people[0]['person_id'])\n"
    )
    with sandbox_for("aminer", aminer_db, SandboxSettings(api_backend="http", api_url=url)) as remote, \
            sandbox_for("aminer", aminer_db, SandboxSettings()) as local:
        over_http, in_process = remote.run(code), local.run(code)
        assert over_http.ok and in_process.ok
        assert over_http.result == in_process.result
        failed = remote.run("final_result = getCoauthors(person_id='bad id')")
        assert not failed.ok and failed.error_type == "runtime" and "HTTP 400" in failed.error
