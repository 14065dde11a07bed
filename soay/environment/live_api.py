"""A live API as an environment: an imported spec whose functions are HTTP calls to a service.

The spec and its binding come from `soay spec import`; the base URL and an optional auth header
from the settings. Generated code still sees only the spec's functions: the sandbox server
builds this environment and its forked child makes the calls on the code's behalf (the code
itself can reach no network). Because a live service is slow, rate-limited and sometimes down,
every call goes through:

- a time-out per request, and retries with exponential back-off and jitter (tenacity) for 429,
  5xx, time-outs and dropped connections; 4xx are the caller's mistake and fail at once;
- a budget of HTTP requests per snippet (the sandbox calls `begin_snippet`), so a loop in
  generated code cannot hammer the service;
- a response cache shared with the oracle (soay/environment/response_cache.py), so verifying a
  triplet repeats no call the ground truth already made.

A call the service could not answer after its retries raises `ApiUnavailable`, which the
triplet factory treats like any unanswerable instance: the candidate is dropped and counted,
and nothing verified is lost.

Head entities are sampled from the service itself: its list operations when the document has
them, otherwise its searches, probed with a few words and then with the words of what they
return (soay/environment/probe_words.txt).
"""

from __future__ import annotations

import os
import random
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field
from tenacity import RetryCallState, RetryError, Retrying, retry_if_exception_type, stop_after_attempt

from soay.environment.base import ApiCallError, SpecDispatch, positional_functions
from soay.environment.live_transport import TransientError, api_key, build_request, load_binding, read_response
from soay.environment.response_cache import ResponseCache, cache_key
from soay.graph import ApiGraph
from soay.ground_truth import Unanswerable
from soay.importers.intents import head_input_sources
from soay.settings import LiveApiSettings
from soay.spec import Api, ApiSpec, load_spec

PROBE_WORDS = [w for w in (Path(__file__).with_name("probe_words.txt")).read_text(encoding="utf-8").split() if not w.startswith("#")]
_WORD = re.compile(r"[^\W\d_]{3,}")


class ApiUnavailable(Unanswerable, ApiCallError):
    """The service did not answer (429, 5xx, time-out) even after retries."""


class LiveApiOptions(BaseModel):
    """How to reach and treat one live service (the `live_api` settings plus the spec's path)."""

    model_config = ConfigDict(extra="forbid")

    spec_path: str
    base_url: str
    binding_path: str | None = None
    auth_header: str | None = None
    """`Name: value`, e.g. `Authorization: Bearer ...`; sent with every request."""
    api_key: str | None = None
    """The key the binding's security scheme sends (query, header or bearer); without it, the
    environment variable the binding names (`<DOMAIN>_API_KEY`) is read at call time."""
    timeout_s: float = Field(10.0, gt=0)
    attempts: int = Field(4, ge=1)
    backoff_s: float = Field(0.2, ge=0)
    max_backoff_s: float = Field(5.0, ge=0)
    cache_path: str | None = None
    cache_ttl_s: float | None = None
    requests_per_snippet: int | None = Field(None, ge=1)
    sample_size: int = Field(200, ge=1)
    max_probe_calls: int = Field(60, ge=1)

    @classmethod
    def from_settings(cls, live: LiveApiSettings, spec_path: Path, cache_path: Path, **override: Any) -> LiveApiOptions:
        """The options of the `live_api` settings for one spec; absolute paths, because the
        sandbox's server and Ray workers may run in another directory."""
        if not live.base_url:
            raise ValueError("give the API's address as live_api.base_url (or --base-url)")
        fields = live.model_dump(include={"auth_header", "api_key", "timeout_s", "attempts", "backoff_s", "max_backoff_s", "cache_ttl_s",
                                          "requests_per_snippet", "sample_size"})
        return cls(spec_path=str(Path(spec_path).resolve()), base_url=live.base_url, cache_path=str(Path(cache_path).resolve()),
                   **{**fields, **override})


