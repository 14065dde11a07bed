"""The out-of-scope question sets: big enough, well-formed, disjoint, and never an in-scope question.

Loader-free on purpose: the files are read with yaml alone, so the data can be checked before any
detector code exists.
"""

import re
import string
import unicodedata
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ROOT / "soay" / "intents" / "out_of_scope.yaml"
BENCHMARK = ROOT / "benchmarks" / "out_of_scope.yaml"
IN_SCOPE = [ROOT / "soay" / "intents" / "aminer.yaml"]
PARAPHRASES = ROOT / "benchmarks" / "paraphrases.yaml"

MINIMUM = {TRAIN: {"en": 400, "zh": 300}, BENCHMARK: {"en": 130, "zh": 100}}


def _load(path: Path) -> dict[str, list]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _key(text: str) -> str:
    """Lowercased, with punctuation (ASCII and CJK) and blank space removed."""
    return "".join(ch for ch in text.lower() if not unicodedata.category(ch).startswith(("P", "Z", "S")) and not ch.isspace())


def _in_scope_templates() -> list[str]:
    templates: list[str] = []
    for path in IN_SCOPE:
        for combination in _load(path)["combinations"]:
            for texts in combination["phrasings"].values():
                templates.extend(texts)
    for by_language in _load(PARAPHRASES)["paraphrases"].values():
        for texts in by_language.values():
            templates.extend(texts)
    return templates


def _pattern(template: str) -> re.Pattern:
    """A template as a regular expression in which every placeholder stands for any text."""
    parts = []
    for literal, field, _, _ in string.Formatter().parse(template):
        parts.append(re.escape(literal))
        if field:
            parts.append(".+")
    return re.compile("".join(parts), re.IGNORECASE | re.DOTALL)


@pytest.mark.parametrize("path", [TRAIN, BENCHMARK], ids=["train", "benchmark"])
def test_counts_and_entries(path):
    data = _load(path)
    assert set(data) == {"en", "zh"}, path
    for language, minimum in MINIMUM[path].items():
        questions = data[language]
        assert len(questions) >= minimum, (path.name, language, len(questions))
        for q in questions:
            assert isinstance(q, str) and q.strip(), (path.name, language, q)
        keys = [_key(q) for q in questions]
        assert len(set(keys)) == len(keys), f"{path.name} {language}: duplicate questions"


def test_benchmark_is_disjoint_from_training():
    train, benchmark = _load(TRAIN), _load(BENCHMARK)
    train_keys = {_key(q) for language in train for q in train[language]}
    shared = [q for language in benchmark for q in benchmark[language] if _key(q) in train_keys]
    assert not shared, shared


def test_no_out_of_scope_question_is_an_in_scope_template():
    patterns = [_pattern(t) for t in _in_scope_templates()]
    template_keys = {_key(t) for t in _in_scope_templates()}
    for path in (TRAIN, BENCHMARK):
        data = _load(path)
        for language in data:
            for q in data[language]:
                assert _key(q) not in template_keys, (path.name, q)
                matched = [p.pattern for p in patterns if p.fullmatch(q.strip())]
                assert not matched, (path.name, q, matched)
