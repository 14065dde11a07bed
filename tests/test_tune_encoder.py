"""The sentence encoder's tuning (training/tune_encoder.py) on the real all-MiniLM-L6-v2."""

from __future__ import annotations

import numpy as np

from retriever.embeddings import Embedder
from soay.domains import get_domain
from soay.splits import phrasings_for
from training.tune_encoder import EncoderTuning, tune_sentence_encoder


def _english(combination, split: str) -> list[str]:
    return [t for lang, _, t in phrasings_for(combination, split) if lang == "en"]


def _separation(embedder: Embedder, groups: list[list[str]]) -> float:
    """Mean cosine within a group minus mean cosine across groups."""
    vectors = [embedder.encode(g) for g in groups]
    within = np.mean([float(np.mean(v @ v.T)) for v in vectors])
    across = float(np.mean(vectors[0] @ vectors[1].T))
    return within - across


def test_tuning_pulls_held_out_wordings_of_each_combination_together(tmp_path):
    # two combinations asking different things of the same scholar: a frozen sentence model reads
    # all of their wordings as "a question about {name} at {organization}"
    by_id = {c.id: c for c in get_domain("aminer").combinations}
    first, second = by_id["advisor_name"], by_id["student_names"]
    texts = _english(first, "train") + _english(second, "train")
    labels = [first.id] * len(_english(first, "train")) + [second.id] * len(_english(second, "train"))
    held_out = [sorted(set(_english(c, "test")) - set(texts)) for c in (first, second)]  # test's own wordings
    assert all(held_out)
    before = _separation(Embedder(), held_out)

    record = tune_sentence_encoder("all-MiniLM-L6-v2", texts, labels, tmp_path / "tuned",
                                   EncoderTuning(epochs=6, batch_size=8, learning_rate=1e-4))

    tuned = Embedder(str(tmp_path / "tuned"))  # saved as a sentence-transformers model, loaded by path
    assert tuned.dim == 384 and record["examples"] == len(texts) and record["epochs"] == 6
    assert record["train_accuracy"] > 0.9
    # wordings never trained on are told apart better than before
    assert _separation(tuned, held_out) > before + 0.05
