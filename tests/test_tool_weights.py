"""Tool-graph weights (Cai's thesis §3.5) and their use as the planner's retrieval prior."""

from __future__ import annotations

import pytest

from soay.agent import candidate_solutions
from soay.domains import get_domain
from soay.tool_weights import END, START, ToolWeights, load_tool_weights, weights_path

COAUTHORS = "searchPerson -> getCoauthors"
PUBS = "searchPerson -> getPersonPubs"
INFO = "searchPerson -> getPersonBasicInfo"
CITED = "searchPerson -> getCoauthors -> getPersonBasicInfo"


@pytest.fixture()
def library():
    return get_domain("aminer").library


def test_nothing_observed_is_uniform_and_changes_no_ranking(library):
    weights = ToolWeights(library.graph)
    solutions = [str(s) for s in library]
    assert {round(weights.path_prior(s), 12) for s in solutions} == {1.0}
    hits = [PUBS, COAUTHORS, PUBS, INFO, CITED]
    assert candidate_solutions(hits, solutions, weights=weights) == candidate_solutions(hits, solutions) == [PUBS, COAUTHORS, INFO]


def test_observed_paths_weight_their_edges_and_tools(library):
    weights = ToolWeights(library.graph)
    for _ in range(30):
        weights.observe(PUBS, ok=True)
    weights.observe(COAUTHORS, ok=True)
    for _ in range(10):
        weights.observe(INFO, ok=False)
    assert weights.edge_weight("searchPerson", "getPersonPubs") > 0.8
    assert weights.edge_weight("searchPerson", "getCoauthors") < 0.1
    assert weights.edge_weight(START, "searchPerson") > weights.edge_weight(START, "searchPublication")
    assert weights.edge_weight("getPersonPubs", END) > 0.8  # the observed paths stop there
    assert weights.edge_weight("searchPerson", "getPublication") == 0.0  # not an edge of the graph
    assert weights.node_weight("getPersonPubs") > 0.9 and weights.node_weight("getPersonBasicInfo") < 0.1
    assert weights.path_prior(PUBS) > weights.path_prior(COAUTHORS) > 1.0 > weights.path_prior(INFO)
    with pytest.raises(ValueError):
        weights.observe("searchPerson -> getPublication", ok=True)


def test_better_supported_paths_rank_higher_among_the_retrieved(library):
    solutions = [str(s) for s in library]
    weights = ToolWeights(library.graph)
    for _ in range(40):
        weights.observe(CITED, ok=True)
    hits = [COAUTHORS, PUBS, INFO, CITED, COAUTHORS]
    # without weights: the first three retrieved; with them the well-supported fourth enters the
    # top three, and PUBS, which shares none of the observed moves (searchPerson -> getPersonPubs
    # was never taken), falls out; the paths sharing observed moves keep their places
    assert candidate_solutions(hits, solutions) == [COAUTHORS, PUBS, INFO]
    assert weights.path_prior(CITED) > weights.path_prior(COAUTHORS) > 1.0 > weights.path_prior(PUBS)
    assert candidate_solutions(hits, solutions, weights=weights) == [COAUTHORS, CITED, INFO]
    # the prior only reorders what retrieval found: an unretrieved path never appears
    assert candidate_solutions([PUBS, INFO], solutions, weights=weights) == [INFO, PUBS]
    # a path that kept failing falls behind one retrieved later
    failing = ToolWeights(library.graph)
    for _ in range(40):
        failing.observe(COAUTHORS, ok=False)
    assert candidate_solutions([COAUTHORS, PUBS], solutions, k=2, weights=failing) == [PUBS, COAUTHORS]
    # no retrieved solution: the whole library, as before
    assert candidate_solutions([], solutions, weights=weights) == solutions


def test_weights_round_trip_through_json(library, tmp_path):
    weights = ToolWeights(library.graph)
    for s, ok in ((CITED, True), (PUBS, True), (PUBS, False), ("searchPublication -> getPublication", True)):
        weights.observe(s, ok)
    weights.dataset_version, weights.review_lines = 3, 7
    weights.save(weights_path(tmp_path))
    loaded = load_tool_weights(tmp_path, library.graph)
    assert loaded is not None and loaded.to_dict() == weights.to_dict()
    assert loaded.path_prior(CITED) == weights.path_prior(CITED)
    assert load_tool_weights(tmp_path / "none", library.graph) is None
