"""The enlargement job's decisions on one log record: verification, identity, combination matching."""

from __future__ import annotations

import pytest

from soay.code_builder import build_code
from soay.domains import get_domain
from soay.log_triplets import CombinationMatcher, dedupe_key, log_triplet_id, path_problem, query_language, rerun_problem


@pytest.fixture(scope="module", params=["aminer", "movies"])
def domain(request):
    return get_domain(request.param)


def test_a_rerun_verifies_only_a_reproduced_non_empty_result():
    assert rerun_problem(True, ["Ann", "Bo"], ["bo ", "ann"]) is None  # the answers_match normalisation
    assert rerun_problem(False, "x", None) == "exec_error"
    assert rerun_problem(True, "x", "y") == "mismatch"
    assert rerun_problem(True, 3, 3.0) is None
    for empty in (None, "", "  ", [], {}):
        assert rerun_problem(True, empty, empty) == "empty_result"
    assert rerun_problem(True, 0, 0) is None and rerun_problem(True, False, False) is None  # a zero count is an answer


def test_identity_and_deduplication_keys():
    assert log_triplet_id("r-1") == log_triplet_id("r-1") != log_triplet_id("r-2")
    assert dedupe_key("Who is  Ann?", "searchPerson->getCoauthors") == dedupe_key(" who is ann? ", "searchPerson -> getCoauthors")
    assert dedupe_key("Who is Ann?", "searchPerson") != dedupe_key("Who is Ann?", "searchPerson -> getCoauthors")
    assert query_language("谁是 Ann 的导师?") == "zh" and query_language("Who?") == "en" and query_language("Who?", "zh") == "zh"


def test_calls_must_walk_the_solution():
    apis = ("searchPerson", "getCoauthors", "getPersonInterest")
    assert path_problem(apis, ["searchPerson", "getCoauthors", "getPersonInterest", "getPersonInterest"]) is None
    assert path_problem(apis, ["searchPerson", "getCoauthors"]) == "path_mismatch"
    assert path_problem(apis, ["getCoauthors", "searchPerson", "getPersonInterest"]) == "path_mismatch"
    assert path_problem(apis, []) == "path_mismatch"


def test_every_library_program_is_recognised_with_its_inputs_and_nothing_else(domain):
    matcher = CombinationMatcher(domain.combinations)
    for c in domain.combinations:
        solution = domain.combinations.solution(c)
        values = {p: f"it's \"{p}\" 名字 \\ {n}" for n, p in enumerate(sorted(c.placeholders))}  # quotes, escapes, CJK
        code = build_code(domain.spec, c, solution, values)
        match = matcher.match(c.apis, code)
        assert match is not None and match.combination.id == c.id and match.values == values, c.id
        assert matcher.match(c.apis, "# a comment\n" + code.replace(" = ", "=") + "\n\n") is not None  # layout is not shape
        assert matcher.match(c.apis, "extra = 1\n" + code) is None
        assert matcher.match(c.apis, code.replace("final_result", "result")) is None
        assert matcher.match(c.apis, code + "final_result = 0\n") is None
        assert matcher.match(c.apis, code[: len(code) // 2]) is None
        others = [s.apis for s in domain.library if s.apis != c.apis]
        assert all(matcher.match(apis, code) is None for apis in others)


def test_a_changed_literal_that_is_not_an_input_is_another_program():
    domain = get_domain("aminer")
    matcher = CombinationMatcher(domain.combinations)
    c = domain.combinations.by_id["advisor_name"]  # filters co-authors on the literal relation "advisor"
    code = build_code(domain.spec, c, domain.combinations.solution(c), {p: "X" for p in c.placeholders})
    assert matcher.match(c.apis, code) is not None
    student = matcher.match(c.apis, code.replace("'advisor'", "'student'"))
    assert student is not None and student.combination.id == "student_names"  # that literal is another intent
    assert "'advisor'" in code and matcher.match(c.apis, code.replace("'advisor'", "'colleague'")) is None


def test_a_program_without_an_optional_head_input_is_recognised(domain):
    """Serving leaves out a keyword argument the question gives no value for ("coauthors of Wei
    Zhang" searches by name alone): the program is still its combination's, with fewer inputs."""
    matcher = CombinationMatcher(domain.combinations)
    reduced = 0
    for c in domain.combinations:
        head = domain.spec.api(c.apis[0])
        optional = [p for p in c.inputs[1:] if not next(q for q in head.params if q.name == p).required]
        if not optional or c.group:  # a group question without its field is another one (scholars_at_organization)
            continue
        asked = c.model_copy(update={"inputs": tuple(p for p in c.inputs if p not in optional)})
        values = {p: f"v{n}" for n, p in enumerate(sorted(asked.placeholders))}
        code = build_code(domain.spec, asked, domain.combinations.solution(c), values)
        match = matcher.match(c.apis, code)
        assert match is not None and match.combination.id == c.id and match.values == values, c.id
        assert matcher.match(c.apis, "extra = 1\n" + code) is None
        reduced += 1
    assert reduced > 0 or domain.name == "movies"


def test_a_program_whose_head_search_takes_other_filters_is_recognised():
    """Serving gives the head search every filter the question has, in its own order, also one the
    combination's program does not take (an interest for an email): still that combination's
    program, with the extra filter among its values; but a head call without the combination's
    own inputs, or with a parameter the search does not take, is no program of it."""
    domain = get_domain("aminer")
    matcher = CombinationMatcher(domain.combinations)
    c = domain.combinations.by_id["person_email"]
    code = build_code(domain.spec, c, domain.combinations.solution(c), {"name": "Anna Schmidt", "organization": "ETH Zurich"})
    wider = code.replace("searchPerson(name='Anna Schmidt', organization='ETH Zurich')",
                         "searchPerson(interest='natural language processing', organization='ETH Zurich', name='Anna Schmidt')")
    assert wider != code
    match = matcher.match(c.apis, wider)
    assert match is not None and match.combination.id == "person_email"
    assert match.values == {"name": "Anna Schmidt", "organization": "ETH Zurich", "interest": "natural language processing"}
    assert matcher.match(c.apis, wider.replace("name='Anna Schmidt'", "year='2020'")) is None
    assert matcher.match(c.apis, wider.replace(", name='Anna Schmidt'", "")) is None  # the name is no optional filter here
