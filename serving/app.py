"""The question-answering application: ingress -> retriever -> planner -> coder -> executor -> answer.

`build_app` composes it from the settings, one autoscaled Serve deployment per stage; the ingress
is the HTTP layer (`POST /v1/ask`, OpenAI-compatible `POST /v1/chat/completions` with streaming,
`GET /healthz`, `GET /metrics`, and the web page at `GET /` with its streaming ask, serving/page.py)
and walks each question through the stages over deployment handles:

- retriever: the nearest training exemplars (query, solution, code) of the question;
- planner: an LLM deployment that scores the library solutions of the retrieved exemplars (ordered
  by the call-path weights learnt from the logs) as whole continuations, by prompt logprobs, and
  picks one, so no solution names an API that does not exist;
- coder: a second LLM deployment of the same checkpoint, prompted with the question, the solution
  and a retrieved question solved that way, with its program; what it writes must pass the
  sandbox's AST rules, or it is written once more from another exemplar with sampling;
- executor: the program runs in the sandbox (a separate process), never in a server;
- answer: the result as a sentence in the question's language.

Every request the pipeline takes on becomes one `RequestLog` on the Kafka log stream (ok, failed or
execution error), named by the request id that the response carries (`X-Request-Id`, and
`request_id` in the record); `POST /v1/feedback` puts a client's verdict on it beside it.

Backpressure: each replica works on `max_ongoing_requests` at once and the proxy queues at most
`max_queued_requests` for the ingress, beyond which Serve answers 503 at once.
"""


import asyncio
import functools
import hashlib
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from ray import serve
from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError
from ray.serve.config import BackpressureConfig
from ray.serve.deployment import Application
from ray.serve.exceptions import BackPressureError
from ray.serve.handle import DeploymentHandle
from ray.serve.llm.openai_api_models import CompletionRequest
from starlette.exceptions import HTTPException

from retriever.deployment import retriever_app
from serving.answer import AnswerComposer
from serving.errors import StageFailed
from serving.executor import Executor
from serving.health import REFRESH_S, StatusView, deployment_states, health_body
from serving.http_limits import BodySizeLimit
from serving.llm import EngineError, completion_text, embedding_vectors, engine_deployments
from serving.admission import Admission, Overloaded
from serving.keys import KeyEntry, KeyRing, digest, read_keys, retry_after
from serving.logstream import open_log_stream
from serving.outbox import OutboxFull
from serving.ray_compat import with_version
from serving.metrics import MULTIPROC_ENV, PipelineMetrics, PrometheusText, metrics_dir, reset_metrics_dir, route_template
from serving.page import is_page_path, mount_page, scope_of
from serving.ray_compat import embedding_request
from serving.schemas import (
    ANSWERING, EVERY_ROUTE, KEYED, MAX_REQUEST_ID_CHARS, WITH_BODY, AskRequest, ChatRequest, Health, FeedbackRequest, Record, chat_chunk, chat_completion,
    error_responses,
)
from soay.agent import (
    candidate_programs, candidate_solutions, choose_program, choose_solution, code_max_tokens, code_problem, continuation_logprobs, exemplar_for,
    finish_code, head_search_line, solution_choices,
)
from soay.domains import domain_for
from soay.heads import HEADS_FILE, OUT_OF_SCOPE, Heads
from soay.log_triplets import CombinationMatcher
from soay.logs import Alternative, Feedback, RequestLog
from soay.mentions import mention_markers
from soay.outcomes import fuzzy_apis
from soay.readings import program_reading
from soay.prompts import CODER_STOP, coder_prompt, planner_prompt, question_text, target
from soay.settings import ServeSettings, Settings
from soay.tool_weights import load_tool_weights

EXEMPLAR_POOL = 4
"""Exemplars fetched are top_k times this: a wide pool holds programs for whichever solution is chosen."""
REPLICA_GONE = (ActorDiedError, ActorUnavailableError, RayActorError)
log = logging.getLogger(__name__)
PUBLIC_PATHS = ("/healthz", "/metrics")
APP_NAME = "soay"
HEALTH_CACHE_S = REFRESH_S
"""How long /healthz reuses the controller's view of the deployments: probes stay cheap under any rate."""
LOG_FULL_RETRY_S = 30.0
"""Retry-After of a question refused because the request log is full: draining takes a while."""
UNBOUNDED_LINE = 1_000_000
"""The waiting line of `max_queued_requests: -1`."""
INGRESS_HEADROOM = 1024
"""Requests an ingress replica takes beyond its questions: health probes, metrics, the page's files,
and the questions it sheds itself (a JSON 503 costs microseconds). Beyond it Serve's proxy sheds,
with plain text and the same Retry-After (`BackpressureConfig`)."""
ALTERNATIVES = 3
"""Next-best readings offered with an answer, for a person who finds it wrong."""
StageCallback = Callable[[str, float, Any], None]
"""Told (stage, seconds, what the stage made) as each stage of a request finishes."""


