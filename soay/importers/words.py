"""The importer's word lists (words.yaml), loaded once and normalised.

The rules that read documents in the wild (paged envelopes, search parameters, list heads,
entity names from paths and schema names) depend on vocabulary that varies between APIs; it is
kept as data so that a new convention is a new word, not new code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

WORDS_PATH = Path(__file__).with_name("words.yaml")


def snake(name: str) -> str:
    """`totalPages` -> total_pages, `Tfl.Api.StopPoint` -> tfl_api_stop_point, `top-rated` -> top_rated."""
    s = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name)
    return re.sub(r"\W+|_+", "_", s).strip("_").lower()


@dataclass(frozen=True)
class Words:
    envelope_arrays: frozenset[str]
    paging: frozenset[str]
    search_params: frozenset[str]
    search_segments: frozenset[str]
    list_segments: frozenset[str]
    skip_segments: frozenset[str]
    generic_keys: frozenset[str]
    key_suffixes: tuple[str, ...]
    role_prefixes: tuple[str, ...]
    not_entities: frozenset[str]
    name_keys: tuple[str, ...]
    typed_keys: frozenset[str]
    exclusion_prefixes: tuple[str, ...]
    shape_suffixes: frozenset[str]
    shape_prefixes: frozenset[str]
    similar_share: float
    similar_min: int
    read_verbs: tuple[str, ...]
    headings: tuple[str, ...]
    same_singular: frozenset[str]


def _set(values: list[str]) -> frozenset[str]:
    return frozenset(snake(v) if not v.startswith("_") else v for v in values)


@lru_cache(maxsize=1)
def words() -> Words:
    raw = yaml.safe_load(WORDS_PATH.read_text(encoding="utf-8"))
    return Words(
        envelope_arrays=_set(raw["envelope"]["arrays"]),
        paging=_set(raw["envelope"]["paging"]),
        search_params=_set(raw["search"]["params"]),
        search_segments=_set(raw["search"]["segments"]),
        list_segments=_set(raw["list_heads"]["segments"]),
        skip_segments=_set(raw["paths"]["skip"]),
        generic_keys=_set(raw["paths"]["generic_keys"]),
        key_suffixes=tuple(snake(s) for s in raw["paths"]["key_suffixes"]),
        role_prefixes=tuple(snake(s) for s in raw["paths"]["role_prefixes"]),
        not_entities=_set(raw["paths"]["not_entities"]),
        name_keys=tuple(snake(s) for s in raw["keys"]["name_like"]),
        typed_keys=_set(raw["keys"]["typed"]),
        exclusion_prefixes=tuple(snake(s) for s in raw["filters"]["exclusion_prefixes"]),
        shape_suffixes=_set(raw["shapes"]["suffixes"]),
        shape_prefixes=_set(raw["shapes"]["prefixes"]),
        similar_share=float(raw["shapes"]["similar_share"]),
        similar_min=int(raw["shapes"]["similar_min"]),
        read_verbs=tuple(snake(v) for v in raw["reads"]["verbs"]),
        headings=tuple(snake(v) for v in raw["headings"]["names"]),
        same_singular=_set(raw["singular"]["same"]),
    )
