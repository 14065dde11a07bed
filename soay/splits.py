"""Train/test assignment that keeps test queries unseen.

Entities are split by a stable hash of their id, so a test question is always about an entity
no training question mentions; and the last phrasing of each combination per language is kept
for test only, so every combination is also tested on wording the model never saw.
"""

from __future__ import annotations

import hashlib

from soay.combinations import Combination

TRAIN, TEST = "train", "test"


def entity_split(entity_id: str, test_fraction: float) -> str:
    """TRAIN or TEST for an entity, the same on every machine and run."""
    bucket = int.from_bytes(hashlib.blake2b(entity_id.encode(), digest_size=4).digest(), "big") % 10_000
    return TEST if bucket < test_fraction * 10_000 else TRAIN


def held_out(combination: Combination, language: str, index: int) -> bool:
    """Whether phrasing `index` of `language` is kept out of training."""
    templates = combination.templates(language)
    return len(templates) > 1 and index == len(templates) - 1


def phrasings_for(combination: Combination, split: str, extra: dict[str, list[str]] | None = None) -> list[tuple[str, int, str]]:
    """(language, index, template) usable in `split`.

    Test uses every phrasing, held-out ones first so that even a small test split has them;
    training uses all but the held-out ones plus any extra (teacher) paraphrases, which are
    indexed after the written ones.
    """
    if split == TEST:
        return sorted(
            ((lang, i, t) for lang, ts in combination.phrasings.items() for i, t in enumerate(ts)),
            key=lambda p: not held_out(combination, p[0], p[1]),
        )
    out: list[tuple[str, int, str]] = []
    for language, templates in combination.phrasings.items():
        out.extend((language, i, t) for i, t in enumerate(templates) if not held_out(combination, language, i))
        if extra:
            base = len(templates)
            out.extend((language, base + j, t) for j, t in enumerate(extra.get(language, [])))
    return out
