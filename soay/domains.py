"""The domains the stack knows: which spec, which environment, which corpus builder.

Components are named by import path so that a sandbox or a Ray worker can build the environment
inside its own process from plain strings.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from soay.combinations import CombinationSet, load_combinations
from soay.environment.base import Environment
from soay.solutions import SolutionLibrary
from soay.spec import ApiSpec, load_spec


@dataclass(frozen=True)
class Domain:
    name: str
    env_factory: str
    corpus_builder: str
    max_hops: int = 3

    @cached_property
    def spec(self) -> ApiSpec:
        return load_spec(self.name)

    @cached_property
    def library(self) -> SolutionLibrary:
        return SolutionLibrary(self.spec, self.max_hops)

    @cached_property
    def combinations(self) -> CombinationSet:
        return load_combinations(self.spec, self.library)

    def open_environment(self, db_path: str | Path) -> Environment:
        return resolve(self.env_factory)(str(db_path))

    def build_corpus(self, db_path: str | Path, size: int, seed: int, progress: Callable[..., None] | None = None) -> dict[str, Any]:
        return resolve(self.corpus_builder)(Path(db_path), size, seed, progress=progress)


def resolve(path: str) -> Any:
    """Import `package.module:attribute`."""
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


DOMAINS: dict[str, Domain] = {
    "aminer": Domain(
        name="aminer",
        env_factory="soay.environment.academic:open_environment",
        corpus_builder="soay.environment.academic_corpus:build_academic_corpus",
    ),
    "movies": Domain(
        name="movies",
        env_factory="soay.environment.movies:open_environment",
        corpus_builder="soay.environment.movies_corpus:build_movie_corpus",
    ),
}


def get_domain(name: str) -> Domain:
    try:
        return DOMAINS[name]
    except KeyError:
        raise KeyError(f"unknown domain {name!r} (known: {', '.join(sorted(DOMAINS))})") from None
