"""`soay spec import`: OpenAPI and GraphQL documents become the same API library as the hand-written specs.

The documents are real: the HTTP clone's OpenAPI document (`soay api serve`), the GraphQL
server of the movies domain, both on loopback, and a third-party OpenAPI document shipped in
the prance package. Bad documents must end with one clear line and exit status 2.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx
import prance
import pytest
import yaml
from conftest import ROOT, SOAY
from live_services import graphql_movies, http_clone

from soay.combinations import load_combinations
from soay.domains import get_domain
from soay.environment.movies_corpus import build_movie_corpus
from soay.importers import SpecImportError, import_document, write_import
from soay.solutions import SolutionLibrary
from soay.spec import ApiSpec, load_spec


@pytest.fixture(scope="module")
def movies_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("movies") / "corpus.sqlite"
    build_movie_corpus(path, size=2000, seed=0)
    return path


def _edges(library: SolutionLibrary) -> list[tuple[str, str, str]]:
    return sorted((src, c.dst, ".".join(c.path)) for src, cs in library.graph.edges.items() for c in cs)


def assert_same_library(imported: ApiSpec, intents: Path, domain: str) -> None:
    """Graph, heads, solutions, what each API is, and the solutions the combinations cover."""
    hand = get_domain(domain)
    library = SolutionLibrary(imported)
    assert _edges(library) == _edges(hand.library)
    assert library.graph.heads == hand.library.graph.heads
    assert [str(s) for s in library] == [str(s) for s in hand.library]
    entity = {}
    for got, want in zip(imported.apis, hand.spec.apis, strict=True):
        assert (got.name, got.kind, got.returns) == (want.name, want.kind, want.returns)
        assert [(p.name, p.required, p.ref is not None) for p in got.params] == [(p.name, p.required, p.ref is not None) for p in want.params]
        assert [a.name for a in got.attributes] == [a.name for a in want.attributes]
        assert (got.relation in ("self", "search")) == (want.relation in ("self", "search")), got.name
        assert entity.setdefault(want.entity, got.entity) == got.entity  # a renaming, the same for every API
        assert got.description == " ".join(want.description.split())
    # the generated intents load like hand-written ones and cover the same solutions
    combinations = load_combinations(imported, library, intents)
    assert combinations.solutions_used == hand.combinations.solutions_used


def test_openapi_of_the_aminer_clone_imports_to_the_aminer_library(api_server, tmp_path: Path) -> None:
    url, _ = api_server
    document = tmp_path / "aminer-openapi.json"
    document.write_text(httpx.get(f"{url}/openapi.json").text)
    out = tmp_path / "spec" / "aminer.yaml"
    done = subprocess.run([*SOAY, "spec", "import", str(document), "--domain", "aminer", "--out", str(out), "--json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["not_imported"] == [] and summary["solutions"] == 15
    spec = load_spec(out)
    assert_same_library(spec, out.with_name("aminer.intents.yaml"), "aminer")
    text = out.read_text()
    # what was guessed is marked for the reviewer
    assert "# inferred: kind fuzzy" in text and "# inferred: parameter person_id refers to person" in text
    assert spec.entities["publication"].key == "pub_id" and spec.entities["person"].label == "scholar"
    binding = yaml.safe_load(out.with_name("aminer.binding.yaml").read_text())
    assert binding["apis"]["getCoauthors"] == {"method": "POST", "path": "/api/getCoauthors", "params": {"person_id": "body"}}


def test_movies_over_http_and_over_graphql_import_to_the_movies_library(movies_db: Path, tmp_path: Path) -> None:
    with http_clone("movies", movies_db) as url:
        rest = import_document(f"{url}/openapi.json", domain="movies")
    paths = write_import(rest, tmp_path / "rest" / "movies.yaml")
    assert_same_library(load_spec(paths["spec"]), paths["intents"], "movies")
    with graphql_movies(movies_db) as url:
        gql = import_document(f"{url}/graphql", domain="movies")
    assert gql.protocol == "graphql"
    paths = write_import(gql, tmp_path / "gql" / "movies.yaml")
    assert_same_library(load_spec(paths["spec"]), paths["intents"], "movies")
    query = yaml.safe_load(paths["binding"].read_text())["apis"]["getMovie"]["query"]
    assert "cast { person_id name character }" in query and "$movie_id: ID!" in query


def test_a_third_party_openapi_document_imports_with_its_problems_reported(tmp_path: Path) -> None:
    """prance ships the Swagger petstore as an OpenAPI 3 test document (one operation lacks responses)."""
    document = Path(prance.__file__).resolve().parents[1] / "tests" / "specs" / "issue_20.yaml"
    assert document.is_file()
    result = import_document(document)
    problems = [str(p) for p in result.problems]
    assert any(p.startswith("listPets (GET /pets)") and "no responses" in p for p in problems), problems
    assert any(p.startswith("createPets") and "changes data" in p for p in problems), problems
    # the validator's finding is a warning naming the operation; the reader's own reason drops it
    assert any(str(w).startswith("GET /pets:") and "schema defect" in str(w) for w in result.inferred.warnings)
    assert len(result.library) >= 1 and result.spec.api_names == ("showPetById",)
    # {petId} identifies a pet, whose records carry it as `id`: the spec calls the input `id`
    assert result.spec.api("showPetById").params[0].ref == "pet"
    assert result.inferred.bindings["showPetById"]["names"] == {"id": "petId"}
    paths = write_import(result, tmp_path / "pets.yaml")
    assert "Not imported:" in paths["spec"].read_text()


def test_unsupported_constructs_are_named_and_the_rest_imports(tmp_path: Path) -> None:
    document = {
        "openapi": "3.1.0",
        "info": {"title": "Library", "version": "1"},
        "paths": {
            "/books": {
                "get": {
                    "operationId": "searchBooks",
                    "description": "Search books by title.",
                    "parameters": [{"name": "q", "in": "query", "required": True, "schema": {"type": "string"}},
                                   {"name": "X-Trace", "in": "header", "schema": {"type": "string"}}],
                    "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "array", "items": {"$ref": "#/components/schemas/BookHit"}}}}}},
                },
                "post": {"operationId": "addBook", "responses": {"201": {"description": "created"}}},
            },
            "/books/{book_id}": {
                "get": {
                    "operationId": "getBook",
                    "parameters": [{"name": "book_id", "in": "path", "required": True, "schema": {"type": "string"}}],
                    "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Book"}}}}},
                },
                "delete": {"operationId": "deleteBook", "responses": {"204": {"description": "gone"}}},
            },
            "/odd": {"get": {"operationId": "odd", "parameters": [{"name": "x", "in": "query", "required": True, "schema": {"type": "string"}}],
                             "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"oneOf": [{"type": "string"}, {"type": "object", "properties": {"x": {"type": "string"}}}]}}}}}}},
        },
        "components": {"schemas": {"BookHit": {"type": "object", "properties": {"book_id": {"type": "string"}, "title": {"type": "string"}}}, "Book": {"type": "object", "properties": {
            "book_id": {"type": "string", "description": "identifier of the book"}, "title": {"type": "string"},
            "year": {"type": ["integer", "null"]}, "publisher": {"type": "object", "properties": {"name": {"type": "string"}}}}}}},
    }
    path = tmp_path / "library.json"
    path.write_text(json.dumps(document))
    result = import_document(path)
    problems = {p.operation.split(" ")[0]: p.reason for p in result.problems}
    assert "changes data" in problems["deleteBook"]
    assert "changes data" in problems["addBook"]  # a POST whose name says no read
    assert "oneOf" in problems["odd"]
    assert result.spec.api_names == ("searchBooks", "getBook")
    assert result.spec.api("searchBooks").kind == "fuzzy" and result.spec.api("getBook").kind == "exact"
    assert [str(s) for s in result.library] == ["searchBooks", "searchBooks -> getBook"]
    # left out, and said so
    assert "X-Trace" in " ".join(result.inferred.notes["searchBooks"])
    assert "publisher" in " ".join(result.inferred.notes["getBook"])


BAD_DOCUMENTS = {
    "not-openapi.yaml": ("title: a shopping list\nitems: [milk, eggs]\n", "not an OpenAPI 3 document"),
    "broken-ref.json": (json.dumps({
        "openapi": "3.0.3", "info": {"title": "x", "version": "1"},
        "paths": {"/a": {"get": {"operationId": "a", "parameters": [{"name": "q", "in": "query", "schema": {"type": "string"}}],
                                 "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Missing"}}}}}}}},
    }), "broken $ref '#/components/schemas/Missing'"),
    "no-query.graphql": ("type Movie { id: ID! title: String }\ntype Mutation { addMovie(title: String!): Movie }\n", "no query type"),
    "bad-syntax.graphql": ("type Query { movie(id: ID!: Movie }\n", "not a valid GraphQL schema"),
    "swagger.yaml": ("swagger: '2.0'\ninfo: {title: x, version: '1'}\npaths: {}\n", "Swagger 2.0"),
}


@pytest.mark.parametrize("name", sorted(BAD_DOCUMENTS))
def test_bad_documents_end_with_a_clear_error(name: str, tmp_path: Path) -> None:
    content, fragment = BAD_DOCUMENTS[name]
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(SpecImportError, match=None) as info:
        import_document(path)
    assert fragment in str(info.value)
    done = subprocess.run([*SOAY, "spec", "import", str(path), "--out", str(tmp_path / "out.yaml")], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and fragment in done.stderr
    assert not (tmp_path / "out.yaml").exists()


def test_a_50_mb_document_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    with path.open("wb") as f:
        f.truncate(50 * 1024 * 1024)
    done = subprocess.run([*SOAY, "spec", "import", str(path)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "50.0 MiB" in done.stderr and "Traceback" not in done.stderr
