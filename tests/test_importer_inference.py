"""Documents as they are in the wild: what the importer infers from a TMDB-like REST document.

A small hand-written document in the shape of TMDB v3 (inline schemas with no names, lists in
paged envelopes, `{movie_id}` path parameters answered by records whose key is `id`, an API key
in the query, a schema keyword the validator rejects) must import to a library where a search
leads to the details and on to the related lists; the same document in Swagger 2.0 must import
to the same library; and the key must reach a real service on loopback from the settings or
the environment variable the binding names.
"""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import yaml
from conftest import ROOT, free_port
from live_services import running

from soay.environment.base import ApiCallError
from soay.environment.live_api import LiveApiEnvironment, LiveApiOptions
from soay.environment.live_transport import build_request, rename, reshape, unwrap
from soay.importers import import_document, write_import
from soay.solutions import SolutionLibrary
from soay.spec import load_spec

INT = {"type": "integer"}
STR = {"type": "string"}
NUM = {"type": "number"}


def _obj(**props: dict) -> dict:
    return {"type": "object", "properties": props}


def _page(item: dict) -> dict:
    return _obj(page=INT, results={"type": "array", "items": item}, total_pages=INT, total_results=INT)


def _ok(schema: dict) -> dict:
    return {"200": {"description": "ok", "content": {"application/json": {"schema": schema}}}}


def _query(name: str, required: bool = False, schema: dict = STR) -> dict:
    return {"name": name, "in": "query", "required": required, "schema": schema}


def _path(name: str) -> dict:
    return {"name": name, "in": "path", "required": True, "schema": INT}


MOVIE_SUMMARY = _obj(id=INT, title=STR, release_date=STR, popularity=NUM)
PERSON_SUMMARY = _obj(id=INT, name=STR, known_for_department=STR, popularity=NUM)
CAST = _obj(id=INT, name=STR, known_for_department=STR, popularity=NUM, character=STR, credit_id=STR)
CREW = _obj(id=INT, name=STR, known_for_department=STR, popularity=NUM, job=STR)
MOVIE = _obj(id=INT, imdb_id=STR, title=STR, release_date=STR, runtime=INT, popularity=NUM,
             belongs_to_collection=_obj(id=INT, name=STR), genres={"type": "array", "items": _obj(id=INT, name=STR)})

DOCUMENT = {
    "openapi": "3.0.3",
    "info": {"title": "Paged Movies", "version": "3", "description": "Movies, people and who played whom."},
    "servers": [{"url": "https://api.example.org/3"}],
    "security": [{"api_key": []}],
    "components": {"securitySchemes": {"api_key": {"type": "apiKey", "in": "query", "name": "api_key"}}},
    "paths": {
        "/search/movie": {"get": {
            "operationId": "searchMovie", "description": "Search for movies by their title.",
            "parameters": [_query("query", True), _query("page", schema=INT), _query("api_key")],  # the key again, as TMDB and openFEC do
            "responses": _ok(_page(MOVIE_SUMMARY))}},
        "/search/person": {"get": {
            "operationId": "searchPerson", "description": "Search for people by their name.",
            "parameters": [_query("query", True)], "responses": _ok(_page(PERSON_SUMMARY))}},
        "/movie/popular": {"get": {
            "operationId": "getPopularMovies", "description": "Movies ordered by popularity.", "responses": _ok(_page(MOVIE_SUMMARY))}},
        "/movie/{movie_id}": {
            "get": {"operationId": "getMovieDetails", "description": "The details of a movie.",
                    "parameters": [_path("movie_id")], "responses": _ok(MOVIE)}},
        "/movie/{movie_id}/credits": {"get": {
            "operationId": "getMovieCredits", "description": "The cast and crew of a movie.", "parameters": [_path("movie_id")],
            # `cache` is no schema keyword: the strict validator rejects the document here
            "responses": _ok({**_obj(id=INT, cast={"type": "array", "items": CAST}, crew={"type": "array", "items": CREW}), "cache": True})}},
        "/movie/{movie_id}/similar": {"get": {
            "operationId": "getSimilarMovies", "description": "Movies like this one.", "parameters": [_path("movie_id")],
            "responses": _ok(_page(MOVIE_SUMMARY))}},
        "/movie/{movie_id}/rating": {"delete": {
            "operationId": "deleteRating", "parameters": [_path("movie_id")], "responses": {"204": {"description": "gone"}}}},
        "/person/{person_id}": {"get": {
            "operationId": "getPersonDetails", "description": "The details of a person.", "parameters": [_path("person_id")],
            "responses": _ok(_obj(id=INT, name=STR, birthday=STR, imdb_id=STR, known_for_department=STR, popularity=NUM))}},
    },
}


