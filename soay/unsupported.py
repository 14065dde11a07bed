"""Attributes of a scholar that the API does not have (an h-index, a phone number, an age...).

soay/intents/unsupported_attributes.yaml lists them, each with what it is called and the words
that ask for it, in English and Chinese, and phrasings of questions asking for one. Two uses:

* **training**: `training_questions` fills the phrasings with open-world names, organisations and
  fields (soay/tagging/values.py, never the corpus's) as out-of-scope examples of the planner
  (training/fit_heads.py), so that "h-index of Tom Mitchell at CMU" is refused rather than
  answered with another attribute.
* **the refusal**: `find_attribute` tells which missing attribute a refused question asks for,
  so that the answer says what is missing and what can be told instead (serving/answer.py).

All the words are in the data file; nothing here knows an attribute by name.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from soay.tagging.tagger import TaggedQuestion

DATA = Path(__file__).with_name("intents") / "unsupported_attributes.yaml"
LANGUAGES = ("en", "zh")
OWN_SHARE = 0.4
"""Share of the questions drawn from an attribute's own phrasings; the rest fill the shared ones."""
LOWER_SHARE = 0.15
"""Share of the English questions typed all in lower case ("tom mitchell orcid")."""
WILDCARD = ".{1,40}?"
"""What a "*" of a detection phrase stands for: a few words (a name, "the {interest} researcher")."""
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_LATIN = "0-9A-Za-z\u00c0-\u024f"


@dataclass(frozen=True)
class Attribute:
    """One missing attribute: its id, its name per language and its detection patterns."""

    id: str
    names: dict[str, str]
    phrases: tuple[str, ...]
    patterns: tuple[re.Pattern[str], ...]

    def name(self, language: str) -> str:
        return self.names.get(language) or next(iter(self.names.values()))


@dataclass(frozen=True)
class Example:
    """A training question: its text, language, the attribute it asks for and the values filled in."""

    question: str
    language: str
    attribute: str
    values: dict[str, str]


def _pattern(phrase: str) -> re.Pattern[str]:
    """A detection phrase as a pattern over casefolded text: a phrase with CJK characters anywhere,
    one in Latin script as whole words; "*" is a few words."""
    body = WILDCARD.join(re.escape(part.strip()) for part in phrase.casefold().split("*"))
    if _CJK.search(phrase):
        return re.compile(body)
    return re.compile(rf"(?<![{_LATIN}-]){body}(?![{_LATIN}-])")


@dataclass(frozen=True)
class Catalogue:
    """The data file: the domain it is written for, the API's and the entity's names, what can be
    told instead (`can_tell`), the attributes and the raw phrasings."""

    domain: str
    api: dict[str, str]
    entity: dict[str, str]
    can_tell: dict[str, str]
    attributes: tuple[Attribute, ...]
    ignore: tuple[re.Pattern[str], ...]
    raw: dict[str, Any]

    def by_id(self, attribute_id: str) -> Attribute:
        return next(a for a in self.attributes if a.id == attribute_id)


@cache
def catalogue(path: Path = DATA) -> Catalogue:
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    attributes = []
    for attribute_id, by_language in data["attributes"].items():
        phrases: list[str] = []
        for part in by_language.values():
            for phrase in [part["name"], *part.get("ask", []), *part.get("match", [])]:
                if str(phrase).strip() and str(phrase) not in phrases:
                    phrases.append(str(phrase))
        attributes.append(Attribute(
            attribute_id, {language: part["name"] for language, part in by_language.items()}, tuple(phrases),
            tuple(_pattern(p) for p in phrases),
        ))
    ignore = tuple(_pattern(str(p)) for p in data.get("ignore") or [])
    return Catalogue(data["domain"], data["api"], data["entity"], data["can_tell"], tuple(attributes), ignore, data)


