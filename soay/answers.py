"""When two answers are the same answer.

Used to verify generated code against the ground truth and, later, by SoAyEval. Strings compare
without case and surrounding space; lists compare as multisets, because an API's order is not
part of what a question like "who are the co-authors of X" asks.
"""

from __future__ import annotations

import json
from typing import Any


def normalise(value: Any) -> Any:
    """A canonical, hashable-by-JSON form of an answer."""
    if isinstance(value, str):
        return " ".join(value.split()).casefold()
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, (list, tuple, set)):
        items = [normalise(v) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True, ensure_ascii=False))
    if isinstance(value, dict):
        return {str(k): normalise(v) for k, v in value.items()}
    return value


def answers_match(expected: Any, actual: Any) -> bool:
    """True when `actual` is the same answer as `expected` after normalisation."""
    return normalise(expected) == normalise(actual)
