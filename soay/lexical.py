"""The planner's second reader: the character n-grams of the masked question.

The base's pooled state and the sentence model read a question's sense but blur its words: an
attribute asked in two characters ("<|e1|>职位？", "<|e1|>的性别"), a typo ("pubications") or a
terse keyword string moves the mean of a few hundred hidden states too little to cross a linear
head's boundary, and the English sentence model reads no Chinese. Character n-grams (TF-IDF, within
word boundaries) under a softmax-linear head read exactly those words, and a misspelt word keeps
most of its n-grams. The planner mixes the two heads' probabilities (soay/heads.py); on the
open-world validation questions the mix plans right more often than either head alone
(benchmarks/REPORT-model.md, issue 24).

Stored as arrays and a JSON vocabulary (no pickle), rebuilt into scikit-learn's vectorizer on load.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

LEXICAL_FILE, LEXICAL_VOCABULARY_FILE = "lexical.npz", "lexical.json"
ANALYZER, NGRAMS, MIN_DF = "char_wb", (1, 4), 2
"""n-grams of 1 to 4 characters inside word boundaries, kept when two training questions have them."""


@dataclass
class LexicalHead:
    vocabulary: dict[str, int]
    """n-gram -> column."""
    idf: np.ndarray
    weight: np.ndarray
    """classes x n-grams."""
    bias: np.ndarray
    labels: list[str]
    _vectorizer: Any = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def fit(cls, texts: list[str], labels: list[str], sample_weight: np.ndarray, c: float, max_iter: int = 2000) -> LexicalHead:
        """Fit on masked questions (mentions are markers: the wording is what is learnt)."""
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression

        vectorizer = TfidfVectorizer(analyzer=ANALYZER, ngram_range=NGRAMS, sublinear_tf=True, min_df=MIN_DF)
        x = vectorizer.fit_transform(texts)
        head = LogisticRegression(C=c, max_iter=max_iter).fit(x, labels, sample_weight=sample_weight)
        weight, bias = head.coef_, head.intercept_
        if len(head.classes_) == 2:  # one logit z for the second class: the softmax of (-z/2, z/2) is its sigmoid
            weight, bias = np.vstack([-weight / 2, weight / 2]), np.concatenate([-bias / 2, bias / 2])
        lexical = cls({k: int(v) for k, v in vectorizer.vocabulary_.items()}, vectorizer.idf_.astype(np.float32),
                      weight.astype(np.float32), bias.astype(np.float32), [str(k) for k in head.classes_])
        lexical._vectorizer = vectorizer
        return lexical

    def vectorizer(self) -> Any:
        if self._vectorizer is None:
            from sklearn.feature_extraction.text import TfidfVectorizer

            self._vectorizer = TfidfVectorizer(analyzer=ANALYZER, ngram_range=NGRAMS, sublinear_tf=True, vocabulary=self.vocabulary)
            self._vectorizer.idf_ = self.idf
        return self._vectorizer

    def probabilities(self, texts: list[str], labels: list[str]) -> np.ndarray:
        """Class probabilities of each masked question, columns in the order of `labels`."""
        logits = np.asarray(self.vectorizer().transform(texts) @ self.weight.T) + self.bias
        logits -= logits.max(axis=1, keepdims=True)
        probs = np.exp(logits)
        probs /= probs.sum(axis=1, keepdims=True)
        return probs[:, [self.labels.index(label) for label in labels]]

    def save(self, directory: Path) -> None:
        np.savez_compressed(directory / LEXICAL_FILE, idf=self.idf, weight=self.weight, bias=self.bias)
        (directory / LEXICAL_VOCABULARY_FILE).write_text(json.dumps({"labels": self.labels, "vocabulary": self.vocabulary}, ensure_ascii=False))

    @classmethod
    def load(cls, directory: Path) -> LexicalHead | None:
        """The head saved in `directory`, or None for a model trained without one."""
        if not (directory / LEXICAL_FILE).is_file():
            return None
        arrays = np.load(directory / LEXICAL_FILE)
        meta = json.loads((directory / LEXICAL_VOCABULARY_FILE).read_text())
        return cls(meta["vocabulary"], arrays["idf"], arrays["weight"], arrays["bias"], meta["labels"])