def find_attribute(question: str, ignore: list[str] | tuple[str, ...] = (), path: Path = DATA) -> Attribute | None:
    """The missing attribute `question` asks for, or None: the one whose phrase starts first
    (the longest phrase where two start together). `ignore`: texts of the question not to read
    (its organisations and fields: "Patent Office", "Mobile AI Lab"), beside the data file's
    `ignore` phrases ("career age" asks for no age)."""
    data = catalogue(path)
    text = question
    for mention in sorted({m for m in ignore if m}, key=len, reverse=True):
        text = text.replace(mention, " | ")
    text = text.casefold()
    for pattern in data.ignore:
        text = pattern.sub(" | ", text)
    best: tuple[int, int, Attribute] | None = None
    for attribute in data.attributes:
        for pattern in attribute.patterns:
            found = pattern.search(text)
            if found and (best is None or (found.start(), -len(found.group())) < best[:2]):
                best = (found.start(), -len(found.group()), attribute)
    return best[2] if best else None


def strip_attribute(name: str, attribute: Attribute) -> str:
    """A name mention without the attribute's words it ran into ("Tom Mitchell ORCID" -> "Tom
    Mitchell"), as a mention finder may take a capitalised attribute for part of the name."""
    for phrase in sorted(attribute.phrases, key=len, reverse=True):
        if "*" not in phrase:
            name = re.sub(re.escape(phrase), " ", name, flags=re.IGNORECASE)
    return " ".join(name.split()).strip(" ,;:'’-")


def _fill(template: str, rng: random.Random, language: str, attribute: str | None) -> tuple[str, dict[str, str]]:
    from soay.tagging.values import value_for

    values: dict[str, str] = {}
    for slot in re.findall(r"\{(\w+)\}", template):
        if slot not in values:
            values[slot] = attribute if slot == "attribute" and attribute is not None else value_for(slot, rng, language)
    return template.format_map(values), {k: v for k, v in values.items() if k != "attribute"}


def examples(count: int, seed: int = 0, path: Path = DATA) -> list[Example]:
    """`count` distinct questions asking for a missing attribute, English and Chinese in turn and
    the attributes in turn, from each attribute's own phrasings (OWN_SHARE) or the shared ones
    filled with one of its `ask` phrases; names, organisations and fields from the open-world
    generators (soay/tagging/values.py). The same `seed` gives the same questions."""
    data = catalogue(path)
    rng = random.Random(seed)
    out: list[Example] = []
    seen: set[str] = set()
    i = 0
    while len(out) < count and i < 20 * count:
        language = LANGUAGES[i % len(LANGUAGES)]
        attribute = data.attributes[(i // len(LANGUAGES)) % len(data.attributes)]
        i += 1
        part = data.raw["attributes"][attribute.id].get(language)
        if not part:
            continue
        own = part.get("phrasings") or []
        if own and rng.random() < OWN_SHARE:
            question, values = _fill(rng.choice(own), rng, language, None)
        else:
            question, values = _fill(rng.choice(data.raw["phrasings"][language]), rng, language, rng.choice(part["ask"]))
        if language == "en" and rng.random() < LOWER_SHARE:
            question, values = question.lower(), {k: v.lower() for k, v in values.items()}
        if question not in seen:
            seen.add(question)
            out.append(Example(question, language, attribute.id, values))
    return out


def tagged_examples(count: int, seed: int = 0, path: Path = DATA) -> list[TaggedQuestion]:
    """`examples` with the spans of the values they were filled with:
    the mention tagger learns from them that "h-index of", "phone number" or "办公室" is no name."""
    from soay.tagging.tagger import TaggedQuestion
    from soay.tagging.values import span_type

    tagged: list[TaggedQuestion] = []
    for e in examples(count, seed, path):
        spans = [(start, start + len(value), span_type(slot)) for slot, value in e.values.items()
                 if value and (start := e.question.find(value)) >= 0]
        tagged.append(TaggedQuestion(e.question, sorted(spans)))
    return tagged


def training_questions(count: int, seed: int = 0, path: Path = DATA) -> list[str]:
    """The questions of `examples`, as out-of-scope training questions of the planner."""
    return [e.question for e in examples(count, seed, path)]
