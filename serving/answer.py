"""The answer composer: the sandbox's `final_result` as a sentence in the question's language.

It says plainly when nothing was found (the program failed, or found nothing) rather than show an
empty value, because a person asked a question, not for a Python object. Deterministic templates,
not a model: the facts come from the environment only, so the sentence cannot invent any.
"""

from __future__ import annotations

import re
import zlib
from typing import Any

from ray import serve

from retriever.documents import language_of
from soay.mentions import mention_markers
from soay.outcomes import agrees, analyse
from soay.unsupported import Attribute, catalogue, find_attribute, strip_attribute

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
MAX_ITEMS = 10
"""Listed items in a sentence; the rest are counted, and the full result stays in the record."""

_TEXT = {
    "en": {
        "none": "I could not find an answer to this question.",
        "empty": "None: the program ran and found no item that matches the question.",
        "failed": "I could not find an answer to this question: {reason}.",
        "not_found": "No {entity} {what} was found.",
        "closest": " The closest are: {candidates}.",
        "named": "named “{value}”",
        "matching": "matching “{value}”",
        "ambiguous": "Several {entities} {what}: {candidates}.{unmet} Which one do you mean? Ask again with one of them, e.g. with the organisation.",
        "unmet": " None of them is {what}.",
        "entities": "{entity}s are",
        "qualifier": {"organization": "at “{value}”", "interest": "working on “{value}”", "*": "with {param} “{value}”"},
        "candidate": "{name} ({details})",
        "detail_sep": "; ",
        "value": "The answer is {value}.",
        "list": "The answer is: {items}.",
        "more": "{items} and {n} more",
        "sep": ", ",
        "out_of_scope": "That is not something I can answer. {description} For example: “{first}” or “{second}”",
        "unsupported": "The {api} has no {attribute} for a {entity}. About {name} it can tell: {can_tell}.",
    },
    "zh": {
        "none": "抱歉，没有找到这个问题的答案。",
        "empty": "没有：程序已运行，但没有符合问题条件的结果。",
        "failed": "抱歉，没有找到这个问题的答案：{reason}。",
        "not_found": "没有找到{what}的{entity}。",
        "closest": "最接近的是：{candidates}。",
        "named": "名为“{value}”",
        "matching": "与“{value}”匹配",
        "ambiguous": "有多位{what}的{entity}：{candidates}。{unmet}请问您指的是哪一位？可以带上其中一位的信息（例如单位）再问一次。",
        "unmet": "其中没有{what}的。",
        "entities": "{entity}",
        "qualifier": {"organization": "单位为“{value}”", "interest": "研究兴趣为“{value}”", "*": "{param}为“{value}”"},
        "candidate": "{name}（{details}）",
        "detail_sep": "；",
        "value": "答案是{value}。",
        "list": "答案是：{items}。",
        "more": "{items}等（另有{n}项）",
        "sep": "、",
        "out_of_scope": "这个问题我无法回答。{description}例如：“{first}”或“{second}”",
        "unsupported": "{api} 没有{entity}的{attribute}。关于{name}，它可以提供：{can_tell}。",
    },
}


ERRORS = {
    "en": {
        "policy": "the program written for it tried to do something that is not allowed",
        "timeout": "the program written for it took too long to run",
        "memory": "the program written for it needed more memory than it may use",
        "recursion": "the program written for it called itself too many times over",
        "runtime": "the program written for it stopped with an error while running",
        "output_too_large": "the program written for it produced a result too large to return",
        "no_result": "the program written for it finished without producing an answer",
        "crash": "the program written for it crashed",
        "rejected": "the program written for it made a call to {api} that the service rejected",
        "*": "the program written for it failed",
    },
    "zh": {
        "policy": "为它生成的程序试图执行不被允许的操作",
        "timeout": "为它生成的程序运行时间过长",
        "memory": "为它生成的程序占用的内存超出了限制",
        "recursion": "为它生成的程序递归调用层数过深",
        "runtime": "为它生成的程序在运行中出错",
        "output_too_large": "为它生成的程序返回的结果过大",
        "no_result": "为它生成的程序运行结束却没有给出答案",
        "crash": "为它生成的程序意外崩溃",
        "rejected": "为它生成的程序对 {api} 的调用被服务拒绝",
        "*": "为它生成的程序运行失败",
    },
}
"""An execution error in words a person understands, by category (the category itself stays in
the record's `error_type`, for operators)."""

