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
        # unquoted titles are one mention, not three; a name and a place stay two
        ("what year did Towards Sparse Attention for Long Documents in Legal Texts come out", ["Towards Sparse Attention for Long Documents in Legal Texts"]),
        ("need the venue of GraphMix: Robust Node Classification under Label Noise for my bib", ["GraphMix: Robust Node Classification under Label Noise"]),
        ("GraphMix: Robust Node Classification under Label Noise这篇发在哪？", ["GraphMix: Robust Node Classification under Label Noise"]),
        ("Who are the coauthors of Paul Jones of Carnegie Mellon?", ["Paul Jones", "Carnegie Mellon"]),
        ("Hi, I've a question on Mary Ann Smith and Bo Li", ["Mary Ann Smith", "Bo Li"]),
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


@pytest.mark.parametrize(
    ("question", "masked"),
    [
        ("Peking UniversityPengdong Ding的E-mail是多少？", "<|o1|><|e1|>的<|e2|>是多少？"),
        ("University of CambridgeRobert V. Carter的导师是谁？", "<|o1|><|e1|>的导师是谁？"),
        ("Han Han Georgia Institute of Technology advisor", "<|e1|> <|o1|> advisor"),
        ("Who supervised Robert V. CarterUniversity of Cambridge?", "Who supervised <|e1|><|o1|>?"),
        # an organisation nobody trained on is found as before
        ("Who supervised Robert V. Carter of Tsinghua University?", "Who supervised <|e1|> of <|o1|>?"),
    ],
)
def test_a_known_organisation_is_split_from_a_name_written_against_it(question, masked):
    """The cased terms of the literal vocabulary are organisations of the training questions,
    matched exactly before mention detection: without them each of the first four is misread
    (one long mention, or an organisation cut in two)."""
    vocabulary = frozenset({"Peking University", "University of Cambridge", "Georgia Institute of Technology", "data mining"})
    organisations = vocabulary - {"data mining"}
    known = any(o in question for o in organisations)
    assert (find_mentions(question) != find_mentions(question, organisations)) == known
    assert mask_question(question, vocabulary) == masked
    code = "p = searchPerson(name=<|e1|>, organization=<|o1|>)"
    restored = unmask_code(code, question, vocabulary)
    assert "<|" not in restored and "organization='" in restored
