"""The service's web page, served by the ingress itself: ask, library and live views.

A person asks a question (English or Chinese) and watches it answered stage by stage through
`POST /v1/ask/stream` (NDJSON: one event per finished stage, then the record or the error); the
library view draws the domain's API graph and solution library from `GET /v1/library`; the live
view reads the service's own `/metrics`. Everything the browser loads (HTML, script, style) comes
from `serving/web/`, so the page works on a machine with no internet.

The page, its static files and `/page.json` (what the page needs before it can ask: the example
questions and whether an API key is required) are public like `/healthz`; the `/v1/` calls keep
requiring the key, which the page asks for and sends as a Bearer token.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, StreamingResponse
from fastapi.staticfiles import StaticFiles
from prometheus_client import Gauge

from serving.errors import StageFailed
from serving.schemas import KEYED, WITH_BODY, AskRequest
from soay.clarifications import is_clarification
from soay.combinations import INTENT_DIR, Combination
from soay.dataset import iter_triplets
from soay.domains import Domain

if TYPE_CHECKING:
    from serving.app import Ingress

log = logging.getLogger(__name__)

WEB_DIR = Path(__file__).parent / "web"
VIEWS = ("/", "/library", "/live")
"""One HTML page with three views; each has its own address so that a link opens the right one."""
STATIC_PREFIX = "/static/"
PAGE_CONFIG = "/page.json"
STREAM_ENDPOINT = "/v1/ask/stream"
SCOPE_EXAMPLES = 3
"""Example questions on the page per language."""


def is_page_path(path: str) -> bool:
    """Paths anyone may load without the API key: the page and its files, nothing that answers."""
    return path in VIEWS or path == PAGE_CONFIG or path.startswith(STATIC_PREFIX)


# --- data the page shows ----------------------------------------------------------------------

@cache
def placeholder_values(domain: str) -> dict[str, str]:
    """The readable value of each template placeholder of `domain` (serving/web/examples.yaml)."""
    values = yaml.safe_load((WEB_DIR / "examples.yaml").read_text(encoding="utf-8")) or {}
    return {k: str(v) for k, v in (values.get(domain) or {}).items()}


def example_question(combination: Combination, language: str, values: dict[str, str]) -> str | None:
    """The combination's held-out phrasing in `language` (the last one, never trained on) with its
    placeholders filled; None when it has no phrasing in that language."""
    templates = combination.templates(language)
    if not templates:
        return None
    return templates[-1].format_map({p: values.get(p, p.replace("_", " ")) for p in combination.placeholders})


def scope_of(domain: Domain, dataset: Path) -> dict[str, dict[str, Any]]:
    """What the service answers, per language: a description and example questions, shown on the
    page and in the refusal of an out-of-scope question (serving/answer.py). The description is
    hand-written for a packaged domain (soay/intents/<domain>.scope.yaml), the spec's for an
    imported one. The examples are, per hop count, a value question of the dataset's training
    split: real names the served model has learnt to answer (never a validation or test question).
    Invented names read well but the model refused them or the search found nobody. Only a
    combination's first phrasing (its plainest, a whole sentence: keyword and informal wordings
    read as search queries) with an answer that is not empty is offered: an example that answers
    "nothing" teaches a newcomer nothing."""
    path = INTENT_DIR / f"{domain.name}.scope.yaml"
    written = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else {}
    plainest = {c.template_id(lang, 0) for c in domain.combinations for lang in c.phrasings}
    by_language: dict[str, dict[int, str]] = {}
    for t in iter_triplets(dataset, split="train"):
        if t.template_id in plainest and t.answer not in (None, "", [], {}) and not is_clarification(t.answer):
            by_language.setdefault(t.language, {}).setdefault(t.hops, t.query)
    description = " ".join(domain.spec.description.split())
    return {
        language: {"description": written.get(language, {}).get("description", description), "examples": [q for _, q in sorted(examples.items())]}
        for language, examples in sorted(by_language.items())
    }


def page_examples(scope: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The questions offered to click: the scope's first few per language."""
    return [{"question": q, "language": language} for language, part in scope.items() for q in part["examples"][:SCOPE_EXAMPLES]]


def library_data(domain: Domain) -> dict[str, Any]:
    """The API graph (APIs, couplings, heads) and the solution library with each solution's
    combinations and an example question of each, in both languages."""
    graph, values = domain.library.graph, placeholder_values(domain.name)
    by_solution: dict[str, list[Combination]] = {}
    for c in domain.combinations:
        by_solution.setdefault(c.solution, []).append(c)
    return {
        "domain": domain.name,
        "description": domain.spec.description,
        "apis": [
            {"name": a.name, "description": " ".join(a.description.split()), "params": [p.name for p in a.params],
             "returns": a.returns, "entity": a.entity, "head": a.name in graph.heads}
            for a in domain.spec.apis
        ],
        "edges": [
            {"src": c.src, "dst": c.dst, "param": c.param, "attribute": ".".join(c.path), "relation": c.relation}
            for couplings in graph.edges.values() for c in couplings
        ],
        "solutions": [
            {"solution": str(s), "apis": list(s.apis), "hops": s.hops, "combinations": [
                {"id": c.id, "kind": c.kind, "inputs": list(c.inputs), "output": c.output,
                 "examples": {lang: q for lang in ("en", "zh") if (q := example_question(c, lang, values))}}
                for c in by_solution.get(str(s), [])
            ]}
            for s in domain.library
        ],
    }