ENTITY_ZH = {"scholar": "学者", "publication": "论文", "movie": "电影", "actor or director": "演员或导演"}


def describe_error(language: str, error_type: str | None, trace: list[dict[str, Any]] | None = None) -> str:
    """Why the program failed, as a clause of the "failed" sentence."""
    errors = ERRORS[language]
    failed_call = next((c for c in reversed(trace or []) if "error" in c), None)
    if error_type == "runtime" and failed_call is not None:
        return errors["rejected"].format(api=failed_call.get("api", "an API"))
    return errors.get(error_type or "*", errors["*"])


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
    language = language_of(query)
    text = _TEXT[language]
    if not ok:
        return text["failed"].format(reason=describe_error(language, error_type))
    if isinstance(result, (list, tuple, dict)) and not result:  # a filter kept nothing: an answer, not a failure
        return text["empty"]
    if result is None or result == "":
        return text["none"]
    if isinstance(result, list):
        items = text["sep"].join(_render(v, text["sep"]) for v in result[:MAX_ITEMS])
        if len(result) > MAX_ITEMS:
            items = text["more"].format(items=items, n=len(result) - MAX_ITEMS)
        return text["list"].format(items=items)
    return text["value"].format(value=_render(result, text["sep"]))


def _entity(language: str, label: str) -> str:
    return ENTITY_ZH.get(label, label) if language == "zh" else label


def _named_first(args: dict[str, Any]) -> list[tuple[str, str]]:
    """A search's text arguments, the name (or the first one) first, then the narrowing ones."""
    given = [(k, v) for k, v in args.items() if isinstance(v, str) and v.strip()]
    return sorted(given, key=lambda kv: not (kv[0] == "name" or kv[0].endswith("_name")))


def _searched(language: str, args: dict[str, Any]) -> str:
    """What a search was asked, as words: “named “Zzyzx Qwerty” at “Nowhere University””."""
    text = _TEXT[language]
    given = _named_first(args)
    if not given:
        return ""
    (first, value), rest = given[0], given[1:]
    head = text["named"] if first == "name" or first.endswith("_name") else text["matching"]
    return _joined(language, [head.format(value=value), *_qualifiers(language, rest)])


def _qualifiers(language: str, given: list[tuple[str, str]]) -> list[str]:
    """Narrowing arguments as words: “at “Nowhere University””, “working on “robotics””."""
    templates = _TEXT[language]["qualifier"]
    return [templates.get(param, templates["*"]).format(param=param, value=value) for param, value in given]


def _joined(language: str, parts: list[str]) -> str:
    return ("、" if language == "zh" else " ").join(parts)


def _unmet(args: dict[str, Any], candidates: list[dict[str, Any]]) -> dict[str, Any]:
    """The narrowing arguments of a namesakes' search that none of the namesakes agrees with
    ("Anna Schmidt at ETH Zurich" when both are elsewhere): said as such, never as theirs."""
    name_field = next((k for k in ("name", "title") if any(k in c for c in candidates)), "name")
    return {k: v for k, v in _named_first(args)[1:] if candidates and not any(agrees(v, c, name_field) for c in candidates)}


def _candidate(language: str, record: dict[str, Any]) -> str:
    text = _TEXT[language]
    name = next((record[k] for k in ("name", "title") if isinstance(record.get(k), str)), "?")
    details = [str(record[k]) for k in ("organization", "year", "venue") if record.get(k)]
    interests = record.get("interests")
    if isinstance(interests, list) and interests:
        details.append(text["sep"].join(str(i) for i in interests[:3]))
    return text["candidate"].format(name=name, details=text["detail_sep"].join(details)) if details else str(name)


def _swap(text: str, old: str, new: str) -> str | None:
    """`text` with its first `old` (any case) replaced by `new`; None when it does not hold it."""
    start = text.lower().find(old.lower()) if old else -1
    return None if start < 0 else text[:start] + new + text[start + len(old) :]


