"""When a planner's reading may be trusted without a person's word: a bar on its probability.

A served question that nobody judged becomes a training label only when the planner was sure
enough of it (training/enlarge.py). "Sure enough" is measured, not guessed: among questions whose
right reading is known (the validation split when the heads are fitted; logged questions a person
marked good or bad, as they arrive), the bar is the lowest probability at which the readings at or
above it were right at least `precision` of the time. A wrong label teaches the model its own
mistake, so a bar that keeps fewer labels is the cheaper error.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

TRUST_PRECISION = 0.99
"""The share of trusted readings that must be right."""


def trust_threshold(confidence: Sequence[float], right: Sequence[bool], precision: float = TRUST_PRECISION,
                    min_trusted: int = 20) -> float | None:
    """The lowest observed probability `t` such that the readings with probability >= t number at
    least `min_trusted` and are right at least `precision` of the time; None when no `t` is
    (too few judged readings, or too many wrong ones even among the surest)."""
    p = np.asarray(confidence, dtype=float)
    ok = np.asarray(right, dtype=bool)
    if p.size == 0:
        return None
    order = np.argsort(-p, kind="stable")
    p, ok = p[order], ok[order]
    kept = np.arange(1, p.size + 1)
    share = np.cumsum(ok) / kept
    # only a cut between distinct probabilities is a threshold: ties go in together
    last_of_value = np.append(p[1:] != p[:-1], True)
    good = np.flatnonzero(last_of_value & (kept >= min_trusted) & (share >= precision))
    if not good.size:
        return None
    return float(p[good[-1]])


def bar(model_bar: float | None, traffic_bar: float | None, traffic_judged: int, min_judged: int) -> float | None:
    """The bar a logged plan must clear: the model's own (from validation) and, once enough logged
    questions were judged, the traffic's too, whichever is higher. Traffic that was judged often
    enough and still sets no bar trusts nothing."""
    if traffic_judged < min_judged:
        return model_bar
    if traffic_bar is None:
        return None
    return max(traffic_bar, model_bar if model_bar is not None else 0.0)
