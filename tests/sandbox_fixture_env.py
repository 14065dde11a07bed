"""A tiny in-memory API environment for the sandbox tests (the real ones live in soay/environment).

It is only ever imported inside the sandbox server process, via
``Sandbox("sandbox_fixture_env:make_env", ...)``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from soay.environment.base import ApiCallError

PEOPLE: dict[str, dict[str, Any]] = {
    "p1": {"id": "p1", "name": "Ada Lovelace", "organization": "Analytical Engines Ltd"},
    "p2": {"id": "p2", "name": "Alan Turing", "organization": "University of Manchester"},
    "p3": {"id": "p3", "name": "Alan Kay", "organization": "Xerox PARC"},
}
PUBS: dict[str, list[dict[str, Any]]] = {
    "p1": [{"title": "Notes on the Analytical Engine", "year": 1843}],
    "p2": [
        {"title": "On Computable Numbers", "year": 1936},
        {"title": "Computing Machinery and Intelligence", "year": 1950},
    ],
    "p3": [{"title": "A Personal Computer for Children of All Ages", "year": 1972}],
}


class FixtureEnv:
    """searchPerson / getPersonPubs over PEOPLE and PUBS; `delay_s` makes every call slow."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s

    def _pause(self) -> None:
        if self.delay_s:
            time.sleep(self.delay_s)

    def searchPerson(self, name: str) -> list[dict[str, Any]]:
        self._pause()
        if not isinstance(name, str) or not name:
            raise ApiCallError("searchPerson: name must be a non-empty string")
        return [
            {"id": p["id"], "name": p["name"], "organization": p["organization"]}
            for p in PEOPLE.values()
            if name.lower() in p["name"].lower()
        ]

    def getPersonPubs(self, person_id: str) -> list[dict[str, Any]]:
        self._pause()
        if person_id not in PEOPLE:
            raise ApiCallError(f"getPersonPubs: unknown person_id {person_id!r}")
        return [dict(pub) for pub in PUBS[person_id]]

    def api_functions(self) -> dict[str, Callable[..., Any]]:
        return {"searchPerson": self.searchPerson, "getPersonPubs": self.getPersonPubs}


def make_env(**kwargs: Any) -> FixtureEnv:
    return FixtureEnv(**kwargs)
