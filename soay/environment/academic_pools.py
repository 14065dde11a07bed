"""Name and vocabulary pools of the seeded academic corpus (see `academic_corpus.py`).

The pools are data, kept in `academic_pools.yaml` beside this module (shipped as package data);
this module only reads that file once, at import, into immutable Python values under the names
the generator uses: personal names of several cultures, real and template-built organisations,
research fields with their title vocabulary, venues and the sentence templates of titles,
abstracts and biographies. The order of every list matters (the generator draws by index), so
the same file and seed give the same corpus.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import yaml

POOLS_PATH = Path(__file__).with_name("academic_pools.yaml")


class RealOrg(NamedTuple):
    name: str
    kind: str  # university | institute | company
    country: str
    domain: str


class Area(NamedTuple):
    methods: tuple[str, ...]
    venues: tuple[tuple[str, float], ...]  # (venue, prestige in [0, 1])


class Field(NamedTuple):
    name: str
    area: str
    popularity: float
    topics: tuple[str, ...]


def _load() -> dict[str, Any]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C loader when PyYAML has libyaml: 10x faster
    return yaml.load(POOLS_PATH.read_text(encoding="utf-8"), Loader=loader)


def _rows(rows: list[list[Any]]) -> tuple[tuple[Any, ...], ...]:
    return tuple(tuple(row) for row in rows)


def _lists(mapping: dict[str, list[str]]) -> dict[str, tuple[str, ...]]:
    return {key: tuple(values) for key, values in mapping.items()}


_POOLS = _load()

# Personal names: each culture's given names and surnames, most frequent first (drawn Zipf-weighted).
CHINESE_SYLLABLES: tuple[tuple[str, str], ...] = _rows(_POOLS["chinese_syllables"])  # (syllable, "m" | "f" | "n")
CHINESE_SURNAMES: tuple[str, ...] = tuple(_POOLS["chinese_surnames"])
KOREAN_SYLLABLES: tuple[tuple[str, str], ...] = _rows(_POOLS["korean_syllables"])
MIDDLE_INITIAL_RATE: dict[str, float] = dict(_POOLS["middle_initial_rate"])
MIDDLE_INITIALS: str = _POOLS["middle_initials"]
# The Western and other cultures ({"male", "female", "surnames"} each); Chinese names are built from syllables.
CULTURES: dict[str, dict[str, tuple[str, ...]]] = {culture: _lists(pools) for culture, pools in _POOLS["cultures"].items()}
CULTURE_NAMES: tuple[str, ...] = ("chinese", *CULTURES)
COUNTRY_CULTURE_MIX: dict[str, dict[str, float]] = {c: dict(mix) for c, mix in _POOLS["country_culture_mix"].items()}

# Organisations.
REAL_ORGS: tuple[RealOrg, ...] = tuple(RealOrg(*row) for row in _POOLS["real_orgs"])
CITIES: dict[str, tuple[str, ...]] = _lists(_POOLS["cities"])
UNIVERSITY_TEMPLATES: dict[str, tuple[str, ...]] = _lists(_POOLS["university_templates"])
INSTITUTE_TEMPLATES: tuple[str, ...] = tuple(_POOLS["institute_templates"])
COMPANY_PREFIXES: tuple[str, ...] = tuple(_POOLS["company_prefixes"])
COMPANY_SUFFIXES: tuple[str, ...] = tuple(_POOLS["company_suffixes"])
COMPANY_KINDS: tuple[str, ...] = tuple(_POOLS["company_kinds"])
COUNTRY_TLD: dict[str, str] = dict(_POOLS["country_tld"])
COUNTRY_WEIGHTS: dict[str, float] = dict(_POOLS["country_weights"])

# Research fields.
AREAS: dict[str, Area] = {
    key: Area(tuple(area["methods"]), _rows(area["venues"])) for key, area in _POOLS["areas"].items()
}
FIELDS: tuple[Field, ...] = tuple(
    Field(f["name"], f["area"], f["popularity"], tuple(f["topics"])) for f in _POOLS["fields"]
)

# Text templates.
TITLE_ADJECTIVES: tuple[str, ...] = tuple(_POOLS["title_adjectives"])
APPLICATION_DOMAINS: tuple[str, ...] = tuple(_POOLS["application_domains"])
PROPERTIES: tuple[str, ...] = tuple(_POOLS["properties"])
ACRONYM_HEADS: tuple[str, ...] = tuple(_POOLS["acronym_heads"])
ACRONYM_TAILS: tuple[str, ...] = tuple(_POOLS["acronym_tails"])
TITLE_TEMPLATES: tuple[str, ...] = tuple(_POOLS["title_templates"])
SMALL_WORDS: frozenset[str] = frozenset(_POOLS["small_words"])
ABSTRACT_OPENINGS: tuple[str, ...] = tuple(_POOLS["abstract_openings"])
ABSTRACT_METHODS: tuple[str, ...] = tuple(_POOLS["abstract_methods"])
ABSTRACT_RESULTS: tuple[str, ...] = tuple(_POOLS["abstract_results"])
BIO_TEMPLATES: tuple[str, ...] = tuple(_POOLS["bio_templates"])
# (position, kind of organisation, minimum career age, seniority tier "junior" | "middle" | "senior")
POSITIONS: tuple[tuple[str, str, int, str], ...] = _rows(_POOLS["positions"])

del _POOLS
