"""The hand-written paraphrase set kept out of training is consistent with the combinations."""

import string
from pathlib import Path

import yaml

from soay.domains import get_domain

PARAPHRASES = Path(__file__).resolve().parents[1] / "benchmarks" / "paraphrases.yaml"


def test_paraphrases_match_combinations_and_are_not_templates():
    data = yaml.safe_load(PARAPHRASES.read_text(encoding="utf-8"))
    combos = get_domain(data["domain"]).combinations.by_id
    hops, languages = set(), set()
    for cid, by_language in data["paraphrases"].items():
        combination = combos[cid]
        hops.add(combination.hops)
        for language, texts in by_language.items():
            languages.add(language)
            for text in texts:
                used = {f for _, f, _, _ in string.Formatter().parse(text) if f}
                assert used == combination.placeholders, (cid, text)
                assert text not in combination.templates(language)
    assert hops == {1, 2, 3} and languages == {"en", "zh"}
