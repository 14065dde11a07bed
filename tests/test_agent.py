"""The agent steps shared by SoAyEval and the service: planner choices, coder candidates, scoring."""

from __future__ import annotations

from dataclasses import dataclass

from soay.agent import PLAN_RANK_PRIOR, candidate_programs, candidate_solutions, choose_program, choose_solution, continuation_logprobs


def hit(query: str, solution: str, code: str) -> dict:
    return {"query": query, "solution": solution, "code": code}


def test_planner_chooses_among_retrieved_solutions_of_the_library():
    library = ["searchPerson", "searchPerson -> getCoauthors", "searchPublication"]
    found = ["searchPerson -> getCoauthors", "searchPerson -> getCoauthors", "nonsense", "searchPerson", "searchPublication"]
    assert candidate_solutions(found, library, k=2) == ["searchPerson -> getCoauthors", "searchPerson"]
    assert candidate_solutions([], library) == library  # an empty index leaves the whole library


def test_coder_candidates_are_distinct_masked_programs_of_the_solution():
    hits = [
        hit("Who supervised Ann Lee from MIT?", "s", "x = searchPerson(name='Ann Lee', organization='MIT')"),
        hit("Who supervised Bo Chen from Yale University?", "s", "x = searchPerson(name='Bo Chen', organization='Yale University')"),
        hit("Who is Cy Li?", "other", "x = searchPerson(name='Cy Li')"),
        hit("Yale University的Bo Chen的导师是谁？", "s", "x = searchPerson(name='Bo Chen', organization='Yale University')"),
        hit("Who supervised Di Wu, Yale?", "s", "x = searchPerson(name='Yale', organization='Di Wu')"),
    ]
    # typed markers: English and Chinese word order give one program; another binding is another
    assert candidate_programs("s", hits) == [
        "x = searchPerson(name=<|e1|>, organization=<|o1|>)",
        "x = searchPerson(name=<|e2|>, organization=<|e1|>)",
    ]


@dataclass
class Logprob:
    logprob: float


def test_continuation_logprobs_are_only_the_tokens_after_the_prefix():
    tokens = [1, 2, 3, 4]
    logprobs = [None, {2: Logprob(-9.0)}, {3: Logprob(-1.0)}, {4: Logprob(-3.0)}]
    assert continuation_logprobs(tokens, logprobs, prefix_tokens=2) == [-1.0, -3.0]


def test_coder_pick_is_per_token_likelihood_so_length_does_not_decide():
    programs = ["short", "long", "unscored"]
    # the long program has the lower sum but the higher mean; a program with no tokens never wins
    assert choose_program(programs, [[-2.0, -2.0], [-1.0, -1.0, -1.0, -1.0, -1.0], []]) == "long"
    assert choose_program(programs, [[-0.5, -0.5], [-1.0, -1.0, -1.0, -1.0, -1.0], []]) == "short"


def test_planner_pick_weighs_whole_sequence_likelihood_and_retrieval_order():
    candidates = ["searchPerson -> getPersonPubs", "searchPerson"]  # retrieval put the two-hop first
    # the one-hop solution is likelier as a whole by more than the prior of one place: it wins
    assert choose_solution(candidates, [[-1.0, -2.0], [-3.0 + 2 * PLAN_RANK_PRIOR]]) == "searchPerson"
    # likelier by less than the prior: the retriever's order decides
    assert choose_solution(candidates, [[-1.0, -2.0], [-3.0 + PLAN_RANK_PRIOR / 2]]) == "searchPerson -> getPersonPubs"
