"""What the retriever indexes: API docs, solution exemplars and past successful traces, as one record.

Exemplars are the training split's (query, solution, code) triplets — the solution library shown
by example — and traces are what served requests solved (long-term memory, as in Cai's thesis:
README, References). Both embed their masked query (soay/mentions.py: names and titles replaced by markers, as the models
read it), so a new question lands near questions with the same intent, not the same names; an API document embeds
its signature and description, for API retrieval in the RESTful-Llama style.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from soay.dataset import iter_triplets
from soay.mentions import mask_code, mask_question
from soay.spec import ApiSpec
from soay.triplets import Triplet

Kind = Literal["api", "exemplar", "trace"]
KINDS: tuple[Kind, ...] = ("api", "exemplar", "trace")
_HAN = re.compile(r"[\u4e00-\u9fff]")


class Document(BaseModel):
    """One indexed item: `text` is what gets embedded, `payload` what a hit hands back."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Kind
    text: str
    payload: dict[str, Any]


class Trace(BaseModel):
    """A past request that was answered correctly; extra log fields are ignored."""

    model_config = ConfigDict(extra="ignore")

    query: str
    solution: str
    code: str
    language: str | None = None


def language_of(text: str) -> str:
    """zh when the text holds Han characters, else en (the two languages of the datasets)."""
    return "zh" if _HAN.search(text) else "en"


def api_documents(spec: ApiSpec) -> list[Document]:
    return [
        Document(
            kind="api",
            text=f"{api.signature()}: {api.description}",
            payload={"name": api.name, "doc": api.description, "signature": api.signature()},
        )
        for api in spec.apis
    ]


def exemplar_documents(triplets: Iterable[Triplet]) -> list[Document]:
    """One document per distinct masked (question, solution, code): questions differing only in
    their entities teach the same thing, and embedding them once keeps the index small."""
    seen: dict[tuple[str, str, str], Document] = {}
    for t in triplets:
        key = (mask_question(t.query), t.solution, mask_code(t.code, t.query))
        if key not in seen:
            payload = {"id": t.id, "query": t.query, "solution": t.solution, "code": t.code, "language": t.language}
            seen[key] = Document(kind="exemplar", text=key[0], payload=payload)
    return list(seen.values())


def trace_document(trace: Trace) -> Document:
    language = trace.language or language_of(trace.query)
    payload = {"query": trace.query, "solution": trace.solution, "code": trace.code, "language": language}
    return Document(kind="trace", text=mask_question(trace.query), payload=payload)


def read_traces(path: Path) -> Iterator[Trace]:
    """Traces from a JSONL file; a missing file is an empty memory, a bad line a clear error."""
    if not path.is_file():
        return
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield Trace.model_validate_json(line)
            except ValidationError as e:
                problems = "; ".join(f"{'.'.join(map(str, x['loc'])) or 'line'}: {x['msg']}" for x in e.errors())
                raise ValueError(f"{path}:{n}: not a trace record ({problems})") from None


def collect_documents(spec: ApiSpec, dataset: Path, traces: Path | None = None) -> list[Document]:
    """Every document of a domain: its API docs, its dataset's train split, its trace log."""
    return [
        *api_documents(spec),
        *exemplar_documents(iter_triplets(dataset, split="train")),
        *(trace_document(t) for t in (read_traces(traces) if traces else ())),
    ]