def _swagger2() -> dict:
    """The same API in Swagger 2.0: named definitions, `type` on parameters, `schema` on responses."""
    def ok(ref: str) -> dict:
        return {"200": {"description": "ok", "schema": {"$ref": f"#/definitions/{ref}"}}}

    def path_param(name: str) -> dict:
        return {"name": name, "in": "path", "required": True, "type": "integer"}

    def page(item: str) -> dict:
        return _obj(page=INT, results={"type": "array", "items": {"$ref": f"#/definitions/{item}"}}, total_pages=INT, total_results=INT)

    definitions = {"MovieSummary": MOVIE_SUMMARY, "PersonSummary": PERSON_SUMMARY, "MovieListResult": page("MovieSummary"),
                   "PersonListResult": page("PersonSummary"), "MovieDetails": MOVIE,
                   "Credits": _obj(id=INT, cast={"type": "array", "items": CAST}, crew={"type": "array", "items": CREW}),
                   "PersonDetails": _obj(id=INT, name=STR, birthday=STR, imdb_id=STR, known_for_department=STR, popularity=NUM)}
    query = {"name": "query", "in": "query", "required": True, "type": "string"}
    return {
        "swagger": "2.0", "info": {"title": "Paged Movies", "version": "3"}, "host": "api.example.org", "basePath": "/3",
        "schemes": ["https"], "produces": ["application/json"],
        "securityDefinitions": {"api_key": {"type": "apiKey", "in": "query", "name": "api_key"}}, "security": [{"api_key": []}],
        "parameters": {"movieId": path_param("movie_id")}, "definitions": definitions,
        "paths": {
            "/search/movie": {"get": {"operationId": "searchMovie", "parameters": [query], "responses": ok("MovieListResult")}},
            "/search/person": {"get": {"operationId": "searchPerson", "parameters": [query], "responses": ok("PersonListResult")}},
            "/movie/popular": {"get": {"operationId": "getPopularMovies", "responses": ok("MovieListResult")}},
            "/movie/{movie_id}": {"get": {"operationId": "getMovieDetails", "parameters": [{"$ref": "#/parameters/movieId"}],
                                          "responses": ok("MovieDetails")}},
            "/movie/{movie_id}/credits": {"get": {"operationId": "getMovieCredits", "parameters": [{"$ref": "#/parameters/movieId"}],
                                                  "responses": ok("Credits")}},
            "/movie/{movie_id}/similar": {"get": {"operationId": "getSimilarMovies", "parameters": [{"$ref": "#/parameters/movieId"}],
                                                  "responses": ok("MovieListResult")}},
            "/person/{person_id}": {"get": {"operationId": "getPersonDetails", "parameters": [path_param("person_id")],
                                            "responses": ok("PersonDetails")}},
        },
    }


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("doc") / "paged-movies.json"
    path.write_text(json.dumps(DOCUMENT))
    return import_document(path, domain="paged_movies")


def _solutions(result) -> set[str]:
    return {str(s) for s in result.library}


def test_a_paged_envelope_is_unwrapped_to_a_list_of_its_records(imported) -> None:
    search = imported.spec.api("searchMovie")
    assert search.returns == "records" and search.entity == "movie"
    assert [a.name for a in search.attributes] == ["id", "title", "release_date", "popularity"]  # no page, no total_pages
    assert imported.inferred.bindings["searchMovie"]["unwrap"] == "results"
    assert any("unwrapped to the records in `results`" in n for n in imported.inferred.notes["searchMovie"])