def _ask_again(query: str, language: str, searched: str, candidates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The candidates, each with the question asked again about it (`question`) where its
    organisation tells it from the others: the searched name followed by “at <organisation>”
    (Chinese: the organisation before the name)."""
    organizations = [c.get("organization") for c in candidates]
    start = query.lower().find(searched.lower()) if searched else -1
    out = []
    for c in candidates:
        c = dict(c)
        org = c.get("organization")
        if start >= 0 and isinstance(org, str) and org and organizations.count(org) == 1 and org.lower() not in query.lower():
            name = query[start : start + len(searched)]
            named = f"{org}的{name}" if language == "zh" else f"{name} at {org}"
            c["question"] = query[:start] + named + query[start + len(searched) :]
        out.append(c)
    return out


def _ask_about_closest(
    query: str, language: str, args: dict[str, Any], candidates: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The closest candidates of a name (or title) nobody carries, each with the question asked
    again about it (`question`): its own name for the searched one, its organisation for the one
    given (or, for namesakes among them, added as `_ask_again` does), so that asking it asks about
    someone who exists."""
    given = _named_first(args)
    searched = given[0][1] if given else ""
    organization = next((v for k, v in given[1:] if k == "organization"), None)
    names = [c.get("name") or c.get("title") for c in candidates]
    out = []
    for c, name in zip(candidates, names):
        c = dict(c)
        org = c.get("organization")
        question = _swap(query, searched, name) if isinstance(name, str) and name else None
        if question is not None and organization and isinstance(org, str) and org:
            question = _swap(question, organization, org)
        elif question is not None and isinstance(org, str) and org and names.count(name) > 1:
            question = _ask_again(question, language, name, [c])[0].get("question", question)
        if question is not None and question != query:
            c["question"] = question
        out.append(c)
    return out


def compose_outcome(
    query: str, ok: bool, result: Any, error_type: str | None = None,
    trace: list[dict[str, Any]] | None = None, searches: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The answer to `query` from a run and its call trace (soay/outcomes.py): a name that matched
    nobody or several entities is said as such (a name the search found only others for, with
    the closest of them: never someone else's facts), a failure in words, and every answer carries
    the explanation of how it was obtained. `searches`: the search APIs with the label of what
    they find (`fuzzy_apis(spec)`). Returns answer, language, kind, candidates, explanation."""
    language = language_of(query)
    text = _TEXT[language]
    outcome = analyse(trace or [], ok, result, searches)
    label = _entity(language, (searches or {}).get(outcome.api or "", "scholar" if (outcome.api or "").endswith("Person") else "result"))
    unmet = _unmet(outcome.args, outcome.candidates or []) if outcome.kind == "ambiguous" else {}
    if outcome.kind == "not_found":
        answer = text["not_found"].format(entity=label, what=_searched(language, outcome.args)).replace("  ", " ")
        if outcome.closest and outcome.candidates:  # found, but others than the one asked for
            closest = text["sep"].join(_candidate(language, c) for c in outcome.candidates)
            answer += text["closest"].format(candidates=closest)
    elif outcome.kind == "ambiguous":
        met = {k: v for k, v in outcome.args.items() if k not in unmet}
        said = text["unmet"].format(what=_joined(language, _qualifiers(language, list(unmet.items())))) if unmet else ""
        candidates = text["sep"].join(_candidate(language, c) for c in outcome.candidates or [])
        answer = text["ambiguous"].format(
            entities=text["entities"].format(entity=label), entity=label, what=_searched(language, met), candidates=candidates, unmet=said
        )
    elif not ok:
        answer = text["failed"].format(reason=describe_error(language, error_type, trace))
    else:
        answer = compose_answer(query, ok, result, error_type)
    candidates = outcome.candidates
    if candidates and (outcome.closest or unmet):
        candidates = _ask_about_closest(query, language, outcome.args, candidates)
    elif candidates:
        searched = next((v for _, v in _named_first(outcome.args)), "")
        candidates = _ask_again(query, language, searched, candidates)
    return {
        "answer": answer, "language": language, "kind": outcome.kind,
        "candidates": candidates, "explanation": outcome.explanation,
    }


def refusal(query: str, scope: dict[str, dict[str, Any]]) -> str:
    """What this service can answer (`scope`, serving/page.py `scope_of`), with two of its example
    questions, in the question's language: an out-of-scope question gets something true and useful
    instead of a failed program."""
    language = language_of(query)
    part = scope.get(language) or next(iter(scope.values()))  # an imported API may have phrasings in one language only
    examples = part["examples"]
    k = zlib.crc32(query.encode()) % len(examples)  # different questions see different examples
    return _TEXT[language]["out_of_scope"].format(
        description=part["description"], first=examples[k], second=examples[(k + 1) % len(examples)]
    )


def missing_attribute(query: str, mentions: dict[str, str] | None = None, domain: str | None = None) -> tuple[Attribute, str] | None:
    """(the attribute, the name asked about) when `query` asks for an attribute of a scholar that
    the API does not have (soay/intents/unsupported_attributes.yaml: an h-index, a phone number,
    an age...); None otherwise, and for a question that names nobody ("How old is the universe?").
    `mentions`: the question's mentions with their markers (soay/mentions.py mention_markers, the
    served model's tagger where it has one; the rules when None): the first name or title is who
    is asked about, organisations and fields are not read for attribute words. `domain`: the
    served domain; the data file is written for one (aminer), any other gets None."""
    data = catalogue()
    if domain is not None and domain != data.domain:
        return None
    markers = mention_markers(query) if mentions is None else mentions
    named = [text for text, marker in markers.items() if marker.startswith("<|e")]
    if mentions is None:  # the rules take any capitalised word for a mention: one word may be a company ("Baidu")
        named = [text for text in named if len(text.split()) > 1 or _CJK.search(text)]
    attribute = find_attribute(query, [text for text, marker in markers.items() if not marker.startswith("<|e")])
    if attribute is None:
        return None
    name = next((n for n in (strip_attribute(text, attribute) for text in named) if n), None)
    return (attribute, name) if name else None


def compose_refusal(
    query: str, scope: dict[str, dict[str, Any]], mentions: dict[str, str] | None = None, domain: str | None = None,
) -> dict[str, Any]:
    """The answer to a question the planner refused, in the question's language: for one asking
    for an attribute the API does not have (`missing_attribute`), what is missing and what can
    be told about the person instead (kind "unsupported", with `attribute` its id), never another
    attribute; for any other, what this service can answer (`refusal`, kind "out_of_scope")."""
    language = language_of(query)
    missing = missing_attribute(query, mentions, domain)
    if missing is None:
        return {"answer": refusal(query, scope), "language": language, "kind": "out_of_scope", "attribute": None}
    attribute, name = missing
    data = catalogue()

    def said(words: dict[str, str]) -> str:
        return words.get(language) or next(iter(words.values()))

    answer = _TEXT[language]["unsupported"].format(
        api=said(data.api), attribute=attribute.name(language), entity=said(data.entity), name=name, can_tell=said(data.can_tell),
    )
    return {"answer": answer, "language": language, "kind": "unsupported", "attribute": attribute.id}


@serve.deployment(name="answer", ray_actor_options={"num_cpus": 0.25})
class AnswerComposer:
    """The composer as its own autoscaled stage, so a later model-written answer can replace the
    templates without touching the pipeline."""

    def __init__(self, scope: dict[str, dict[str, Any]]) -> None:
        self.scope = scope

    async def compose(self, query: str, ok: bool, result: Any, error_type: str | None = None) -> dict[str, str]:
        return {"answer": compose_answer(query, ok, result, error_type), "language": language_of(query)}

    async def explain(
        self, query: str, outcome: dict[str, Any], searches: dict[str, str] | None = None
    ) -> dict[str, Any]:
        """The answer from an executor outcome (ok, result, error_type, trace), with its kind
        ("answer", "not_found", "ambiguous"), candidates and explanation (`compose_outcome`)."""
        return compose_outcome(
            query, outcome["ok"], outcome.get("result"), outcome.get("error_type"), outcome.get("trace"), searches
        )

    async def refuse(self, query: str, mentions: dict[str, str] | None = None, domain: str | None = None) -> dict[str, Any]:
        """The answer to a refused question, with its kind ("out_of_scope" or "unsupported"):
        `compose_refusal`."""
        return compose_refusal(query, self.scope, mentions, domain)
