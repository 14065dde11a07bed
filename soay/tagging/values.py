"""Open-world entity values: names, organisations, fields and titles of many shapes.

The tagger learns where a mention starts and ends from questions filled with these values. They
come from soay/tagging/open_world.yaml, never from the corpus's own pools, so that what it learns
is the shape of a name ("Peter K.L. Wong", "WANG Lei", "Ana de la Cruz", "欧阳明轩") or of an
organisation ("School of Informatics, University of Edinburgh", "Meta AI", "CMU", "绍兴理工大学计算机系",
"北航"), not a list of them.

A Chinese phrasing is filled in Chinese script for a share of its values (ZH_SCRIPT_SHARE), in
Latin script otherwise, as Chinese users write both ("清华大学的王伟", "Tsinghua的Wei Wang").
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import yaml

DATA = Path(__file__).with_name("open_world.yaml")
_SLOT = re.compile(r"\{(\w+)\}")
ZH_SCRIPT_SHARE = 0.45
"""The share of a Chinese phrasing's names, organisations and fields written in Chinese script."""


@cache
def open_world() -> dict[str, Any]:
    return yaml.safe_load(DATA.read_text(encoding="utf-8"))


def _fill(pattern: str, parts: dict[str, Any], rng: random.Random, extra: dict[str, Callable[[], str]] | None = None) -> str:
    """`pattern` with each {slot} drawn from `parts`: {Slot} title-cases the draw, {SLOT} upper-cases it."""

    def draw(match: re.Match[str]) -> str:
        slot = match.group(1)
        key = slot.lower()
        if extra and key in extra:
            value = extra[key]()
        else:
            value = rng.choice(parts[key])
        if slot.isupper() and len(slot) > 1:
            return value.upper()
        if slot[:1].isupper():
            return " ".join(w[:1].upper() + w[1:] for w in value.split(" "))
        return value

    return _SLOT.sub(draw, pattern)


def _any_cjk(rng: random.Random, excluded: str) -> str:
    """A CJK unified ideograph of the common block, drawn uniformly, not one of `excluded`."""
    while True:
        ch = chr(rng.randint(0x4E00, 0x9FA5))
        if ch not in excluded:
            return ch


def person(rng: random.Random, language: str = "en") -> str:
    data = open_world()["person"]
    if language == "zh" and rng.random() < ZH_SCRIPT_SHARE:
        return _fill(rng.choice(data["zh_patterns"]), data, rng, {"zh_any_char": lambda: _any_cjk(rng, data["zh_not_in_names"])})
    extra = {
        "initial": lambda: rng.choice("ABCDEFGHJKLMNPRSTVWY") + ".",
        "pinyin_given_hyphen": lambda: "-".join(rng.sample(["Xiao", "Ming", "Jun", "Hui", "Li", "Wen", "Yu"], 2)),
    }
    return _fill(rng.choice(data["patterns"]), data, rng, extra)


def organization(rng: random.Random, language: str = "en") -> str:
    data = open_world()["organization"]
    if language == "zh" and rng.random() < ZH_SCRIPT_SHARE:
        return _fill(rng.choice(data["zh_patterns"]), data, rng)
    kind = rng.random()
    university = lambda: _fill(rng.choice(data["university_patterns"]), data, rng)  # noqa: E731
    if kind < 0.35:
        return university()
    if kind < 0.55:
        return _fill(rng.choice(data["department_patterns"]), data, rng, {"university": university})
    if kind < 0.8:
        return _fill(rng.choice(data["company_patterns"]), data, rng)
    return rng.choice(data["acronym"])


def _zh_interest(rng: random.Random) -> str:
    data, excluded = open_world()["interest"], open_world()["person"]["zh_not_in_names"]
    return _fill(rng.choice(data["zh_patterns"]), data, rng, {"zh_any_char": lambda: _any_cjk(rng, excluded)})


def interest(rng: random.Random, language: str = "en") -> str:
    data = open_world()["interest"]
    if language == "zh" and rng.random() < ZH_SCRIPT_SHARE:
        return _zh_interest(rng)
    return _fill(rng.choice(data["patterns"]), {**data, "word": open_world()["publication_info"]["word"],
                                                 "connector": open_world()["publication_info"]["connector"]}, rng)


def publication_info(rng: random.Random, language: str = "en") -> str:
    data = open_world()["publication_info"]
    if language == "zh" and rng.random() < ZH_SCRIPT_SHARE:
        return _fill(rng.choice(data["zh_patterns"]), data, rng, {"zh_field": lambda: _zh_interest(rng)})
    return _fill(rng.choice(data["patterns"]), data, rng)


GENERATORS: dict[str, Callable[[random.Random, str], str]] = {
    "name": person, "organization": organization, "interest": interest, "publication_info": publication_info,
}
"""Value generators by the spec parameter (span type) they fill."""


def span_type(placeholder: str) -> str:
    """The span type of an intent placeholder: the parameter it carries a value of ({affiliation}
    is an organisation, {field} a research interest), else the placeholder itself."""
    return open_world()["type_aliases"].get(placeholder, placeholder)


def value_for(placeholder: str, rng: random.Random, language: str, fallback: Callable[[random.Random], str] | None = None) -> str:
    """An open-world value for `placeholder`; a parameter of another domain's spec, which has no
    generator here, takes `fallback` (its corpus values) so its questions are still tagged."""
    generator = GENERATORS.get(span_type(placeholder))
    if generator is not None:
        return generator(rng, language)
    if fallback is None:
        raise KeyError(f"no open-world generator for {placeholder!r} and no fallback")
    return fallback(rng)
