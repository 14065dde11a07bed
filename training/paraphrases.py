"""Hand-written paraphrases instantiated with test-split entities.

The templates teach the model; these questions, written by hand and kept out of training
(benchmarks/paraphrases.yaml), show whether the planner and coder hold on phrasings unlike any
template. Each one borrows a held-out test triplet of its combination: its entities fill the
placeholders and its gold solution, code and answer stay the reference. Clarification triplets
(a name nobody or several carry, soay/clarifications.py) lend none: their inputs leave out the
organisation the hand-written phrasings name; nor does a case whose question gave other filters
(soay/combinations.py) than a phrasing names.
"""

from __future__ import annotations

import string
from collections import defaultdict
from pathlib import Path

import yaml

from soay.clarifications import is_clarification
from soay.triplets import Triplet


def paraphrased_triplets(path: Path, test: list[Triplet], per_phrasing: int = 3) -> list[Triplet]:
    """Every hand-written phrasing filled with up to `per_phrasing` test triplets' entities."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    by_combination: dict[str, list[Triplet]] = defaultdict(list)
    for t in test:
        if not is_clarification(t.answer):
            by_combination[t.combination.id].append(t)
    out: list[Triplet] = []
    for combination, by_language in data["paraphrases"].items():
        for language, texts in by_language.items():
            for i, text in enumerate(texts):
                needs = {f for _, f, _, _ in string.Formatter().parse(text) if f}
                # a test case asked with other filters (the name alone, say) lacks a value this phrasing gives
                for t in [t for t in by_combination.get(combination, []) if needs <= set(t.inputs)][:per_phrasing]:
                    out.append(
                        t.model_copy(
                            update={
                                "id": f"{t.id}:paraphrase:{language}:{i}",
                                "query": text.format(**t.inputs),
                                "language": language,
                                "template_id": f"{combination}/paraphrase/{language}/{i}",
                            }
                        )
                    )
    return out
