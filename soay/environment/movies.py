"""The movie API environment: the five APIs of `soay/specs/movies.yaml` over the SQLite corpus.

Method names and parameters are the spec's, and every result carries exactly the spec's
attribute names, so the code builder, the ground-truth oracle, the sandbox and the HTTP clone
work on it unchanged. The database is opened read-only: an environment answers questions, it
never changes the corpus it is verified against.
"""

from __future__ import annotations

import random
import re
import sqlite3
from pathlib import Path
from typing import Any

from soay.environment.base import ApiCallError, SpecDispatch
from soay.environment.text import normalize
from soay.spec import ApiSpec, load_spec

SEARCH_LIMIT = 10
_PUBLIC_ID = re.compile(r"^[0-9a-f]{24}$")
_TABLES = {"movie": ("movie", "movie_id"), "person": ("person", "person_id")}


class MovieEnvironment(SpecDispatch):
    """searchMovie, searchPeople, getMovie, getPersonProfile and getFilmography over one corpus."""

    def __init__(self, db_path: str | Path) -> None:
        path = Path(db_path)
        if not path.is_file():
            raise FileNotFoundError(f"no movie corpus at {path} (build it with build_movie_corpus)")
        self.spec: ApiSpec = load_spec("movies")
        self._counts: dict[str, int] = {}
        self.conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
        try:
            domain = self._one("SELECT value FROM meta WHERE key = 'domain'")
        except sqlite3.DatabaseError:  # not SQLite at all, or SQLite without our meta table
            domain = None
        if domain is None or domain[0] != "movies":
            self.conn.close()
            raise ValueError(f"{path} is not a movie corpus (domain {domain[0] if domain else None!r})")

    # ------------------------------------------------------------------ the APIs

    def searchMovie(self, title: str, year: str | int | None = None) -> list[dict[str, Any]]:
        """Movies whose title has every word of `title`: exact title first, then `year`, then popularity."""
        query = _fts_query("searchMovie", "title", title)
        wanted_year = _year("searchMovie", year)
        rows = self.conn.execute(
            """
            SELECT m.movie_id, m.title, m.year FROM movie_fts JOIN movie m ON m.id = movie_fts.rowid
            WHERE movie_fts MATCH ?
            ORDER BY m.norm_title = ? DESC, m.year IS ? DESC, m.votes DESC, m.id
            LIMIT ?
            """,
            (query, normalize(title, cjk_words=False), wanted_year, SEARCH_LIMIT),
        ).fetchall()
        return [{"movie_id": r[0], "title": r[1], "year": r[2]} for r in rows]

    def searchPeople(self, name: str) -> list[dict[str, Any]]:
        """People whose name has every word of `name`: exact name first, then the best known."""
        query = _fts_query("searchPeople", "name", name)
        rows = self.conn.execute(
            """
            SELECT p.person_id, p.name, p.birth_year FROM person_fts JOIN person p ON p.id = person_fts.rowid
            WHERE person_fts MATCH ?
            ORDER BY p.norm_name = ? DESC, p.popularity DESC, p.id
            LIMIT ?
            """,
            (query, normalize(name, cjk_words=False), SEARCH_LIMIT),
        ).fetchall()
        return [{"person_id": r[0], "name": r[1], "birth_year": r[2]} for r in rows]

    def getMovie(self, movie_id: str) -> dict[str, Any]:
        """A movie with its director's name and its cast in billing order."""
        row_id = self._row_id("getMovie", "movie", movie_id)
        m = self._one("SELECT movie_id, title, year, genre, rating, runtime_min FROM movie WHERE id = ?", (row_id,))
        director = self._one(
            "SELECT p.name FROM credit c JOIN person p ON p.id = c.person WHERE c.movie = ? AND c.role = 'director'",
            (row_id,),
        )
        cast = self.conn.execute(
            """
            SELECT p.person_id, p.name, c.character FROM credit c JOIN person p ON p.id = c.person
            WHERE c.movie = ? AND c.role = 'actor' ORDER BY c.billing
            """,
            (row_id,),
        ).fetchall()
        return {
            "movie_id": m[0],
            "title": m[1],
            "year": m[2],
            "genre": m[3],
            "rating": m[4],
            "runtime_min": m[5],
            "director": director[0] if director else None,
            "cast": [{"person_id": c[0], "name": c[1], "character": c[2]} for c in cast],
        }

    def getPersonProfile(self, person_id: str) -> dict[str, Any]:
        """Who a person is: birth year, country and what they are known for."""
        row_id = self._row_id("getPersonProfile", "person", person_id)
        p = self._one("SELECT person_id, name, birth_year, country, known_for FROM person WHERE id = ?", (row_id,))
        return {"person_id": p[0], "name": p[1], "birth_year": p[2], "country": p[3], "known_for": p[4]}

    def getFilmography(self, person_id: str) -> list[dict[str, Any]]:
        """Every credit of a person, the best rated movie first (ties: newer first)."""
        row_id = self._row_id("getFilmography", "person", person_id)
        rows = self.conn.execute(
            """
            SELECT m.movie_id, m.title, m.year, m.genre, m.rating, c.role FROM credit c JOIN movie m ON m.id = c.movie
            WHERE c.person = ? ORDER BY m.rating DESC, m.year DESC, m.id, c.role
            """,
            (row_id,),
        ).fetchall()
        return [
            {"movie_id": r[0], "title": r[1], "year": r[2], "genre": r[3], "rating": r[4], "role": r[5]} for r in rows
        ]

    # ------------------------------------------------------- the Environment protocol

    def sample_entity(self, entity: str, rng: random.Random) -> str:
        """Uniform over the table: internal ids are dense (1..n), so one random row is one lookup."""
        table, key = _table(entity)
        count = self._count(table)
        return self._one(f"SELECT {key} FROM {table} WHERE id = ?", (rng.randrange(count) + 1,))[0]

    def head_inputs(self, api: str, entity_id: str) -> dict[str, str]:
        """searchMovie: the title and the year (as typed, a string); searchPeople: the name."""
        record = self.head_record(api, entity_id)
        if api == "searchMovie":
            return {"title": record["title"], "year": str(record["year"])}
        return {"name": record["name"]}

    def head_record(self, api: str, entity_id: str) -> dict[str, Any]:
        """What the head search returns for this entity, read directly so the oracle skips the search."""
        if api == "searchMovie":
            row = self._one("SELECT movie_id, title, year FROM movie WHERE movie_id = ?", (entity_id,))
            keys = ("movie_id", "title", "year")
        elif api == "searchPeople":
            row = self._one("SELECT person_id, name, birth_year FROM person WHERE person_id = ?", (entity_id,))
            keys = ("person_id", "name", "birth_year")
        else:
            raise ValueError(f"{api!r} is not a head API of the movie spec (searchMovie, searchPeople)")
        if row is None:
            raise KeyError(f"no entity {entity_id!r} for {api}")
        return dict(zip(keys, row))

    def close(self) -> None:
        self.conn.close()

    # ------------------------------------------------------------------- helpers

    def _one(self, sql: str, args: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
        return self.conn.execute(sql, args).fetchone()

    def _count(self, table: str) -> int:
        if table not in self._counts:
            self._counts[table] = self._one(f"SELECT count(*) FROM {table}")[0]
        return self._counts[table]

    def _row_id(self, api: str, entity: str, public_id: Any) -> int:
        """The internal row of a public id, or a clear error for a malformed or unknown one."""
        table, key = _table(entity)
        if not isinstance(public_id, str) or not _PUBLIC_ID.match(public_id):
            raise ApiCallError(f"{api}: {key} must be a 24-character hex id as returned by a search, got {public_id!r}")
        row = self._one(f"SELECT id FROM {table} WHERE {key} = ?", (public_id,))
        if row is None:
            raise ApiCallError(f"{api}: no {entity} with {key} {public_id!r}")
        return row[0]


def _table(entity: str) -> tuple[str, str]:
    try:
        return _TABLES[entity]
    except KeyError:
        raise ValueError(f"unknown entity {entity!r} (the movie spec has {', '.join(_TABLES)})") from None


def _fts_query(api: str, param: str, text: Any) -> str:
    """An FTS5 query matching every word typed, the last one also as a prefix (typing in progress)."""
    if not isinstance(text, str):
        raise ApiCallError(f"{api}: {param} must be a string, got {type(text).__name__}")
    words = normalize(text, cjk_words=False).split()
    if not words:
        raise ApiCallError(f"{api}: {param} must contain letters or digits, got {text!r}")
    return " ".join(f'"{w}"' for w in words[:-1]) + f' "{words[-1]}"*'


def _year(api: str, year: Any) -> int | None:
    """A year typed as "1999" or given as 1999; empty means no year."""
    if year is None or (isinstance(year, str) and not year.strip()):
        return None
    if isinstance(year, bool) or not isinstance(year, (str, int)):
        raise ApiCallError(f"{api}: year must be a year such as 1999, got {year!r}")
    try:
        return int(str(year).strip())
    except ValueError:
        raise ApiCallError(f"{api}: year must be a year such as 1999, got {year!r}") from None


def open_environment(db_path: str) -> MovieEnvironment:
    """The factory `soay.domains` names for the movie domain."""
    return MovieEnvironment(db_path)
