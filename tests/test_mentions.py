"""Mentions are found in English and Chinese questions, masked, and restored in code exactly."""

from __future__ import annotations

import ast

import pytest

from soay.mentions import MARKERS, find_mentions, mask_code, mask_question, unmask_code


@pytest.mark.parametrize(
    ("question", "mentions"),
    [
        ("List the advisees of David E. Baker of University of Cambridge.", ["David E. Baker", "University of Cambridge"]),
        ("Name the mentor of Shreya Sharma of The Chinese University of Hong Kong.", ["Shreya Sharma", "The Chinese University of Hong Kong"]),
        ("The best-known paper of Hui Yang (Tsinghua University): what venue is it from?", ["Hui Yang", "Tsinghua University"]),
        ("What does Mohamed bin Zayed University of Artificial Intelligence's Leila Çelik study?",
         ["Mohamed bin Zayed University of Artificial Intelligence", "Leila Çelik"]),
        ('Who wrote "Towards Robust Out-of-Distribution Generalization" at Max Planck Institute for Informatics?',
         ["Towards Robust Out-of-Distribution Generalization", "Max Planck Institute for Informatics"]),
        ("University of California, Berkeley的Samuel S. Russell的导师是谁？", ["University of California, Berkeley", "Samuel S. Russell"]),
        ("研究data mining的Matthew O. Jones合作最多的学者写了多少篇论文？", ["data mining", "Matthew O. Jones"]),
        ("《Causal Transformers for Medical QA》的作者中谁研究computational biology？", ["Causal Transformers for Medical QA", "computational biology"]),
        ("how many papers are there?", []),
    ],
)
def test_mentions_in_english_and_chinese(question, mentions):
    assert find_mentions(question) == mentions


def test_mask_and_restore_round_trip():
    question = "Who supervised Jun Wu from Huazhong University of Science and Technology?"
    code = "person_list = searchPerson(name='Jun Wu', organization='Huazhong University of Science and Technology')\nfinal_result = 'advisor'\n"
    assert mask_question(question) == "Who supervised <|e1|> from <|o1|>?"  # an organisation gets its own family
    masked = mask_code(code, question)
    assert masked.startswith("person_list = searchPerson(name=<|e1|>, organization=<|o1|>)")
    assert "'advisor'" in masked  # a literal that is no mention stays
    assert ast.dump(ast.parse(unmask_code(masked, question))) == ast.dump(ast.parse(code))


def test_restored_mentions_are_python_literals_even_with_quotes():
    question = 'What is "Don\'t Stop: Adapting Models" about?'
    restored = unmask_code(f"final_result = searchPublication(publication_info={MARKERS[0]})", question)
    assert ast.literal_eval(restored.split("=", 2)[2].rstrip(")")) == "Don't Stop: Adapting Models"
    assert unmask_code(f"x = {MARKERS[5]}", question) == f"x = {MARKERS[5]}"  # no such mention: left for the sandbox to refuse


def test_markers_are_typed_so_word_order_does_not_change_the_program():
    """Organisation first or name first, the masked program is the same; a vocabulary term (a
    lower-case research field) is masked as <|v1|> in both languages."""
    vocabulary = frozenset({"recommender systems"})
    code = "x = searchPerson(name='Jianle Lei', organization='University of Leeds', interest='recommender systems')"
    questions = [
        "Which recommender systems researcher Jianle Lei works at University of Leeds?",
        "At University of Leeds, who is Jianle Lei (recommender systems)?",
        "University of Leeds的recommender systems学者Jianle Lei是谁？",
    ]
    masked = {mask_code(code, q, vocabulary) for q in questions}
    assert masked == {"x = searchPerson(name=<|e1|>, organization=<|o1|>, interest=<|v1|>)"}
    for q in questions:
        assert ast.dump(ast.parse(unmask_code(next(iter(masked)), q, vocabulary))) == ast.dump(ast.parse(code))
        assert "recommender" not in mask_question(q, vocabulary) and "<|v1|>" in mask_question(q, vocabulary)


@pytest.mark.parametrize("question", ['What is the URL of the paper "Scalable Recommender Systems"?', "《Systems for AI》的第一作者是谁？"])
def test_a_quoted_title_is_never_an_organisation(question):
    """Titles with "Systems" or "AI" in them stay in the `e` family: a paper question's masked
    form must not look like an organisation question's."""
    assert "<|e1|>" in mask_question(question) and "<|o" not in mask_question(question)


def test_an_argument_the_question_gives_no_value_for_is_left_out():
    program = "p = searchPerson(name=<|e1|>, organization=<|o1|>)\nq = f(organization=<|o1|>, name=<|e1|>)\nr = g(x=<|o1|>)"
    restored = unmask_code(program, "Who are the coauthors of Yang Wang?")
    assert restored == "p = searchPerson(name='Yang Wang')\nq = f(name='Yang Wang')\nr = g()"
    assert unmask_code(program, "Who are the coauthors of Yang Wang at Tsinghua University?").startswith(
        "p = searchPerson(name='Yang Wang', organization='Tsinghua University')")
