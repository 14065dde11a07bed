"""The questions simulated users ask.

By default the held-out test split of the dataset: real 1-, 2- and 3-hop questions in English and
Chinese, phrased as the templates phrase them but about entities no model saw in training, which is
what a user of the service asks. A file of one's own (one question a line, or JSONL records with a
`query`) replaces them, e.g. hand-written paraphrases or questions taken from production logs.
Only questions travel: answers are the service's business, not the load generator's.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from soay.dataset import iter_triplets


@dataclass(frozen=True)
class Question:
    query: str
    language: str
    hops: int | None = None

    @property
    def stratum(self) -> str:
        """The kind of question, e.g. `2-hop zh`; users draw kinds evenly, whatever the file's mix."""
        return f"{self.hops}-hop {self.language}" if self.hops else self.language


def language_of(text: str) -> str:
    return "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in text) else "en"


def from_dataset(dataset: Path) -> list[Question]:
    return [Question(t.query, t.language, t.hops) for t in iter_triplets(dataset, split="test")]


def from_file(path: Path) -> list[Question]:
    """Plain lines, or JSONL records with `query` (and optionally `language`, `hops`)."""
    questions = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line:
            continue
        if line.startswith("{"):
            record = json.loads(line)
            query = str(record["query"])
            questions.append(Question(query, record.get("language") or language_of(query), record.get("hops")))
        else:
            questions.append(Question(line, language_of(line)))
    return questions


def load_questions(questions_file: Path | None, dataset: Path) -> list[Question]:
    found = from_file(questions_file) if questions_file else from_dataset(dataset)
    if not found:
        source = questions_file or f"the test split of {dataset}"
        raise ValueError(f"no questions in {source}: run `soay generate` or pass a questions file")
    return found


class QuestionPool:
    """Draws a kind of question uniformly, then a question of that kind: every hop count and
    language gets the same share of the load even when the test split holds more of one."""

    def __init__(self, questions: list[Question]) -> None:
        by_stratum: dict[str, list[Question]] = defaultdict(list)
        for q in questions:
            by_stratum[q.stratum].append(q)
        self.strata = dict(sorted(by_stratum.items()))

    def draw(self, rng: random.Random) -> Question:
        return rng.choice(self.strata[rng.choice(list(self.strata))])
