"""Question features kept on disk: a second encoding of the same questions reads them back
exactly and never calls the engine."""

from __future__ import annotations

import numpy as np

from soay.prompts import question_text
from training.feature_cache import FeatureCache
from training.offline import encode, encoder


def test_cached_features_are_the_engines_and_spare_it(gemma_small, tmp_path):
    questions = ["Who are the co-authors of Li Wei?", "李伟的合作者有哪些？", "Who are the co-authors of Li Wei?"]
    with encoder(gemma_small) as llm:
        plain = encode(llm, questions, batch_size=2)
        cache = FeatureCache(tmp_path / "features.sqlite", "gemma-small")
        first = encode(llm, questions, batch_size=2, cache=cache)
    masked = [question_text(q, frozenset()) for q in questions]  # what the engine reads, and the key
    assert np.array_equal(plain, first) and len(cache.get(masked)) == 2  # one entry per distinct text
    again = encode(None, questions[::-1], batch_size=2, cache=cache)  # no engine: everything is known
    assert np.array_equal(again, first[::-1])
    other = FeatureCache(tmp_path / "features.sqlite", "another-base")
    assert other.get(masked) == {}  # another encoder's features are not these
    cache.close()
    other.close()