def test_entities_come_from_paths_not_from_attribute_names(imported) -> None:
    details = imported.spec.api("getMovieDetails")
    assert details.entity == "movie" and details.relation == "self"  # not `imdb`, from its imdb_id
    assert details.attribute("imdb_id").type == "str"
    assert "imdb" not in imported.spec.entities
    assert imported.spec.api("getPersonDetails").entity == "person"
    # an aspect of the movie (credits: the movie's id beside its cast) is about the movie
    assert imported.spec.api("getMovieCredits").entity == "movie"
    # nested records take the entity whose records share their attributes: the cast are people
    assert imported.spec.api("getMovieCredits").attribute("cast").attributes[0].type == "ref:person"
    # a single nested object is a list of one record, and the binding says so
    assert imported.spec.api("getMovieDetails").attribute("belongs_to_collection").type == "records"
    assert imported.inferred.bindings["getMovieDetails"]["nested"]["belongs_to_collection"] == "one"


def test_a_result_id_is_linked_to_the_movie_id_parameter(imported) -> None:
    details = imported.spec.api("getMovieDetails")
    assert [(p.name, p.ref) for p in details.params] == [("id", "movie")]
    assert imported.spec.entities["movie"].key == "id"
    binding = imported.inferred.bindings["getMovieDetails"]
    assert (binding["path"], binding["params"], binding["names"]) == ("/movie/{movie_id}", {"id": "path"}, {"id": "movie_id"})
    solutions = _solutions(imported)
    assert "searchMovie -> getMovieDetails" in solutions  # search -> details, 2 hops
    assert "searchMovie -> getMovieCredits -> getPersonDetails" in solutions  # search -> related -> details
    assert "searchMovie -> getSimilarMovies" in solutions
    spec_text = (imported.inferred.notes["getMovieDetails"])
    assert any("called id in the spec" in n and "sends it as movie_id" in n for n in spec_text)


def test_search_and_parameterless_list_operations_head_solutions(imported) -> None:
    heads = set(imported.library.graph.heads)
    assert {"searchMovie", "searchPerson", "getPopularMovies"} <= heads
    assert not heads & {"getMovieDetails", "getMovieCredits", "getPersonDetails"}
    assert imported.spec.api("searchMovie").kind == "fuzzy" and imported.spec.api("getPopularMovies").kind == "exact"
    assert imported.spec.api("getPopularMovies").params == ()  # no input at all, still an API
    assert "getPopularMovies -> getMovieDetails" in _solutions(imported)
    assert imported.combinations and all(c["solution"].startswith(("searchMovie", "searchPerson")) for c in imported.combinations)
    popular = [n for n in imported.intent_notes if n.startswith("getPopularMovies")]
    assert popular and not any("lookup by id" in n for n in popular)
    # the search's input is filled from the record's name-like attribute, not its first text
    assert any(c["solution"] == "searchMovie -> getMovieDetails" and c["inputs"] == ["query"] for c in imported.combinations)


def test_schema_defects_are_warnings_that_name_them_and_writes_are_listed(imported) -> None:
    warnings = [str(w) for w in imported.inferred.warnings]
    assert any(w.startswith("GET /movie/{movie_id}/credits:") and "'cache'" in w for w in warnings), warnings
    assert "getMovieCredits" in imported.spec.api_names  # read despite the defect
    problems = [str(p) for p in imported.problems]
    assert problems == ["deleteRating (DELETE /movie/{movie_id}/rating): DELETE changes data; only reads become APIs"]
    assert imported.summary()["operations"] == 8 and imported.summary()["imported"] == 7


def test_the_written_spec_carries_every_inference_and_a_corrected_one_is_taken_as_is(imported, tmp_path: Path) -> None:
    paths = write_import(imported, tmp_path / "paged_movies.yaml")
    text = paths["spec"].read_text()
    assert "# inferred: parameter movie_id is called id in the spec" in text
    assert "# inferred: the answer is a page" in text and "Read despite defects (warnings):" in text
    assert "7 of 8 operations imported." in text
    assert "# inferred: the API wants a key (api_key: query 'api_key'); it is sent from the live_api.api_key" in text
    binding = yaml.safe_load(paths["binding"].read_text())
    assert binding["auth"] == {"env": "PAGED_MOVIES_API_KEY", "schemes": [
        {"scheme": "api_key", "type": "apiKey", "in": "query", "name": "api_key"}]}
    assert "api_key" not in binding["apis"]["searchMovie"]["params"]  # the key is no input
    # a person corrects an inference (the lookup's input back to the document's name): the spec is
    # taken as written, and the call still goes where the document says
    start = text.index("  - name: getMovieDetails")
    corrected = text[:start] + text[start:].replace("name: id\n", "name: movie_id\n", 1)
    paths["spec"].write_text(corrected)
    spec = load_spec(paths["spec"])
    assert [p.name for p in spec.api("getMovieDetails").params] == ["movie_id"]
    assert "searchMovie -> getMovieDetails" not in {str(s) for s in SolutionLibrary(spec)}  # the person's call
    with httpx.Client(base_url="http://127.0.0.1:9") as client:
        request = build_request(client, binding, "getMovieDetails", {"movie_id": 949}, key="k")
    assert request.url.path == "/movie/949" and request.url.params["api_key"] == "k"


