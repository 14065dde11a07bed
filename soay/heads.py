"""The planner's and the coder's decisions on the base model's features of a question.

A pretrained base (Gemma 3 270M by default) reads the masked question once; its mean-pooled hidden
state is the question's feature vector (served by vLLM's pooling runner). On it:

- the **planner** is a softmax-linear head over the library's *combinations* (solution plus what is
  asked of its tail) and one more class, out of scope. It can only ever name a combination of the
  library, and choosing the combination rather than the solution means the coder is never left to
  pick a program of the right solution that answers another intent. Its probabilities are mixed
  with a second head's on the masked question's character n-grams (soay/lexical.py), which reads
  the words that a pooled state blurs;
- the **coder** takes the verified program of the nearest training question of that combination
  (cosine over the standardized features), whose mention markers are then filled from the
  question (soay/agent.py finish_code).

Why heads on frozen features rather than fine-tuning the base to write the solution: on 2 CPU
cores a LoRA epoch over the training questions costs tens of minutes, a head is fitted in seconds,
and deciding with one forward pass avoids decoding over a 262,144-word vocabulary
(benchmarks/REPORT-model.md compares both). Plain numpy: evaluation and serving run exactly this.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from soay.lexical import LexicalHead
from soay.mentions import Lexicon
from soay.tagging.tagger import MentionTagger

OUT_OF_SCOPE = "out_of_scope"
"""The planner's class for questions the domain's APIs cannot answer."""
HEADS_FILE, LABELS_FILE, TAGGER_FILE = "heads.npz", "heads.json", "mentions.crfsuite"


def is_model_dir(path: Path) -> bool:
    """Whether `path` is a `soay train` output: heads on a base, or an SFT checkpoint (config.json)."""
    return (Path(path) / HEADS_FILE).is_file() or (Path(path) / "config.json").is_file()


@dataclass
class Heads:
    mean: np.ndarray
    """Feature standardization (fitted on the training questions)."""
    scale: np.ndarray
    weight: np.ndarray
    """Planner head: classes x features."""
    bias: np.ndarray
    labels: list[str]
    """Combination ids, and OUT_OF_SCOPE when the head was trained with out-of-scope questions."""
    exemplars: np.ndarray
    """Standardized, unit-length features of the distinct training questions."""
    exemplar_labels: list[str]
    exemplar_programs: list[str]
    """Masked verified program of each training question (mention markers for literals)."""
    vocabulary: frozenset[str] = frozenset()
    """Literal values of the training questions (soay/mentions.py split_vocabulary): lower-case
    research fields, masked as mentions too, and organisation names, found exactly first. Loaded
    as a Lexicon that carries the model's mention tagger (TAGGER_FILE) when it has one."""
    out_of_scope_threshold: float = 0.5
    """Probability of OUT_OF_SCOPE above which a question is refused (chosen on validation)."""
    sentence_encoder: str | None = None
    """The sentence-embedding model (the retriever's) whose vector of the masked question follows
    the base's features; None: the base's features alone. Two encoders read a question better than
    either: the base carries Chinese, the sentence model the sense of an English sentence
    (benchmarks/REPORT-model.md)."""
    trust_threshold: float | None = None
    """Planner probability at or above which its readings of validation questions were right at
    least TRUST_PRECISION of the time (training/calibration.py): the bar for a served plan to
    become a training label with no person's verdict. None: never trusted alone."""
    lexical: LexicalHead | None = None
    """The planner's second head, on the masked question's character n-grams (soay/lexical.py)."""
    lexical_share: float = 0.0
    """Share of the planner's probabilities that comes from `lexical`."""

    def standardize(self, features: np.ndarray) -> np.ndarray:
        return (np.atleast_2d(features) - self.mean) / self.scale

    def probabilities(self, features: np.ndarray, texts: list[str] | None = None) -> np.ndarray:
        """The planner's probabilities over `labels`; `texts` are the masked questions
        (soay/prompts.py question_text), which the n-gram head reads when the model has one."""
        logits = self.standardize(features) @ self.weight.T + self.bias
        logits -= logits.max(axis=1, keepdims=True)
        probs = np.exp(logits)
        probs /= probs.sum(axis=1, keepdims=True)
        if self.lexical is None or not self.lexical_share:
            return probs
        if texts is None or len(texts) != len(probs):
            raise ValueError("this planner reads the masked questions beside their features: pass one text per question")
        return (1.0 - self.lexical_share) * probs + self.lexical_share * self.lexical.probabilities(texts, self.labels)

    def out_of_scope_probability(self, features: np.ndarray, texts: list[str] | None = None) -> np.ndarray:
        return self.probabilities(features, texts)[:, self.labels.index(OUT_OF_SCOPE)]

    def plan(self, features: np.ndarray, texts: list[str] | None = None) -> list[tuple[str, float]]:
        """The planner's choice for each question: (combination id or OUT_OF_SCOPE, probability).
        Out of scope only when its probability clears the threshold, so that a false refusal,
        which tells a person their question cannot be asked, stays rare."""
        probs = self.probabilities(features, texts)
        if OUT_OF_SCOPE in self.labels:
            oos = self.labels.index(OUT_OF_SCOPE)
            refuse = probs[:, oos] >= self.out_of_scope_threshold
            probs[:, oos] = np.where(refuse, 1.0 + probs[:, oos], -1.0)
        best = probs.argmax(axis=1)
        return [(self.labels[i], float(min(probs[row, i], 1.0))) for row, i in enumerate(best)]

    def ranked(self, features: np.ndarray, k: int, texts: list[str] | None = None) -> list[list[tuple[str, float]]]:
        """Per question, its `k` likeliest in-scope combinations with their probabilities, likeliest
        first: the plan and the readings a person may pick instead when it was wrong."""
        probs = self.probabilities(features, texts)
        labels = np.array(self.labels)
        out: list[list[tuple[str, float]]] = []
        for row in probs:
            order = [i for i in np.argsort(-row) if labels[i] != OUT_OF_SCOPE][:k]
            out.append([(str(labels[i]), float(row[i])) for i in order])
        return out

    def programs(self, features: np.ndarray, combinations: list[str], k: int = 1) -> list[list[str]]:
        """Per question, the masked programs of the `k` nearest training questions of its chosen
        combination, nearest first (empty when the combination has no training question)."""
        z = self.standardize(features)
        z /= np.linalg.norm(z, axis=1, keepdims=True) + 1e-9
        sims = z @ self.exemplars.T
        labels = np.array(self.exemplar_labels)
        out: list[list[str]] = []
        for row, combination in enumerate(combinations):
            idx = np.flatnonzero(labels == combination)
            nearest = idx[np.argsort(-sims[row, idx])]
            out.append(list(dict.fromkeys(self.exemplar_programs[i] for i in nearest))[:k])
        return out

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(
            directory / HEADS_FILE, mean=self.mean, scale=self.scale, weight=self.weight, bias=self.bias, exemplars=self.exemplars
        )
        labels = {"labels": self.labels, "exemplar_labels": self.exemplar_labels, "exemplar_programs": self.exemplar_programs,
                  "vocabulary": sorted(self.vocabulary), "out_of_scope_threshold": self.out_of_scope_threshold,
                  "sentence_encoder": self.sentence_encoder, "trust_threshold": self.trust_threshold,
                  "lexical_share": self.lexical_share if self.lexical is not None else 0.0}
        (directory / LABELS_FILE).write_text(json.dumps(labels, ensure_ascii=False))
        if self.lexical is not None:
            self.lexical.save(directory)

    @classmethod
    def load(cls, directory: Path) -> Heads:
        if not (directory / HEADS_FILE).is_file():
            raise FileNotFoundError(f"{directory} holds no trained heads ({HEADS_FILE}); run `soay train` first")
        arrays = np.load(directory / HEADS_FILE)
        labels = json.loads((directory / LABELS_FILE).read_text())
        tagger = MentionTagger(directory / TAGGER_FILE) if (directory / TAGGER_FILE).is_file() else None
        return cls(
            arrays["mean"], arrays["scale"], arrays["weight"], arrays["bias"], labels["labels"],
            arrays["exemplars"], labels["exemplar_labels"], labels["exemplar_programs"], Lexicon(frozenset(labels.get("vocabulary", [])), tagger),
            labels.get("out_of_scope_threshold", 0.5), labels.get("sentence_encoder"), labels.get("trust_threshold"),
            LexicalHead.load(directory), labels.get("lexical_share", 0.0),
        )
