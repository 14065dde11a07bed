"""The tagger's training questions: the domain's training phrasings filled with open-world values,
and the training triplets' own questions, each with the spans of what was filled in.

A template says exactly where each value goes, so every generated question comes with its spans
for free: no question is labelled by hand. Only training phrasings are used (soay/splits.py), so
the held-out test and validation wordings stay unseen by the tagger as by the planner.
"""

from __future__ import annotations

import random
import string
from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import Any

from soay.combinations import CombinationSet
from soay.splits import TRAIN, phrasings_for
from soay.tagging.tagger import TaggedQuestion
from soay.tagging.values import open_world, span_type, value_for

_FORMATTER = string.Formatter()


def fill(template: str, values: dict[str, str]) -> TaggedQuestion:
    """`template` with its placeholders replaced by `values`, and the span of each."""
    text, spans = "", []
    for literal, field, _, _ in _FORMATTER.parse(template):
        text += literal
        if field is not None:
            value = values[field]
            spans.append((len(text), len(text) + len(value), span_type(field)))
            text += value
    return TaggedQuestion(text, spans)


def placeholders(template: str) -> set[str]:
    return {field for _, field, _, _ in _FORMATTER.parse(template) if field}


HONORIFIC_SHARE = 0.2
"""The share of names the tagger's questions address with a title ("王磊老师", "Prof. Okafor")."""


def _honorific(question: TaggedQuestion, language: str, rng: random.Random) -> TaggedQuestion:
    """`question` with a title beside some of its names, outside their spans: after a name in
    Chinese, before it in English."""
    titles = open_world()["person"]["honorific"][language]
    text, spans, shift = question.text, [], 0
    for start, end, kind in question.spans:
        start, end = start + shift, end + shift
        if kind == "name" and rng.random() < HONORIFIC_SHARE:
            title = rng.choice(titles)
            if language == "zh":
                text = text[:end] + title + text[end:]
            else:
                text = text[:start] + title + " " + text[start:]
                start, end = start + len(title) + 1, end + len(title) + 1
            shift += len(title) + (language != "zh")
        spans.append((start, end, kind))
    return TaggedQuestion(text, spans)


CASUAL_SHARE = 0.15
"""The share of the tagger's questions written all in lower case."""


def _casual(question: TaggedQuestion, rng: random.Random) -> TaggedQuestion:
    """Some people type everything in lower case, names included ("papers by wei zhang")."""
    return TaggedQuestion(question.text.lower(), question.spans) if rng.random() < CASUAL_SHARE else question


def keyword_questions(count: int, seed: int = 0) -> list[TaggedQuestion]:
    """`count` keyword questions of the academic domain (open_world.yaml `keyword_questions`),
    half in each language: entities side by side with a keyword and no connecting word."""
    data = open_world()["keyword_questions"]
    rng = random.Random(seed)
    out = []
    for i in range(count):
        language = ("en", "zh")[i % 2]
        template = rng.choice(data["frames"][language])
        values = {p: value_for(p, rng, language) for p in sorted(placeholders(template) - {"keyword"})}
        question = fill(template.replace("{keyword}", rng.choice(data["keyword"][language])), values)
        out.append(_casual(_honorific(question, language, rng), rng))
    return out


MAX_OWN_QUESTIONS = 4000
"""Training triplets whose own questions (corpus values) join the open-world ones, taken evenly:
enough to keep the corpus's names tagged, few enough that the open-world fillings dominate.
2000 (run n10) left the generated test's held-out phrasings at 87.7 (benchmarks/REPORT-model.md)."""


def tagged_questions(
    combinations: CombinationSet, triplets: Iterable[Any] = (), per_template: int = 4, seed: int = 0,
    extra: Iterable[TaggedQuestion] = (),
) -> Iterator[TaggedQuestion]:
    """Each training phrasing filled `per_template` times with open-world values (a placeholder
    without a generator, such as a movie's year, takes a value the training triplets used), then
    up to MAX_OWN_QUESTIONS training triplets' own questions with their inputs' spans, then
    `extra` questions of the domain that no combination phrases (what the API cannot answer)."""
    rng = random.Random(seed)
    triplets = [t for t in triplets if t.split == TRAIN]
    seen: dict[str, list[str]] = defaultdict(list)
    for t in triplets:
        for placeholder, value in t.inputs.items():
            if isinstance(value, str) and value:
                seen[placeholder].append(value)
    for combination in combinations:
        for language, _, template in phrasings_for(combination, TRAIN):
            for _ in range(per_template):
                values = {
                    p: value_for(p, rng, language, (lambda r, p=p: r.choice(seen[p])) if seen.get(p) else None)
                    for p in sorted(placeholders(template))
                }
                yield _casual(_honorific(fill(template, values), language, rng), rng)
    for t in triplets[:: max(1, len(triplets) // MAX_OWN_QUESTIONS)]:
        spans = []
        for placeholder, value in t.inputs.items():
            start = t.query.find(value) if isinstance(value, str) and value else -1
            if start >= 0:
                spans.append((start, start + len(value), span_type(placeholder)))
        yield TaggedQuestion(t.query, sorted(spans))
    yield from extra