def trained_on(checkpoint: str) -> str:
    """The day a checkpoint was written (YYYY-MM-DD, local time): its run.json's modification time,
    else its folder's; empty when neither can be read. The live view shows it beside the run's name."""
    from datetime import datetime

    path = Path(checkpoint)
    try:
        return datetime.fromtimestamp(((path / "run.json") if (path / "run.json").is_file() else path).stat().st_mtime).strftime("%Y-%m-%d")
    except OSError:
        return ""


# --- the streaming ask --------------------------------------------------------------------------

def stage_event(stage: str, seconds: float, made: Any) -> dict[str, Any]:
    """What the page shows of a finished stage: its time and the part it made (not the retrieved
    exemplars themselves, only how many)."""
    event: dict[str, Any] = {"type": "stage", "stage": stage, "seconds": seconds}
    if stage == "retrieve":
        event["exemplars"] = len(made)
    elif stage == "plan":
        event.update(solution=made.solution, combination=made.combination)
    elif stage == "code":
        event["code"] = made
    elif stage == "execute":
        event.update(ok=made["ok"], error_type=made["error_type"])
    elif stage == "answer":
        event["answer"] = made["answer"]
    return event


async def stream_ask(ingress: Ingress, query: str, request_id: str) -> AsyncIterator[str]:
    """NDJSON events of one question: each stage as it finishes, then `record` (the same record as
    `POST /v1/ask`) or `error` (with the status `/v1/ask` would have answered). A client that goes
    away cancels the request, which is logged as such."""
    events: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

    async def answer() -> None:
        try:
            record = await ingress._answer(STREAM_ENDPOINT, query, request_id, lambda *done: events.put_nowait(stage_event(*done)))
            events.put_nowait({"type": "record", "record": record.model_dump()})
        except StageFailed as exc:
            ingress.metrics.requests.labels(STREAM_ENDPOINT, str(exc.status)).inc()
            events.put_nowait({"type": "error", "status": exc.status, "error": f"{exc.stage} failed: {exc.message}"})
        except Exception as exc:  # noqa: BLE001 - the response has started: the error can only be an event
            log.exception("streamed ask %s failed", request_id)
            ingress.metrics.requests.labels(STREAM_ENDPOINT, "500").inc()
            events.put_nowait({"type": "error", "status": 500, "error": f"{type(exc).__name__}: {exc}"})
        finally:
            events.put_nowait(None)

    task = asyncio.create_task(answer())
    try:
        while (event := await events.get()) is not None:
            yield json.dumps(event, ensure_ascii=False, default=str) + "\n"
    finally:
        task.cancel()


class NDJSONResponse(StreamingResponse):
    """The streaming ask's events, one JSON object a line; the class names the media type in the
    OpenAPI document too."""

    media_type = "application/x-ndjson"


# --- routes -----------------------------------------------------------------------------------------

def mount_page(app: FastAPI, ingress: Ingress) -> None:
    """Add the page, its files and its endpoints to the ingress's app, and publish the served
    model versions as `soay_model_info` (the live view reads them from /metrics)."""
    domain, settings = ingress.domain, ingress.serve_settings
    graph_and_library, scope = library_data(domain), scope_of(domain, ingress.dataset)  # fixed for the life of the replica
    models = Gauge("soay_model_info", "The checkpoint each model name serves, and the day it was trained (constant 1)", ["model", "path", "trained"],
                   registry=ingress.metrics.registry, multiprocess_mode="livemax")  # the replicas of one checkpoint are one series; a stopped replica's leaves
    for model, path in ingress.model_versions.items():
        models.labels(model, path, trained_on(path)).set(1)
    index = WEB_DIR / "index.html"

    async def page() -> FileResponse:
        return FileResponse(index, media_type="text/html; charset=utf-8", headers={"Cache-Control": "no-cache"})

    for view in VIEWS:
        app.add_api_route(view, page, methods=["GET"], include_in_schema=False)

    @app.get(PAGE_CONFIG, include_in_schema=False)
    async def page_config() -> dict[str, Any]:
        return {
            "model": settings.model_name, "domain": domain.name, "api_key_required": bool(settings.api_key),
            "max_query_chars": settings.max_query_chars, "examples": page_examples(scope),
            "scope": {language: part.get("description", "") for language, part in scope.items()},
            "apis": [a.name for a in domain.spec.apis],
        }

    @app.get("/v1/library", responses=KEYED)
    async def library() -> dict[str, Any]:
        return graph_and_library

    @app.post(STREAM_ENDPOINT, response_class=NDJSONResponse, responses=WITH_BODY)
    async def ask_stream(body: AskRequest, request: Request) -> NDJSONResponse:
        query = ingress._query(body.query)  # a bad question is refused before the stream starts, as /v1/ask does
        ingress.metrics.requests.labels(STREAM_ENDPOINT, "200").inc()
        return NDJSONResponse(stream_ask(ingress, query, request.state.request_id))

    app.mount(STATIC_PREFIX.rstrip("/"), StaticFiles(directory=WEB_DIR / "static"), name="static")
