"""Snapping literal arguments of fuzzy APIs to spans of the question."""

import pytest

from soay.literals import best_span, snap_literals
from soay.spec import load_spec

SPEC = load_spec("aminer")


@pytest.mark.parametrize(
    "literal, question, expected",
    [
        ("Wei Zang", "How many citations does Wei Zhang at Tsinghua University have?", "Wei Zhang"),
        ("Tsinghua Univrsity", "How many citations does Wei Zhang at Tsinghua University have?", "Tsinghua University"),
        ("Wei Zhang", "How many citations does Wei Zhang at Tsinghua University have?", None),  # already exact
        ("Geoffrey Hinton", "How many citations does Wei Zhang at Tsinghua University have?", None),  # nothing close
        ("Wei Zhnag", "清华大学的Wei Zhang总共被引用了多少次？", "Wei Zhang"),
        ("Graph Neural Network for Molecules", "《Graph Neural Networks for Molecules》的第一作者是谁？", "Graph Neural Networks for Molecules"),
    ],
)
def test_best_span(literal, question, expected):
    assert best_span(literal, question) == expected


def test_only_fuzzy_api_string_arguments_are_rewritten():
    question = "Who are the collaborators of Wei Zhang at Tsinghua University?"
    code = (
        "person_list = searchPerson(name='Wei Zang', organization='Tsinghua Univ')\n"
        "coauthors = getCoauthors(person_id='Wei Zang')\n"
        "final_result = [c['name'] for c in coauthors if c['name'] != 'Wei Zang']\n"
    )
    snapped = snap_literals(code, question, SPEC)
    assert "searchPerson(name='Wei Zhang', organization='Tsinghua University')" in snapped
    assert "getCoauthors(person_id='Wei Zang')" in snapped and "!= 'Wei Zang'" in snapped
    assert snap_literals("final_result = (", question, SPEC) == "final_result = ("