class LiveApiEnvironment(SpecDispatch):
    """The spec's APIs answered by a live service; the Environment protocol for generation."""

    def __init__(self, options: LiveApiOptions) -> None:
        self.options = options
        self.spec: ApiSpec = load_spec(options.spec_path)
        self.binding = load_binding(options.spec_path, options.binding_path)
        missing = set(self.spec.api_names) - set(self.binding.get("apis", {}))
        if missing:
            raise ValueError(f"the binding lacks {', '.join(sorted(missing))}; re-import the API")
        self.headers = _header(options.auth_header)
        self.cache = ResponseCache(options.cache_path, options.cache_ttl_s)
        self.stats: Counter = Counter()
        self._client: httpx.Client | None = None
        self._pid = -1
        self._spent = 0
        self._pools: dict[str, dict[str, dict[str, Any]]] = {}
        self._head_names: set[str] | None = None

    # ------------------------------------------------------------------ calls

    def __getattr__(self, name: str) -> Callable[..., Any]:
        """The spec's APIs as methods, so SpecDispatch checks arguments before any request."""
        spec = self.__dict__.get("spec")
        if spec is None or name not in spec.by_name:
            raise AttributeError(name)

        def api(**kwargs: Any) -> Any:
            return self._call(name, {k: v for k, v in kwargs.items() if v is not None})

        api.__name__ = name
        return api

    def api_functions(self) -> dict[str, Callable[..., Any]]:
        """Positional arguments allowed too, as generated code may write `searchMovie("Heat")`."""
        return positional_functions(self.spec, self.call)

    def begin_snippet(self) -> None:
        """A new snippet starts: its request budget is whole again (called by the sandbox)."""
        self._spent = 0

    def _http(self) -> httpx.Client:
        """One client per process: a connection pool must not cross the sandbox's fork."""
        if self._client is None or self._pid != os.getpid():
            self._client = httpx.Client(
                base_url=self.options.base_url.rstrip("/"), headers=self.headers, timeout=self.options.timeout_s, follow_redirects=True
            )
            self._pid = os.getpid()
        return self._client

    def _call(self, api: str, kwargs: dict[str, Any]) -> Any:
        key = cache_key(api, kwargs)
        cached = self.cache.get(key)
        if not ResponseCache.missing(cached):
            self.stats["cache_hits"] += 1
            return cached
        client = self._http()
        retrying = Retrying(
            stop=stop_after_attempt(self.options.attempts),
            wait=self._backoff,
            retry=retry_if_exception_type(TransientError),
        )
        try:
            for attempt in retrying:
                with attempt:
                    if attempt.retry_state.attempt_number > 1:
                        self.stats["retries"] += 1
                    result = self._request(client, api, kwargs)
        except RetryError as e:
            self.stats["unavailable"] += 1
            cause = e.last_attempt.exception()
            raise ApiUnavailable(
                f"{api}: the API at {self.options.base_url} did not answer ({cause}) after {self.options.attempts} attempts"
            ) from None
        self.cache.put(key, result)
        return result

    def _backoff(self, retry_state: RetryCallState) -> float:
        """Exponential back-off with jitter in proportion to it, capped (tenacity's
        wait_exponential_jitter adds up to 1 s of jitter whatever backoff_s says)."""
        base = self.options.backoff_s
        return min(base * 2 ** (retry_state.attempt_number - 1) + random.uniform(0, base), self.options.max_backoff_s)

    def _request(self, client: httpx.Client, api: str, kwargs: dict[str, Any]) -> Any:
        budget = self.options.requests_per_snippet
        if budget is not None and self._spent >= budget:
            raise ApiCallError(f"{api}: the budget of {budget} API requests per snippet is spent")
        self._spent += 1
        self.stats["requests"] += 1
        try:
            response = client.send(build_request(client, self.binding, api, kwargs, api_key(self.binding, self.options.api_key)))
        except httpx.TimeoutException as e:
            self.stats["timeouts"] += 1
            raise TransientError(f"timed out after {self.options.timeout_s:g} s") from e
        except httpx.TransportError as e:
            self.stats["transport_errors"] += 1
            raise TransientError(f"{type(e).__name__}: {e}") from e
        try:
            return read_response(self.binding, api, response)
        except TransientError:
            self.stats[f"http_{response.status_code}"] += 1
            raise

    # --------------------------------------------------- the Environment protocol

    def sample_entity(self, entity: str, rng: random.Random) -> str:
        ids = self._entity_ids(entity)
        if not ids:
            raise Unanswerable(f"the live API returned no {entity} to sample from")
        return rng.choice(ids)

    def head_inputs(self, api: str, entity_id: str) -> dict[str, str]:
        """What a person types into the search: read off the record it returns (same rule as the intents)."""
        record = self.head_record(api, entity_id)
        out: dict[str, str] = {}
        for param, attr in head_input_sources(self.spec.api(api)).items():
            value = record.get(attr)
            if isinstance(value, list):
                value = value[0] if value else None
            if value is not None and value != "":
                out[param] = str(value)
        return out

    def head_record(self, api: str, entity_id: str) -> dict[str, Any]:
        pool = self._pool(self.spec.api(api))
        if entity_id not in pool:
            raise KeyError(f"{entity_id!r} was not sampled from {api}")
        return pool[entity_id]

    def close(self) -> None:
        if self._client is not None and self._pid == os.getpid():
            self._client.close()
        self._client = None
        self.cache.close()

    # ------------------------------------------------------------------ sampling

    def _entity_ids(self, entity: str) -> list[str]:
        heads = [a for a in self.spec.apis if a.entity == entity and a.name in self._heads()]
        pools = [set(self._pool(h)) for h in heads]
        return sorted(set.intersection(*pools)) if pools else []

    def _heads(self) -> set[str]:
        if self._head_names is None:  # asked for every candidate: build the graph once
            self._head_names = set(ApiGraph(self.spec).heads)
        return self._head_names

    def _pool(self, head: Api) -> dict[str, dict[str, Any]]:
        """Records the head API returns, by entity id, gathered from the live service once."""
        if head.name in self._pools:
            return self._pools[head.name]
        key = next((a.name for a in head.attributes if a.ref == head.entity), None)
        pool: dict[str, dict[str, Any]] = {}
        self._pools[head.name] = pool
        if key is None or head.returns != "records":
            return pool
        sources = head_input_sources(head)
        probe_param = next((p.name for p in head.params if p.required and p.name in sources), next(iter(sources), None))
        if probe_param is None or any(p.required and p.name != probe_param for p in head.params):
            return pool
        queue = list(PROBE_WORDS)
        tried: set[str] = set()
        calls = 0
        while queue and calls < self.options.max_probe_calls and len(pool) < self.options.sample_size:
            word = queue.pop(0)
            if word in tried:
                continue
            tried.add(word)
            calls += 1
            try:
                records = self.call(head.name, **{probe_param: word})
            except ApiCallError:  # a probe the service rejects or cannot answer now: try the next
                self.stats["probe_failures"] += 1
                continue
            for record in records or []:
                if isinstance(record, dict) and isinstance(record.get(key), (str, int)):
                    pool.setdefault(str(record[key]), record)
                    text = record.get(sources[probe_param])
                    queue.extend(w.lower() for w in _WORD.findall(text if isinstance(text, str) else ""))
        self.stats["sampled_" + head.name] = len(pool)
        self.stats["probe_calls"] += calls
        return pool


def _header(auth_header: str | None) -> dict[str, str]:
    if not auth_header:
        return {}
    name, sep, value = auth_header.partition(":")
    if not sep or not name.strip() or not value.strip():
        raise ValueError("live_api.auth_header must look like 'Name: value', e.g. 'Authorization: Bearer TOKEN'")
    return {name.strip(): value.strip()}


def open_live_environment(**options: Any) -> LiveApiEnvironment:
    """The factory the sandbox server calls with JSON-compatible options."""
    return LiveApiEnvironment(LiveApiOptions(**options))
