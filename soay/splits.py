"""Train/validation/test assignment that keeps evaluation queries unseen.

Entities are split by a stable hash of their id, so a validation or test question is always about
an entity no training question mentions. Each combination also keeps phrasings out of training
per language: the last one for test and the one before it for validation, so every combination is
evaluated on wording the model never saw. Tuning reads validation; only reports read test.
"""

from __future__ import annotations

import hashlib
from itertools import zip_longest

from soay.combinations import Combination

TRAIN, VALIDATION, TEST = "train", "validation", "test"
SPLITS = (TRAIN, VALIDATION, TEST)
HELD_OUT_SPLITS = (VALIDATION, TEST)
LOGGED = "logged"
"""Questions people asked and labelled (a "good", or a pick among the alternatives) that are kept
out of training: the retraining's promotion gate measures candidates on them, so that a model is
judged on the wording it is asked in, not only on the templates' (training/retrain.py)."""


def logged_split(request_id: str, holdout: float) -> str:
    """LOGGED for a stable `holdout` share of person-labelled logged questions, else TRAIN."""
    bucket = int.from_bytes(hashlib.blake2b(request_id.encode(), digest_size=4).digest(), "big") % 10_000
    return LOGGED if bucket < holdout * 10_000 else TRAIN


def entity_split(entity_id: str, test_fraction: float, validation_fraction: float = 0.0) -> str:
    """TRAIN, VALIDATION or TEST for an entity, the same on every machine and run: the lowest
    hash buckets are test, the next ones validation."""
    bucket = int.from_bytes(hashlib.blake2b(entity_id.encode(), digest_size=4).digest(), "big") % 10_000
    if bucket < test_fraction * 10_000:
        return TEST
    return VALIDATION if bucket < (test_fraction + validation_fraction) * 10_000 else TRAIN


def group_split(entity_ids: list[str], test_fraction: float, validation_fraction: float = 0.0) -> str:
    """The split of a question about several entities at once (the namesakes a clarification
    lists): the most held-out of theirs, TEST before VALIDATION before TRAIN. A training question
    then names training entities only and a validation one no test entity; a test question names
    at least one entity no training question mentions."""
    splits = {entity_split(e, test_fraction, validation_fraction) for e in entity_ids}
    return next((s for s in (TEST, VALIDATION) if s in splits), TRAIN)


def held_out_for(combination: Combination, language: str, index: int) -> str | None:
    """The evaluation split that phrasing `index` of `language` is kept for (never training):
    TEST for the last phrasing, VALIDATION for the one before it when three or more exist."""
    n = len(combination.templates(language))
    if n > 1 and index == n - 1:
        return TEST
    if n > 2 and index == n - 2:
        return VALIDATION
    return None


def held_out(combination: Combination, language: str, index: int) -> bool:
    """Whether phrasing `index` of `language` is kept out of training."""
    return held_out_for(combination, language, index) is not None


def phrasings_for(combination: Combination, split: str, extra: dict[str, list[str]] | None = None) -> list[tuple[str, int, str]]:
    """(language, index, template) usable in `split`.

    An evaluation split alternates its own held-out phrasings with the training ones (so half of
    its cases, and the first of even a small split, are worded as nothing in training), never
    uses the other evaluation split's; training uses all but the held-out
    ones plus the combination's informal phrasings and any extra (teacher) paraphrases, which are
    indexed after the written ones, with the languages alternating as in evaluation.
    """
    if split in HELD_OUT_SPLITS:
        by_language = [[(lang, i, t) for i, t in enumerate(ts)] for lang, ts in combination.phrasings.items()]
        phrasings = [p for group in zip_longest(*by_language) for p in group if p is not None]  # languages alternate too
        own = [p for p in phrasings if held_out_for(combination, p[0], p[1]) == split]
        seen = [p for p in phrasings if not held_out(combination, p[0], p[1])]
        if not own:
            return seen
        # alternate: half of an evaluation split's cases are worded as nothing in training
        return [p for k, s in enumerate(seen) for p in (own[k % len(own)], s)]
    by_language = []
    for language, templates in combination.phrasings.items():
        usable = [(language, i, t) for i, t in enumerate(templates) if not held_out(combination, language, i)]
        added = [*combination.informal.get(language, ()), *(extra or {}).get(language, [])]
        usable += [(language, len(templates) + j, t) for j, t in enumerate(added)]
        by_language.append(usable)
    # languages alternate, so that any run of consecutive phrasings (a small work unit) has both
    return [p for group in zip_longest(*by_language) for p in group if p is not None]