def test_swagger_2_imports_to_the_same_library(imported, tmp_path: Path) -> None:
    path = tmp_path / "swagger.yaml"
    path.write_text(yaml.safe_dump(_swagger2()))
    result = import_document(path, domain="paged_movies")
    assert result.problems == []
    assert _solutions(result) == _solutions(imported)
    assert result.transport["servers"] == ["https://api.example.org/3"]
    assert result.inferred.bindings["getMovieCredits"]["names"] == {"id": "movie_id"}
    assert result.spec.api("searchMovie").entity == "movie"  # MovieListResult -> its items, MovieSummary -> movie


@contextmanager
def _paged_movies_server(key: str) -> Iterator[str]:
    port = free_port()
    cmd = [sys.executable, str(ROOT / "tests" / "paged_movies_server.py"), "--port", str(port), "--key", key]
    with running(cmd, "/healthz", port) as url:
        yield url


@pytest.fixture(scope="module")
def written(imported, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_import(imported, tmp_path_factory.mktemp("written") / "paged_movies.yaml")["spec"]


def _env(spec: Path, url: str, tmp: Path, **options) -> LiveApiEnvironment:
    return LiveApiEnvironment(LiveApiOptions(spec_path=str(spec), base_url=url, cache_path=str(tmp / "cache.sqlite"),
                                             attempts=1, **options))


def test_the_key_is_sent_from_the_settings_or_the_environment(written: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("PAGED_MOVIES_API_KEY", raising=False)
    with _paged_movies_server("s3cret") as url:
        env = _env(written, url, tmp_path / "settings", api_key="s3cret")
        found = env.call("searchMovie", query="heat")  # the page unwrapped: a list of records
        assert [m["title"] for m in found] == ["Heat"]
        movie = env.call("getMovieDetails", id=found[0]["id"])  # the search's `id` feeds {movie_id}
        assert movie["imdb_id"] == "tt0113277" and movie["belongs_to_collection"] is None
        cast = env.call("getMovieCredits", id=movie["id"])["cast"]
        assert env.call("getPersonDetails", id=cast[0]["id"])["name"] == "Al Pacino"
        assert env.call("getMovieDetails", id=155)["belongs_to_collection"] == [{"id": 263, "name": "The Dark Knight Collection"}]
        assert [m["title"] for m in env.call("getPopularMovies")] == ["The Dark Knight", "Heat"]
        assert httpx.get(f"{url}/last-key").json() == {"key": "s3cret"}
        env.close()

        without = _env(written, url, tmp_path / "none")
        with pytest.raises(ApiCallError, match="Invalid API key"):
            without.call("searchMovie", query="heat")
        without.close()

        monkeypatch.setenv("PAGED_MOVIES_API_KEY", "s3cret")  # read at call time, from the variable the binding names
        from_env = _env(written, url, tmp_path / "env")
        assert [m["title"] for m in from_env.call("searchMovie", query="knight")] == ["The Dark Knight"]
        from_env.close()


def test_a_broken_operation_costs_only_itself(tmp_path: Path) -> None:
    document = copy.deepcopy(DOCUMENT)
    document["paths"]["/movie/{movie_id}/similar"]["get"]["responses"] = _ok({"$ref": "#/components/schemas/Missing"})
    document["paths"]["/person/{person_id}"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]["properties"] = ["not", "a", "map"]
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(document))
    result = import_document(path, domain="paged_movies")
    problems = {p.operation.split(" ")[0]: p.reason for p in result.problems}
    assert "broken $ref '#/components/schemas/Missing'" in problems["getSimilarMovies"]
    # the validator cannot run past a broken $ref; the OpenAPI schema alone still names the defect
    warnings = [str(w) for w in result.inferred.warnings]
    assert any(w.startswith("GET /person/{person_id}:") and "is not of type 'object'" in w for w in warnings), warnings
    assert all(len(w) < 400 for w in warnings)
    assert "getPersonDetails" in result.spec.api_names  # read past: a record without attributes, noted for review
    assert any("declares no attributes" in n for n in result.inferred.notes["getPersonDetails"])
    assert "getMovieDetails" in result.spec.api_names and "searchMovie -> getMovieDetails" in _solutions(result)


SWAPI_LIKE = """
type Query {
  allPeople(after: String, first: Int): PeopleConnection
  person(id: ID, personID: ID): Person
  planet(id: ID, planetID: ID): Planet
}
type PageInfo { hasNextPage: Boolean! endCursor: String }
type PeopleConnection { pageInfo: PageInfo! totalCount: Int edges: [PeopleEdge] people: [Person] }
type PeopleEdge { node: Person cursor: String! }
type Person { id: ID! name: String birthYear: String homeworld: Planet filmConnection: PersonFilmsConnection }
type PersonFilmsConnection { pageInfo: PageInfo! edges: [FilmEdge] films: [Film] }
type FilmEdge { node: Film cursor: String! }
type Film { id: ID! title: String }
type Planet { id: ID! name: String population: Float }
"""


def test_graphql_connections_and_nested_objects_read_as_records(tmp_path: Path) -> None:
    path = tmp_path / "swapi.graphql"
    path.write_text(SWAPI_LIKE)
    result = import_document(path, domain="swapi")
    people = result.spec.api("allPeople")
    assert people.returns == "records" and people.entity == "person" and people.kind == "exact"
    assert result.inferred.bindings["allPeople"]["unwrap"] == "people"
    # a list reads its items' own fields; their related records are the lookup's
    assert "homeworld" not in people.attribute_names and "allPeople -> person" in _solutions(result)
    person = result.spec.api("person")
    assert [(p.name, p.ref, p.required) for p in person.params] == [("id", "person", False), ("personID", "person", False)]
    assert person.attribute("homeworld").attributes[0].type == "ref:planet"
    assert result.inferred.bindings["person"]["nested"] == {"homeworld": "one", "filmConnection": "films"}
    assert "filmConnection { films { id title } }" in result.inferred.bindings["person"]["query"]
    assert "allPeople -> person -> planet" in _solutions(result)
    # the transport reshapes the answer the way the spec reads it
    answer = {"id": "cGVvcGxlOjE=", "name": "Luke", "homeworld": {"id": "cGxhbmV0czox", "name": "Tatooine"},
              "filmConnection": {"films": [{"id": "ZmlsbXM6MQ==", "title": "A New Hope"}]}}
    assert reshape(answer, result.inferred.bindings["person"]["nested"]) == {
        **answer, "homeworld": [answer["homeworld"]], "filmConnection": answer["filmConnection"]["films"]}
    assert unwrap({"people": [answer], "totalCount": 1}, "people") == [answer]


def test_a_lookup_by_a_key_a_person_types_is_a_head_too(tmp_path: Path) -> None:
    """D&D 5e style: `{index}` slugs whose values the document lists, and an object envelope."""
    reference = _obj(index=STR, name=STR, url=STR)
    document = {
        "openapi": "3.0.1", "info": {"title": "Spells", "version": "1"},
        "paths": {
            "/api/spells": {"get": {"operationId": "listSpells", "responses": _ok(_obj(count=INT, results={"type": "array", "items": reference}))}},
            "/api/spells/{index}": {"get": {
                "operationId": "getSpell", "parameters": [{"name": "index", "in": "path", "required": True,
                                                            "schema": {"type": "string", "enum": ["fireball", "acid-arrow"]}}],
                "responses": _ok({"type": "object", "properties": {"data": _obj(index=STR, name=STR, level=INT, school=reference),
                                                                    "errors": {"type": "array", "items": STR}}})}},
            "/api/magic-schools/{index}": {"get": {
                "operationId": "getMagicSchool", "parameters": [{"name": "index", "in": "path", "required": True, "schema": STR}],
                "responses": _ok(_obj(index=STR, name=STR, desc=STR))}},
        },
    }
    path = tmp_path / "spells.json"
    path.write_text(json.dumps(document))
    result = import_document(path, domain="spells")
    spell = result.spec.api("getSpell")
    assert result.inferred.bindings["getSpell"]["unwrap"] == "data" and spell.returns == "record"  # {"data": {...}} unwrapped
    assert result.spec.entities["spell"].key == "index" and result.spec.entities["spell"].typed
    assert {"listSpells", "getSpell"} <= set(result.library.graph.heads)  # "fireball" is typed by a person
    assert spell.attribute("school").attributes[0].type == "ref:magic_school"  # `school` names the magic-school entity
    assert {"getSpell", "listSpells -> getSpell", "getSpell -> getMagicSchool"} <= _solutions(result)


def test_a_search_answering_id_links_like_the_records_that_answer_the_key(tmp_path: Path) -> None:
    """openFEC: the typeahead answers `id`, every other candidate record `candidate_id`."""
    page = lambda item: _obj(pagination=_obj(page=INT, pages=INT), results={"type": "array", "items": item})  # noqa: E731
    document = {
        "openapi": "3.0.0", "info": {"title": "Elections", "version": "1"},
        "paths": {
            "/names/candidates/": {"get": {"operationId": "getNamesCandidates", "parameters": [_query("q", True)],
                                           "responses": _ok(_obj(results={"type": "array", "items": _obj(id=STR, name=STR)}))}},
            "/candidate/{candidate_id}/": {"get": {"operationId": "getCandidate", "parameters": [
                {"name": "candidate_id", "in": "path", "required": True, "schema": STR}],
                "responses": _ok(page(_obj(candidate_id=STR, name=STR, party=STR)))}},
        },
    }
    path = tmp_path / "elections.json"
    path.write_text(json.dumps(document))
    result = import_document(path, domain="elections")
    assert result.spec.entities["candidate"].key == "candidate_id"
    assert result.spec.api("getNamesCandidates").attribute_names == ("candidate_id", "name")
    assert result.inferred.bindings["getNamesCandidates"]["fields"] == {"candidate_id": "id"}
    assert "getNamesCandidates -> getCandidate" in _solutions(result)
    assert result.spec.api("getCandidate").relation == "self"  # a page of the one looked up is the record itself
    assert rename([{"id": "P80001571", "name": "TRUMP"}], {"candidate_id": "id"}) == [{"name": "TRUMP", "candidate_id": "P80001571"}]


def _import(tmp_path: Path, document: dict, domain: str):
    path = tmp_path / f"{domain}.json"
    path.write_text(json.dumps(document))
    return import_document(path, domain=domain)


def _str_path(name: str, **extra) -> dict:
    return {"name": name, "in": "path", "required": True, "schema": STR, **extra}


def test_a_key_that_is_a_code_or_reads_as_words_is_typed_and_its_lookups_head_solutions(tmp_path: Path) -> None:
    """A harbour API: a port's `{portId}` takes the port's `code` ("NLRTM"), a zone's `{zoneId}` an id
    whose example reads as words ("Europe__Paris"); a vessel's id is a number, which nobody types."""
    zone = {**_obj(id=STR, label=STR, offset_hours=INT), "example": {"id": "Europe__Paris", "label": "Paris", "offset_hours": 1}}
    vessel = {**_obj(id=STR, name=STR, flag=STR), "example": {"id": "9321483", "name": "Emma Maersk", "flag": "DK"}}
    document = {
        "openapi": "3.0.3", "info": {"title": "Harbours", "version": "1"},
        "paths": {
            "/ports": {"get": {"operationId": "searchPorts", "parameters": [_query("namePrefix")],
                               "responses": _ok(_obj(data={"type": "array", "items": _obj(code=STR, name=STR)}))}},
            "/ports/{portId}": {"get": {"operationId": "getPort", "parameters": [_str_path("portId", description="A port's UN code")],
                                        "responses": _ok(_obj(code=STR, name=STR, berths=INT))}},
            "/ports/{portId}/berths/{berthNo}": {"get": {
                "operationId": "getBerth", "parameters": [_str_path("portId"), _path("berthNo")],
                "responses": _ok(_obj(number=INT, depth_m=NUM))}},
            "/zones": {"get": {"operationId": "listZones", "responses": _ok({"type": "array", "items": zone})}},
            "/zones/{zoneId}/clock": {"get": {"operationId": "getZoneClock", "parameters": [_str_path("zoneId")],
                                              "responses": _ok(_obj(id=STR, local_time=STR))}},
            "/vessels": {"get": {"operationId": "searchVessels", "parameters": [_query("name", True)],
                                 "responses": _ok({"type": "array", "items": vessel})}},
            "/vessels/{vesselId}": {"get": {"operationId": "getVessel", "parameters": [_str_path("vesselId")],
                                            "responses": _ok({**vessel, "properties": {**vessel["properties"], "tonnage": INT}})}},
        },
    }
    result = _import(tmp_path, document, "harbours")
    entities = result.spec.entities
    assert (entities["port"].key, entities["port"].typed) == ("code", True)  # a code, though the input says "id"
    assert (entities["zone"].key, entities["zone"].typed) == ("id", True)  # its example reads as words
    assert not entities["vessel"].typed  # "9321483" is an opaque number
    notes = " ".join(result.inferred.notes["entities"])
    assert "port: typed, its key code is a code a person writes" in notes and "Europe__Paris" in notes
    heads = set(result.library.graph.heads)
    # a lookup by a typed key starts solutions, also when it needs a plain number beside it ("berth 4 of NLRTM")
    assert {"getPort", "getBerth", "getZoneClock"} <= heads
    assert "getVessel" not in heads and "searchVessels -> getVessel" in _solutions(result)
    assert "getZoneClock" in _solutions(result) and "listZones -> getZoneClock" in _solutions(result)


MUSICIAN = _obj(musician_id=STR, name=STR, instrument=STR)
RECORDING = _obj(recording_id=STR, title=STR, musician_id=STR, year=INT)
ORCHESTRA = {
    "openapi": "3.0.3", "info": {"title": "Orchestra", "version": "1"},
    "paths": {
        "/search/musicians": {"get": {"operationId": "searchMusicians", "parameters": [_query("q", True)],
                                      "responses": _ok(_obj(results={"type": "array", "items": MUSICIAN}))}},
        "/musicians/{musician_id}": {"get": {"operationId": "getMusician", "parameters": [_str_path("musician_id")],
                                             "responses": _ok(MUSICIAN)}},
        "/recordings/{recording_id}": {"get": {"operationId": "getRecording", "parameters": [_str_path("recording_id")],
                                               "responses": _ok(RECORDING)}},
        # optional identifier filters: one musician's recordings; concerts with (or without) some musicians
        "/recordings": {"get": {"operationId": "listRecordings", "parameters": [_query("musician_id"), _query("year", schema=INT)],
                                "responses": _ok(_obj(results={"type": "array", "items": RECORDING}))}},
        "/concerts": {"get": {"operationId": "listConcerts", "parameters": [
            {**_query("musicianIds"), "description": "comma-separated musician ids"}, _query("excludedMusicianIds"), _query("city")],
            "responses": _ok({"type": "array", "items": _obj(concert_id=STR, city=STR, date=STR)})}},
        "/royalties": {"get": {"operationId": "listRoyalties", "parameters": [_query("musician_id")],
                               "responses": _ok({"type": "array", "items": _obj(period=STR, amount=NUM)})}},
    },
}


def test_an_optional_identifier_filter_is_a_hop_from_the_entity_found_before(tmp_path: Path) -> None:
    result = _import(tmp_path, ORCHESTRA, "orchestra")
    recordings = result.spec.api("listRecordings")
    assert [(p.name, p.ref, p.required) for p in recordings.params] == [("musician_id", "musician", False), ("year", None, False)]
    assert recordings.kind == "exact" and recordings.relation == "self"  # a filter is no key: still a list by itself
    assert any("filters by musician: an optional hop" in n for n in result.inferred.notes["listRecordings"])
    solutions = _solutions(result)
    assert {"searchMusicians -> listRecordings", "searchMusicians -> listRoyalties"} <= solutions
    assert any(c.dst == "listRecordings" and c.param == "musician_id" for c in result.library.graph.successors("getMusician"))
    # `musicianIds` takes a list of a known entity's ids: called by the key in the spec, sent under its own name
    concerts = result.spec.api("listConcerts")
    assert [(p.name, p.ref) for p in concerts.params] == [("musician_id", "musician"), ("excludedMusicianIds", None), ("city", None)]
    assert result.inferred.bindings["listConcerts"]["names"] == {"musician_id": "musicianIds"}
    assert "searchMusicians -> listConcerts" in solutions
    # the filtered lists still start solutions: the edges into a filter do not count against a head
    assert {"listRecordings", "listConcerts", "listRoyalties"} <= set(result.library.graph.heads)
    # a filter takes the id of the musician found before, not one a recording mentions
    assert "listRecordings -> getMusician" in solutions  # a required id links from any record carrying it
    assert not any(c.dst == "listRoyalties" for c in result.library.graph.successors("getRecording"))
    assert not any(c.dst == "listRoyalties" for c in result.library.graph.successors("listRecordings"))


def test_generic_reference_records_and_references_nested_deeper_link_to_their_lookups(tmp_path: Path) -> None:
    """A recipe API: a generic `Link` {slug, title, href} points anywhere; the example's `href` says where.
    A step's `tool` is a reference inside nested records, deeper than the spec nests: it is lifted."""
    link = {"type": "object", "properties": {"slug": STR, "title": STR, "href": STR}}
    recipe = {"type": "object", "properties": {
        "slug": STR, "title": STR,
        "needs": {"type": "array", "items": {"$ref": "#/components/schemas/Link"}},
        "steps": {"type": "array", "items": _obj(text=STR, minutes=INT, tool={"$ref": "#/components/schemas/Link"},
                                                 timer=_obj(seconds=INT, sound=STR))}}}
    example = {"slug": "pancakes", "title": "Pancakes",
               "needs": [{"slug": "flour", "title": "Flour", "href": "https://food.example.org/v2/ingredients/flour"}],
               "steps": [{"text": "Whisk", "minutes": 2, "tool": {"slug": "whisk", "title": "Whisk", "href": "/v2/utensils/whisk"}}]}
    document = {
        "openapi": "3.0.3", "info": {"title": "Recipes", "version": "2"}, "servers": [{"url": "https://food.example.org/v2"}],
        "components": {"schemas": {"Link": link, "Recipe": recipe}},
        "paths": {
            "/recipes/{slug}": {"get": {"operationId": "getRecipe", "parameters": [_str_path("slug")], "responses": {"200": {
                "description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Recipe"}, "example": example}}}}}},
            "/ingredients/{slug}": {"get": {"operationId": "getIngredient", "parameters": [_str_path("slug")],
                                            "responses": _ok(_obj(slug=STR, title=STR, kcal=INT))}},
            "/utensils/{slug}": {"get": {"operationId": "getUtensil", "parameters": [_str_path("slug")],
                                         "responses": _ok(_obj(slug=STR, title=STR, material=STR))}},
        },
    }
    result = _import(tmp_path, document, "recipes")
    recipe_api = result.spec.api("getRecipe")
    # `needs` names no entity; the example's href is a URL of the ingredient lookup
    assert recipe_api.attribute("needs").attributes[0].type == "ref:ingredient"
    assert any("example href https://food.example.org/v2/ingredients/flour is a URL of its lookup" in n
               for n in result.inferred.notes["getRecipe"])
    # the step's tool (steps[].tool) is lifted to the recipe; the step keeps its own values
    assert [a.name for a in recipe_api.attribute("steps").attributes] == ["text", "minutes"]
    assert [(a.name, a.type) for a in recipe_api.attribute("tool").attributes] == [("slug", "ref:utensil"), ("title", "str"), ("href", "str")]
    binding = result.inferred.bindings["getRecipe"]
    assert binding["nested"] == {"tool": "from:steps.tool"}
    notes = " ".join(result.inferred.notes["getRecipe"])
    assert "steps.tool, a reference nested deeper than records nest, is lifted" in notes
    assert "steps.timer is an object inside nested records that identifies nothing" in notes  # left out, as before
    assert {"getRecipe -> getIngredient", "getRecipe -> getUtensil"} <= _solutions(result)
    # the transport collects the lifted references where the binding says, through lists and single objects
    answer = {**example, "steps": [example["steps"][0], {"text": "Fry", "tool": {"slug": "pan", "href": "/v2/utensils/pan"}},
                                   {"text": "Whisk again", "tool": example["steps"][0]["tool"]}]}
    shaped = reshape(answer, binding["nested"])
    assert [t["slug"] for t in shaped["tool"]] == ["whisk", "pan"] and shaped["steps"] == answer["steps"]
    assert reshape({"slug": "x", "steps": None}, binding["nested"])["tool"] == []
