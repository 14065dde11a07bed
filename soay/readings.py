"""A planner's alternative reading of a question, said as the question it would answer.

When a person marks an answer bad, the service offers the planner's next-best readings ("Did you
mean …?"). A combination id means nothing to a person; the reading is shown as one of the
combination's own phrasings, filled with the values its program would search for, so that the
person recognises the question they meant.
"""

from __future__ import annotations

import string

from soay.combinations import Combination
from soay.log_triplets import CombinationMatcher

_FORMATTER = string.Formatter()


def _fields(phrasing: str) -> set[str]:
    return {name for _, name, _, _ in _FORMATTER.parse(phrasing) if name}


def reading_text(combination: Combination, values: dict[str, str], language: str) -> str:
    """The first phrasing in `language` (else English) that names exactly the values the program
    passes, else the first that needs no other value, filled in; else the first with "…" for what
    is missing."""
    phrasings = combination.phrasings.get(language) or combination.phrasings.get("en") or ()
    if not phrasings:
        return combination.id
    given = set(values)
    chosen = next((p for p in phrasings if _fields(p) == given), None) or next((p for p in phrasings if _fields(p) <= given), None)
    if chosen is None:
        chosen = phrasings[0]
    return chosen.format_map({name: values.get(name, "…") for name in _fields(chosen)})


def program_reading(matcher: CombinationMatcher, combination: Combination, code: str, language: str) -> str:
    """The reading of `combination` that `code` (its program for a question) would answer."""
    match = matcher.match(combination.apis, code)
    return reading_text(combination, match.values if match is not None else {}, language)