@dataclass(frozen=True)
class Plan:
    """The planner's decision: the solution, and with a heads model the combination (or
    OUT_OF_SCOPE) and the question's features, which the coder reuses."""

    solution: str
    combination: str | None = None
    features: Any = None
    confidence: float | None = None
    """The planner's probability of this reading (None: a reading the client chose, or a planner
    without one)."""
    alternatives: tuple[tuple[str, float], ...] = ()
    """The next-best in-scope combinations, with their probabilities."""

    @property
    def out_of_scope(self) -> bool:
        return self.combination == OUT_OF_SCOPE


@serve.deployment(name="ingress", ray_actor_options={"num_cpus": 0.25})
@serve.ingress()
class Ingress:
    def __init__(
        self,
        settings: Settings,
        retriever: DeploymentHandle,
        planner: DeploymentHandle,
        coder: DeploymentHandle,
        executor: DeploymentHandle,
        answer: DeploymentHandle,
    ) -> None:
        self.domain = domain = domain_for(settings)
        self.spec = domain.spec
        self.combinations = domain.combinations
        self.choices = solution_choices(domain.library)
        self.matcher = CombinationMatcher(domain.combinations)
        # the call-path weights `soay enlarge` learnt from served traffic, as of this replica's start
        self.dataset = settings.data.dataset_path()
        self.tool_weights = load_tool_weights(self.dataset, domain.library.graph)
        self.serve_settings: ServeSettings = settings.serve
        self.top_k = settings.retriever.top_k
        self.code_tokens = code_max_tokens(int(settings.serve.engine_kwargs.get("max_model_len", 1024)))
        self.retriever, self.executor, self.answer = retriever, executor, answer
        self.engines = {"plan": planner, "code": coder}
        self.planner, self.coder = planner.options(stream=True), coder.options(stream=True)
        self.metrics = PipelineMetrics()
        self.logs = open_log_stream(settings.kafka, settings.kafka.outbox_path(settings.data), self.metrics.registry)
        serve_settings = settings.serve
        waiting = serve_settings.max_queued_requests if serve_settings.max_queued_requests >= 0 else UNBOUNDED_LINE
        self.admission = Admission(serve_settings.max_ongoing_requests, waiting)
        own_key = [KeyEntry(name="env", sha256=digest(serve_settings.api_key))] if serve_settings.api_key else []
        self.keys = KeyRing(read_keys(serve_settings.keys_path(settings.data)) + own_key, serve_settings.rate_per_key, serve_settings.burst_per_key)
        if serve_settings.require_api_key and not self.keys.required:
            raise ValueError(f"serve.require_api_key is set but {serve_settings.keys_path(settings.data)} holds no key "
                             "and SOAY_SERVE__API_KEY is unset: add one with `soay keys add NAME`")
        self.app_name = serve.get_replica_context().app_name
        self._view = StatusView(self._stage_states)
        self._isolation: dict[str, Any] | None = None
        self._refreshing: asyncio.Future | None = None
        model_path = settings.serve.model_path(settings.data)
        self.heads = Heads.load(model_path) if (model_path / HEADS_FILE).is_file() else None
        if self.heads is not None and self.heads.sentence_encoder not in (None, settings.retriever.model):
            raise ValueError(f"{model_path} was fitted with {self.heads.sentence_encoder}'s sentence vectors, but the retriever "
                             f"serves {settings.retriever.model}: set retriever.model to it (and run `soay index`), or retrain")
        model_dir = str(model_path)
        self.model_versions = {settings.serve.planner_model: model_dir, settings.serve.coder_model: model_dir}

    def __del__(self) -> None:
        """Serve calls this when the replica shuts down: the log stream delivers what it holds, for
        a bounded time."""
        if getattr(self, "logs", None) is not None:
            self.logs.close()
        if getattr(self, "metrics", None) is not None:
            self.metrics.close()

    # --- the pipeline ---------------------------------------------------------------------

    async def ask(self, query: str, trace: RequestLog, on_stage: StageCallback | None = None) -> Record:
        """Walk one question through every stage, noting in `trace` what each one made (so that a
        request that fails half-way is logged with its solution and code); StageFailed when one of
        them cannot. `on_stage` hears of each stage as it finishes (the page's streaming ask).
        With `trace.reading` the question is answered with that combination, not the planner's."""
        timings = trace.timings
        hits = await self._stage("retrieve", timings, lambda: self.retriever.search.remote(query, k=self.top_k * EXEMPLAR_POOL, kind="exemplar"), on_stage)
        plan = await self._stage("plan", timings, lambda: self._plan(query, hits, trace.reading), on_stage)
        trace.solution = solution = plan.solution
        trace.confidence = plan.confidence
        trace.confidence_needed = self.heads.trust_threshold if self.heads is not None else None
        if plan.out_of_scope:  # nothing to run: say what this service can answer instead
            return await self._refuse(query, trace, on_stage)
        code = trace.code = await self._stage("code", timings, lambda: self._code(query, plan, hits, trace), on_stage)
        trace.alternatives = self._alternatives(query, plan)
        outcome = await self._stage("execute", timings, lambda: self.executor.run.remote(code), on_stage)
        trace.status = "ok" if outcome["ok"] else "execution_error"
        trace.result, trace.error, trace.error_type = outcome["result"], outcome["error"], outcome["error_type"]
        if not outcome["ok"]:
            self.metrics.execution_errors.labels(outcome["error_type"] or "unknown").inc()
        ran = {k: outcome.get(k) for k in ("ok", "result", "error_type", "trace")}  # not stdout: the answer needs none
        composed = await self._stage("answer", timings, lambda: self.answer.explain.remote(query, ran, fuzzy_apis(self.spec)), on_stage)
        trace.language, trace.kind = composed["language"], composed["kind"]
        # a run that took another scholar than the one asked for (or one of several namesakes) has
        # facts, but not about the person asked: the record shows none (the request log keeps them)
        shown = outcome["result"] if composed["kind"] == "answer" else None
        return Record(
            request_id=trace.request_id, query=query, language=composed["language"], solution=solution, code=code,
            result=shown, ok=outcome["ok"], error=outcome["error"], error_type=outcome["error_type"],
            code_attempts=trace.code_attempts, answer=composed["answer"], timings=timings,
            kind=composed["kind"], candidates=composed["candidates"], explanation=composed["explanation"],
            confidence=plan.confidence, alternatives=[self._offer(a, composed["language"]) for a in trace.alternatives],
        )

    def _alternatives(self, query: str, plan: Plan) -> list[Alternative]:
        """The planner's next-best readings with the program each would run (the verified program of
        the nearest training question of that combination, filled from the question): cheap, as
        nothing runs until a person asks for one."""
        if self.heads is None or not plan.alternatives:
            return []
        combinations = [c for c, _ in plan.alternatives]
        programs = self.heads.programs(np.repeat(plan.features, len(combinations), axis=0), combinations)  # a row per combination
        return [
            Alternative(combination=c, solution=str(self.combinations.solution(self.combinations.by_id[c])),
                        code=finish_code(found[0], query, self.spec, self.heads.vocabulary), probability=round(p, 4))
            for (c, p), found in zip(plan.alternatives, programs) if found
        ]

    def _offer(self, alternative: Alternative, language: str) -> dict[str, Any]:
        """An alternative as the client sees it: the question it would answer, not its program."""
        combination = self.combinations.by_id[alternative.combination]
        return {"combination": alternative.combination, "solution": alternative.solution, "probability": alternative.probability,
                "text": program_reading(self.matcher, combination, alternative.code, language)}

    async def _stage(
        self, stage: str, timings: dict[str, float], call: Callable[[], Awaitable[Any]], on_stage: StageCallback | None = None
    ) -> Any:
        """Run and time one stage. A replica that died under the call is retried once on another
        (every stage is a pure read, so repeating it is safe); overload stays overload (503)."""
        started = time.perf_counter()
        try:
            for attempt in (1, 2):
                try:
                    result = await call()
                    break
                except REPLICA_GONE:
                    if attempt == 2:
                        raise
        except BackPressureError as exc:
            self.metrics.errors.labels(stage).inc()
            raise StageFailed(stage, 503, "overloaded, try again later") from exc
        except EngineError as exc:
            self.metrics.errors.labels(stage).inc()
            raise StageFailed(stage, 422 if exc.status < 500 else 503, exc.message) from exc
        except Exception as exc:  # noqa: BLE001 - any other failure is this stage's, reported as such
            self.metrics.errors.labels(stage).inc()
            raise StageFailed(stage, 503, f"{type(exc).__name__}: {exc}") from exc
        timings[stage] = round(time.perf_counter() - started, 4)
        self.metrics.stage_latency.labels(stage).observe(timings[stage])
        if on_stage is not None:
            on_stage(stage, timings[stage], result)
        return result

    async def _complete(self, handle: DeploymentHandle, model: str, prompt: str, max_tokens: int, **sampling: Any) -> str:
        request = CompletionRequest(model=model, prompt=prompt, max_tokens=max_tokens, **sampling)
        return completion_text([response async for response in handle.completions.remote(request, None)])

    async def _plan(self, query: str, hits: list[dict[str, Any]], reading: str | None = None) -> Plan:
        """With a heads model: the base's features of the question (the planner engine, vLLM's
        pooling runner) and the planner head's combination, or out of scope, with its probability
        and the next-best readings. Otherwise the planner scores each retrieved candidate solution
        as a whole (as SoAyEval does). Either way it only ever answers with a solution of the
        library. A `reading` the client chose replaces the planner's choice."""
        if self.heads is not None:
            masked = question_text(query, self.heads.vocabulary)
            features = await self._features(masked)
            if reading is not None:
                return Plan(self._solution_of(reading), reading, features)
            combination, confidence = self.heads.plan(features, [masked])[0]
            if combination == OUT_OF_SCOPE:
                return Plan("", combination, features)
            ranked = self.heads.ranked(features, ALTERNATIVES + 1, [masked])[0]
            alternatives = tuple((c, p) for c, p in ranked if c != combination)[:ALTERNATIVES]
            return Plan(self._solution_of(combination), combination, features, round(confidence, 4), alternatives)
        if reading is not None:
            return Plan(self._solution_of(reading))
        choices = candidate_solutions([h["solution"] for h in hits if h.get("solution")], self.choices, weights=self.tool_weights)
        if len(choices) == 1:
            return Plan(choices[0])
        scores = await self._likelihoods(self.planner, self.serve_settings.planner_model, planner_prompt(query), choices)
        return Plan(choose_solution(choices, scores))

    def _solution_of(self, combination: str) -> str:
        return str(self.combinations.solution(self.combinations.by_id[combination]))

    async def _features(self, text: str) -> np.ndarray:
        """The heads' features of a masked question: the base's (the planner engine's pooling runner),
        followed by the retriever model's vector when the heads were fitted with one."""
        request = embedding_request(self.serve_settings.planner_model, [text])

        async def base() -> np.ndarray:
            vectors = embedding_vectors([r async for r in self.engines["plan"].options(stream=True).embeddings.remote(request, None)])
            return np.asarray(vectors, dtype=np.float32)

        if self.heads.sentence_encoder is None:
            return await base()
        pooled, sentence = await asyncio.gather(base(), self.retriever.embed.remote(text))
        return np.hstack([pooled, np.asarray([sentence], dtype=np.float32)])

    async def _code(self, query: str, plan: Plan, hits: list[dict[str, Any]], trace: RequestLog) -> str:
        """With a heads model: the verified program of the nearest training question of the chosen
        combination (soay/heads.py); otherwise the retrieved programs of the solution ranked by the
        coder's likelihood (as SoAyEval does). The coder writes freely only when neither has a
        program for it (`trace.code_attempts` counts what it writes)."""
        if self.heads is not None and plan.combination is not None:
            programs = self.heads.programs(plan.features, [plan.combination])[0]
            if programs:
                return finish_code(programs[0], query, self.spec, self.heads.vocabulary)
            return await self._generate(query, plan.solution, hits, trace)
        candidates = candidate_programs(plan.solution, hits)
        if candidates:
            return await self._rank(query, plan.solution, candidates, exemplar_for(plan.solution, hits))
        return await self._generate(query, plan.solution, hits, trace)

    async def _refuse(self, query: str, trace: RequestLog, on_stage: StageCallback | None) -> Record:
        # the mentions as the served model reads them (its tagger): who a question for an attribute
        # the API lacks (an h-index, a phone number) is about, for the answer that says so
        mentions = mention_markers(query, self.heads.vocabulary) if self.heads is not None else None
        composed = await self._stage("answer", trace.timings, lambda: self.answer.refuse.remote(query, mentions, self.domain.name), on_stage)
        trace.status, trace.language = "out_of_scope", composed["language"]
        self.metrics.out_of_scope.inc()
        return Record(
            request_id=trace.request_id, query=query, language=composed["language"], solution="", code="", ok=True,
            answer=composed["answer"], timings=trace.timings, kind=composed.get("kind", "out_of_scope"),
        )

    async def _rank(self, query: str, solution: str, candidates: list[str], exemplar: tuple[str, str] | None) -> str:
        prompt = coder_prompt(query, solution, exemplar)
        scores = await self._likelihoods(self.coder, self.serve_settings.coder_model, prompt, candidates)
        return finish_code(choose_program(candidates, scores), query, self.spec)

    async def _likelihoods(self, handle: DeploymentHandle, model: str, prompt: str, candidates: list[str]) -> list[list[float]]:
        """The model's token log-likelihoods of each candidate after `prompt`, in one engine call:
        the prompt alone (its length) and the prompt with each candidate, by prompt logprobs."""
        request = CompletionRequest(
            model=model, prompt=[prompt, *(prompt + target(c) for c in candidates)], max_tokens=1, prompt_logprobs=0, return_token_ids=True,
        )
        responses = [r async for r in handle.completions.remote(request, None)]
        choices = sorted(getattr(responses[0], "choices", None) or [], key=lambda c: c.index) if responses else []
        if len(choices) != len(candidates) + 1:
            completion_text(responses)  # raises the engine's error
            raise EngineError(f"{model} scored {len(choices) - 1} of {len(candidates)} candidates", 500)
        prefix = len(choices[0].prompt_token_ids)
        return [continuation_logprobs(c.prompt_token_ids, c.prompt_logprobs, prefix) for c in choices[1:]]

    async def _generate(self, query: str, solution: str, hits: list[dict[str, Any]], trace: RequestLog) -> str:
        """The coder writes the program (greedy), and once more when the sandbox's AST check refuses
        it; each attempt is counted in `trace.code_attempts` as it starts."""
        exemplars: list[tuple[str, str] | None] = [
            (h["query"], h["code"]) for h in hits if h.get("solution") == solution and h.get("query") and h.get("code")
        ] or [None]
        trace.code_attempts = 1
        code = await self._write(query, solution, exemplars[0], temperature=0.0)
        if code_problem(code, self.spec) is None:
            return code
        # one repair: another neighbour as the example, and sampling to leave the rut
        self.metrics.repairs.inc()
        trace.code_attempts = 2
        return await self._write(query, solution, exemplars[min(1, len(exemplars) - 1)], temperature=self.serve_settings.repair_temperature)

    async def _write(self, query: str, solution: str, exemplar: tuple[str, str] | None, temperature: float) -> str:
        """The coder's program, its first line (the head search) adapted from the example's."""
        head = head_search_line(*exemplar, query, self.spec) if exemplar else ""
        text = await self._complete(
            self.coder, self.serve_settings.coder_model, coder_prompt(query, solution, exemplar) + head, self.code_tokens,
            temperature=temperature, stop=CODER_STOP, skip_special_tokens=False,  # the mention markers are special tokens
        )
        return finish_code(head + text, query, self.spec)

    async def readiness(self) -> dict[str, str]:
        """Each stage "ok" while Serve's controller counts a running replica of it, else its state.

        Why the controller and not a call to each stage: a call waits in the stage's queue behind
        the questions, so under a burst the probe failed and a liveness check would restart healthy
        pods exactly at peak traffic. The controller checks each replica's health on its own
        schedule (the engines' `check_health`), outside the request queues; its view is reused for
        HEALTH_CACHE_S."""
        if not self._view.stages:  # the first probe waits for the controller's answer
            return await self._refresh_status()
        if time.monotonic() - self._view.checked > HEALTH_CACHE_S and self._refreshing is None:
            # later probes never wait: they get the last view while a fresh one is fetched
            self._refreshing = asyncio.ensure_future(self._refresh_status())
        return self._view.stages

    async def _refresh_status(self) -> dict[str, str]:
        try:
            return await asyncio.to_thread(self._view.refresh)
        finally:
            self._refreshing = None

    def _stage_states(self) -> dict[str, str]:
        handles = {"retrieve": self.retriever, "plan": self.engines["plan"], "code": self.engines["code"],
                   "execute": self.executor, "answer": self.answer}
        states = deployment_states(self.app_name, {stage: handle.deployment_name for stage, handle in handles.items()})
        if states["execute"] == "ok":
            self._note_isolation()
        return states

    def _note_isolation(self) -> None:
        """Learn once whether the executor's sandboxes have their OS wall, for the
        `soay_sandbox_os_isolation` gauge (an alert fires on 0) and the health record."""
        if self._isolation is not None:
            return
        try:
            self._isolation = self.executor.isolation.remote().result(timeout_s=HEALTH_CACHE_S * 5)
        except Exception:  # noqa: BLE001 - asked again with the next probe
            return
        self.metrics.sandbox_isolation.set(self._isolation["os_isolation"])

    # --- HTTP -----------------------------------------------------------------------------

    def _reading(self, reading: str | None) -> str | None:
        if reading is not None and reading not in self.combinations.by_id:
            raise HTTPException(422, f"reading: no combination {reading!r} (GET /v1/library lists them)")
        return reading

    def _query(self, query: str) -> str:
        query = plain_text(query).strip()
        if not query:
            raise HTTPException(422, "query is empty")
        if len(query) > self.serve_settings.max_query_chars:
            raise HTTPException(422, f"query is longer than {self.serve_settings.max_query_chars} characters")
        return query

    async def _answer(
        self, endpoint: str, query: str, request_id: str, on_stage: StageCallback | None = None, reading: str | None = None
    ) -> Record:
        """The record of one question. A question is taken on only with a free slot (or a place in
        line, serving/admission.py) and room in the request log; its log record is on disk before
        it is answered, whatever happened to it."""
        if self.logs is not None and self.logs.full():
            raise StageFailed("log", 503, "the request log is full; questions are refused until it drains", LOG_FULL_RETRY_S)
        try:
            async with self.admission.slot():
                return await self._answer_admitted(endpoint, query, request_id, on_stage, reading)
        except Overloaded as exc:
            raise StageFailed("admission", 503, str(exc)) from exc

    async def _answer_admitted(
        self, endpoint: str, query: str, request_id: str, on_stage: StageCallback | None, reading: str | None
    ) -> Record:
        trace = RequestLog(
            request_id=request_id, endpoint=endpoint, query=query, status="failed", models=self.model_versions, reading=reading
        )
        self.metrics.in_flight.labels(endpoint).inc()
        started = time.perf_counter()
        try:
            try:
                record = await asyncio.wait_for(self.ask(query, trace, on_stage), self.serve_settings.request_timeout_s)
            except TimeoutError as exc:
                raise StageFailed("request", 504, f"no answer within {self.serve_settings.request_timeout_s} s") from exc
        except StageFailed as exc:
            trace.status, trace.error = "failed", f"{exc.stage} failed: {exc.message}"
            raise
        except asyncio.CancelledError:
            trace.status, trace.error = "failed", "cancelled: the client went away"
            raise
        finally:
            self.metrics.in_flight.labels(endpoint).dec()
            if self.logs is not None:
                await self._keep(self.logs.log_request, trace)
        self.metrics.request_latency.labels(endpoint).observe(time.perf_counter() - started)
        return record

    async def _keep(self, write: Callable[[Any], None], record: RequestLog | Feedback) -> None:
        """Commit a record to the request log's outbox (an fsync, off the event loop); a full outbox
        is a 503 for the request that made it."""
        try:
            await asyncio.to_thread(write, record)
        except OutboxFull as exc:
            raise StageFailed("log", 503, str(exc), LOG_FULL_RETRY_S) from exc

    def __serve_build_asgi_app__(self) -> Any:
        """The HTTP app, built on the replica so that its limits and key come from the settings."""
        app = FastAPI(title="soay", description="Academic questions answered by SoAy solutions, API code and a sandbox.",
                      responses=EVERY_ROUTE)
        metrics, settings = self.metrics, self.serve_settings
        mount_page(app, self)  # the web page, its static files and its data (serving/page.py)

        def error(status: int, message: str, path: str, headers: dict[str, str] | None = None) -> JSONResponse:
            metrics.requests.labels(route_template(app.router.routes, path), str(status)).inc()
            return JSONResponse({"error": message}, status_code=status, headers=headers)

        @app.exception_handler(RequestValidationError)
        async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
            problems = exc.errors()
            malformed = [e for e in problems if e["type"] == "json_invalid"]
            if malformed:
                return error(400, f"malformed JSON: {malformed[0].get('ctx', {}).get('error', 'cannot parse the body')}", request.url.path)
            text = "; ".join(f"{'.'.join(str(x) for x in e['loc'] if x != 'body') or 'body'}: {e['msg']}" for e in problems)
            return error(422, text, request.url.path)

        @app.exception_handler(HTTPException)
        async def _http(request: Request, exc: HTTPException) -> JSONResponse:
            return error(exc.status_code, str(exc.detail), request.url.path, exc.headers)  # a 405's Allow

        @app.exception_handler(StageFailed)
        async def _stage(request: Request, exc: StageFailed) -> JSONResponse:
            wait = {"Retry-After": retry_after(exc.retry_after_s)} if exc.status == 503 else None
            return error(exc.status, f"{exc.stage} failed: {exc.message}", request.url.path, wait)

        @app.middleware("http")
        async def _auth(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
            """A key from the keys file (or SOAY_SERVE__API_KEY) when there is one, within its rate."""
            if self.keys.required and request.url.path not in PUBLIC_PATHS and not is_page_path(request.url.path):
                key = self.keys.identify(request.headers.get("authorization", "").removeprefix("Bearer ").strip())
                if key is None:
                    return error(401, "missing or wrong API key (Authorization: Bearer <key>)", request.url.path)
                wait = self.keys.wait_s(key)
                if wait > 0:
                    return error(429, f"rate limit of key {key.name!r} reached; try again in {wait:.1f} s", request.url.path,
                                 {"Retry-After": retry_after(wait)})
            return await call_next(request)

        @app.middleware("http")
        async def _request_id(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
            """A request's id is Serve's: its proxy puts X-Request-Id on every request (the client's,
            or a fresh one) and on its response, and names the request in Serve's logs by it. It is
            the key of the request's log record and of its feedback, so it must fit a Feedback."""
            request_id = request.headers.get("x-request-id", "")
            if not 0 < len(request_id) <= MAX_REQUEST_ID_CHARS:
                return error(400, f"X-Request-Id must have 1 to {MAX_REQUEST_ID_CHARS} characters", request.url.path)
            request.state.request_id = request_id
            return await call_next(request)

        @app.get("/healthz", response_model=Health, responses={503: {"description": "A stage has no running replica", "model": Health}})
        async def healthz() -> JSONResponse:
            status, body = health_body(await self.readiness(), settings.model_name)
            body["sandbox"] = None if self._isolation is None else (self._isolation["isolation"] if self._isolation["os_isolation"]
                                                                     else f"none: {self._isolation['reason']}")
            return JSONResponse(body, status_code=status)

        @app.get("/metrics", response_class=PrometheusText)
        async def prometheus() -> PrometheusText:
            return PrometheusText(metrics.render())

        @app.get("/v1/models", responses=KEYED)
        async def models() -> dict[str, Any]:
            return {"object": "list", "data": [{"id": settings.model_name, "object": "model", "owned_by": "soay"}]}

        @app.post("/v1/ask", response_model=Record, responses=ANSWERING)
        async def ask(body: AskRequest, request: Request) -> dict[str, Any]:
            record = await self._answer("/v1/ask", self._query(body.query), request.state.request_id, reading=self._reading(body.reading))
            metrics.requests.labels("/v1/ask", "200").inc()
            return record.model_dump()

        @app.post("/v1/chat/completions", response_model=None, responses={
            **ANSWERING, **error_responses(404), 200: {"content": {"text/event-stream": {"schema": {"type": "string"}}}}})
        async def chat(body: ChatRequest, request: Request) -> dict[str, Any] | StreamingResponse:
            if body.model != settings.model_name:
                raise HTTPException(404, f"unknown model {body.model!r}; this service serves {settings.model_name!r}")
            query = self._query(body.query())
            if not body.stream:
                record = await self._answer("/v1/chat/completions", query, request.state.request_id)
                metrics.requests.labels("/v1/chat/completions", "200").inc()
                return chat_completion(settings.model_name, record)
            metrics.requests.labels("/v1/chat/completions", "200").inc()
            return StreamingResponse(self._stream(query, request.state.request_id), media_type="text/event-stream")

        @app.post("/v1/feedback", status_code=202, responses=WITH_BODY)
        async def feedback(body: FeedbackRequest) -> dict[str, str]:
            if self.logs is None:
                raise HTTPException(503, "feedback is not recorded: the log stream is off (kafka.log_requests)")
            if body.choice is not None and (body.verdict != "bad" or body.choice not in self.combinations.by_id):
                raise HTTPException(422, "choice: give it with verdict 'bad', as the combination of one of the answer's alternatives")
            await self._keep(self.logs.log_feedback, Feedback(**body.model_dump()))
            metrics.requests.labels("/v1/feedback", "202").inc()
            return {"status": "accepted"}

        return BodySizeLimit(app, settings.max_body_bytes)

    async def _stream(self, query: str, request_id: str) -> AsyncIterator[str]:
        """SSE chunks: the role at once (the client knows it was heard), then the answer when the
        pipeline has it, then the end with the whole record under `soay`."""
        chunk_id, model = f"chatcmpl-{request_id}", self.serve_settings.model_name

        def event(data: dict[str, Any]) -> str:
            return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"

        yield event(chat_chunk(chunk_id, model, {"role": "assistant", "content": ""}))
        try:
            record = await self._answer("/v1/chat/completions", query, request_id)
        except StageFailed as exc:
            yield event({"error": {"message": f"{exc.stage} failed: {exc.message}", "code": exc.status}})
        else:
            for word in record.answer.split(" "):
                yield event(chat_chunk(chunk_id, model, {"content": word + " "}))
            yield event(chat_chunk(chunk_id, model, {}, "stop", soay=record.model_dump()))
        yield "data: [DONE]\n\n"


_TERMINAL_CODES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-_]|[\x00-\x08\x0b-\x1f\x7f]")


def plain_text(query: str) -> str:
    """The question without terminal escape sequences and control characters, which a question
    pasted from a terminal carries ("\x1b[31m"): left in, "31m" was read as a name to search."""
    return _TERMINAL_CODES.sub(lambda m: " " if len(m.group(0)) == 1 else "", query)


def stage_options(settings: ServeSettings) -> dict[str, Any]:
    """How every light stage scales and how much it takes on at once."""
    return {
        "autoscaling_config": {
            "min_replicas": settings.min_replicas,
            "max_replicas": settings.max_replicas,
            "target_ongoing_requests": settings.target_ongoing_requests,
        },
        "max_ongoing_requests": settings.max_ongoing_requests,
        **({"max_replicas_per_node": settings.max_replicas_per_node} if settings.max_replicas_per_node else {}),
        **settings.rollout_options(),  # a model swap drops no request (serving/rollout.py)
    }


def build_app(settings: Settings) -> Application:
    """The whole application, composed from the settings: what runs, how many, on what."""
    serve_settings = settings.serve
    engines = engine_deployments(serve_settings, serve_settings.model_path(settings.data))
    options = stage_options(serve_settings)
    # every ingress replica of a node writes its metrics to one directory, so any of them answers
    # /metrics with the application's totals (serving/metrics.py); the other stages export none
    shared_metrics = {"runtime_env": {"env_vars": {MULTIPROC_ENV: str(metrics_dir(serve_settings.port))}}}
    # questions wait in the ingress's own line (serving/admission.py), so Serve lets through every
    # question it may hold plus room for health probes and metrics
    line = serve_settings.max_queued_requests if serve_settings.max_queued_requests >= 0 else UNBOUNDED_LINE
    ingress_options = {**options, "max_ongoing_requests": serve_settings.max_ongoing_requests + min(line, UNBOUNDED_LINE) + INGRESS_HEADROOM}
    return Ingress.options(
        # the line is the ingress's own; Serve's proxy queue only rides out moments when the router
        # cannot see a replica's load (its probe waits on a busy event loop), so it is generous
        **ingress_options, max_queued_requests=INGRESS_HEADROOM,
        backpressure_config=BackpressureConfig(status_code=503, retry_after_s=1.0), ray_actor_options={**Ingress.ray_actor_options, **shared_metrics},
    ).bind(
        settings,
        stable(retriever_app(settings)),
        engines["planner"],
        engines["coder"],
        # the executor runs programs on the corpus or the live API: the served model is none of its business
        stable(Executor.options(**options).bind(settings=settings), settings.model_dump(mode="json", exclude={"serve": {"model_dir"}})),
        stable(AnswerComposer.options(**options).bind(scope=scope_of(domain_for(settings), settings.data.dataset_path()))),
    )


SOURCE_ROOT = Path(__file__).resolve().parents[1]
SOURCE_PACKAGES = ("cli", "cluster", "retriever", "serving", "soay", "training")
"""Where the stack's sources are, and its packages (a light stage's version digests them)."""


def stable(app: Application, what: Any = None) -> Application:
    """A light stage (bound by keyword) whose Serve code version changes only with `what` (its init
    arguments when not given) and with this checkout's sources.

    Without a version, every `serve.run` gives each deployment a random one and restarts it: a swap
    (serving/rollout.py), which changes the model and so the ingress alone (it holds the heads), also
    restarted the retriever, the executor and the answer composer, three replicas starting beside
    the old ones for nothing (the engines are versioned by their configuration: serving/llm.py
    `versioned`). The sources are in the version so that a deploy of changed code still restarts
    them, as the random version did."""
    init = app._bound_deployment.init_kwargs
    payload = json.dumps({"init": init if what is None else what, "code": _sources_digest()}, sort_keys=True, default=repr)
    return with_version(app, hashlib.sha256(payload.encode()).hexdigest()[:16], **init)


@functools.cache
def _sources_digest() -> str:
    """A digest of the stack's Python sources as this process reads them."""
    digest_ = hashlib.sha256()
    for package in SOURCE_PACKAGES:
        for path in sorted((SOURCE_ROOT / package).rglob("*.py")):
            digest_.update(str(path.relative_to(SOURCE_ROOT)).encode() + b"\0" + path.read_bytes())
    return digest_.hexdigest()


def deploy(settings: Settings) -> str:
    """Deploy the application on the connected Ray (local or a cluster) and return its URL;
    returns once every replica is up."""
    serve.start(http_options={"host": settings.serve.host, "port": settings.serve.port})
    reset_metrics_dir(metrics_dir(settings.serve.port))
    serve.run(build_app(settings), name=APP_NAME, route_prefix="/")
    return f"http://{settings.serve.host}:{settings.serve.port}"
