"""The answer composer: the sandbox's `final_result` as a sentence in the question's language.

It says plainly when nothing was found (the program failed, or found nothing) rather than show an
empty value, because a person asked a question, not for a Python object. Deterministic templates,
not a model: the facts come from the environment only, so the sentence cannot invent any.
"""

from __future__ import annotations

import zlib
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from ray import serve

from retriever.documents import language_of

MAX_ITEMS = 10
"""Listed items in a sentence; the rest are counted, and the full result stays in the record."""

_TEXT = {
    "en": {
        "none": "I could not find an answer to this question.",
        "failed": "I could not find an answer to this question: the program written for it failed ({reason}).",
        "value": "The answer is {value}.",
        "list": "The answer is: {items}.",
        "more": "{items} and {n} more",
        "sep": ", ",
        "out_of_scope": "That is not something I can answer. {description} For example: “{first}” or “{second}”",
    },
    "zh": {
        "none": "抱歉，没有找到这个问题的答案。",
        "failed": "抱歉，没有找到这个问题的答案：为它生成的程序运行失败（{reason}）。",
        "value": "答案是{value}。",
        "list": "答案是：{items}。",
        "more": "{items}等（另有{n}项）",
        "sep": "、",
        "out_of_scope": "这个问题我无法回答。{description}例如：“{first}”或“{second}”",
    },
}


def _render(value: Any, sep: str) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_render(v, sep)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return sep.join(_render(v, sep) for v in value)
    return str(value)


def compose_answer(query: str, ok: bool, result: Any, error_type: str | None = None) -> str:
    """One sentence answering `query` from an execution outcome, in English or Chinese."""
    text = _TEXT[language_of(query)]
    if not ok:
        return text["failed"].format(reason=error_type or "error")
    if result is None or result == "" or result == [] or result == {}:
        return text["none"]
    if isinstance(result, list):
        items = text["sep"].join(_render(v, text["sep"]) for v in result[:MAX_ITEMS])
        if len(result) > MAX_ITEMS:
            items = text["more"].format(items=items, n=len(result) - MAX_ITEMS)
        return text["list"].format(items=items)
    return text["value"].format(value=_render(result, text["sep"]))


SCOPE_FILE = Path(__file__).resolve().parents[1] / "soay" / "intents" / "scope.yaml"


@cache
def _scope() -> dict[str, Any]:
    return yaml.safe_load(SCOPE_FILE.read_text())


def refusal(query: str) -> str:
    """What this service can answer, with two of its example questions, in the question's language:
    an out-of-scope question gets something true and useful instead of a failed program."""
    language = language_of(query)
    scope = _scope()[language]
    examples = scope["examples"]
    k = zlib.crc32(query.encode()) % len(examples)  # different questions see different examples
    return _TEXT[language]["out_of_scope"].format(
        description=scope["description"], first=examples[k], second=examples[(k + 1) % len(examples)]
    )


@serve.deployment(name="answer", ray_actor_options={"num_cpus": 0.25})
class AnswerComposer:
    """The composer as its own autoscaled stage, so a later model-written answer can replace the
    templates without touching the pipeline."""

    async def compose(self, query: str, ok: bool, result: Any, error_type: str | None = None) -> dict[str, str]:
        return {"answer": compose_answer(query, ok, result, error_type), "language": language_of(query)}

    async def refuse(self, query: str) -> dict[str, str]:
        return {"answer": refusal(query), "language": language_of(query)}
