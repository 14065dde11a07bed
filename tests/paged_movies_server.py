"""A small TMDB-like REST service for the importer tests: paged envelopes, an API key in the query.

    python tests/paged_movies_server.py --port 8312 --key secret

Answers what tests/test_importer_inference.py's document declares: `/search/movie?query=` and
`/movie/popular` as pages (`{"page", "results", "total_pages", "total_results"}`),
`/movie/{movie_id}` (with a single nested `belongs_to_collection` object), its credits, and
`/person/{person_id}`. Every call but /healthz needs `api_key=<key>` in the query (401 without),
the way TMDB v3 and openFEC take theirs; the last key seen is at /last-key for the test to read.
"""

from __future__ import annotations

import argparse

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

MOVIES = {
    949: {"id": 949, "imdb_id": "tt0113277", "title": "Heat", "release_date": "1995-12-15", "runtime": 170, "popularity": 40.5,
          "belongs_to_collection": None, "genres": [{"id": 80, "name": "Crime"}]},
    155: {"id": 155, "imdb_id": "tt0468569", "title": "The Dark Knight", "release_date": "2008-07-16", "runtime": 152, "popularity": 90.1,
          "belongs_to_collection": {"id": 263, "name": "The Dark Knight Collection"}, "genres": [{"id": 28, "name": "Action"}]},
}
CAST = {949: [{"id": 1158, "name": "Al Pacino", "character": "Vincent Hanna", "credit_id": "c1"},
              {"id": 380, "name": "Robert De Niro", "character": "Neil McCauley", "credit_id": "c2"}],
        155: [{"id": 3894, "name": "Christian Bale", "character": "Bruce Wayne", "credit_id": "c3"}]}
PEOPLE = {1158: {"id": 1158, "name": "Al Pacino", "birthday": "1940-04-25", "imdb_id": "nm0000199"},
          380: {"id": 380, "name": "Robert De Niro", "birthday": "1943-08-17", "imdb_id": "nm0000134"},
          3894: {"id": 3894, "name": "Christian Bale", "birthday": "1974-01-30", "imdb_id": "nm0000288"}}


def _summary(movie: dict) -> dict:
    return {k: movie[k] for k in ("id", "title", "release_date", "popularity")}


def _page(results: list[dict]) -> dict:
    return {"page": 1, "results": results, "total_pages": 1, "total_results": len(results)}


def build(key: str) -> Starlette:
    seen: dict[str, str | None] = {"key": None}

    def guarded(handler):
        async def endpoint(request: Request) -> JSONResponse:
            seen["key"] = request.query_params.get("api_key")
            if seen["key"] != key:
                return JSONResponse({"status_message": "Invalid API key"}, status_code=401)
            return handler(request)

        return endpoint

    def search_movie(request: Request) -> JSONResponse:
        words = request.query_params.get("query", "").lower()
        return JSONResponse(_page([_summary(m) for m in MOVIES.values() if words and words in m["title"].lower()]))

    def popular(_request: Request) -> JSONResponse:
        return JSONResponse(_page([_summary(m) for m in sorted(MOVIES.values(), key=lambda m: -m["popularity"])]))

    def movie(request: Request) -> JSONResponse:
        found = MOVIES.get(int(request.path_params["movie_id"]))
        return JSONResponse(found) if found else JSONResponse({"status_message": "not found"}, status_code=404)

    def credits(request: Request) -> JSONResponse:
        movie_id = int(request.path_params["movie_id"])
        return JSONResponse({"id": movie_id, "cast": CAST.get(movie_id, []), "crew": []})

    def person(request: Request) -> JSONResponse:
        found = PEOPLE.get(int(request.path_params["person_id"]))
        return JSONResponse(found) if found else JSONResponse({"status_message": "not found"}, status_code=404)

    async def healthz(_request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def last_key(_request: Request) -> JSONResponse:
        return JSONResponse({"key": seen["key"]})

    return Starlette(routes=[
        Route("/healthz", healthz),
        Route("/last-key", last_key),
        Route("/search/movie", guarded(search_movie)),
        Route("/movie/popular", guarded(popular)),
        Route("/movie/{movie_id:int}", guarded(movie)),
        Route("/movie/{movie_id:int}/credits", guarded(credits)),
        Route("/person/{person_id:int}", guarded(person)),
    ])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--key", required=True)
    args = parser.parse_args()
    uvicorn.run(build(args.key), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
