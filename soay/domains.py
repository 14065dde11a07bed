"""The domains the stack knows: which spec, which environment, which corpus builder.

Two kinds: the packaged ones (aminer, movies), whose APIs answer from a generated SQLite corpus,
and an imported one (`soay spec import`, then `live_api.spec` in the settings), whose APIs are
HTTP calls to the live service the spec describes. Components are named by import path and
options by JSON-compatible values, so that a sandbox or a Ray worker can build the environment
inside its own process from plain data.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from soay.combinations import CombinationSet, load_combinations
from soay.environment.base import Environment
from soay.settings import Settings
from soay.solutions import SolutionLibrary
from soay.spec import ApiSpec, load_spec

LIVE_ENV_FACTORY = "soay.environment.live_api:open_live_environment"


@dataclass(frozen=True, eq=False)
class Domain:
    name: str
    env_factory: str
    corpus_builder: str | None = None
    """None for a live API: there is no corpus to build, the service is the data."""
    spec_path: Path | None = None
    """An imported spec's file; None: the packaged soay/specs/<name>.yaml."""
    intents_path: Path | None = None
    """The imported spec's generated intents; None: the packaged soay/intents/<name>.yaml."""
    live_options: Mapping[str, Any] | None = field(default=None, repr=False)
    """The live environment's options (LiveApiOptions as JSON); None for a corpus domain."""
    max_hops: int = 3

    @property
    def is_live(self) -> bool:
        return self.live_options is not None

    @cached_property
    def spec(self) -> ApiSpec:
        return load_spec(self.spec_path or self.name)

    @cached_property
    def library(self) -> SolutionLibrary:
        return SolutionLibrary(self.spec, self.max_hops)

    @cached_property
    def combinations(self) -> CombinationSet:
        return load_combinations(self.spec, self.library, self.intents_path)

    def environment_options(self, db_path: str | Path) -> dict[str, Any]:
        """What the environment factory is called with: the live options, or the corpus file."""
        return dict(self.live_options) if self.live_options is not None else {"db_path": str(db_path)}

    def open_environment(self, db_path: str | Path) -> Environment:
        return resolve(self.env_factory)(**self.environment_options(db_path))

    def build_corpus(self, db_path: str | Path, size: int, seed: int, progress: Callable[..., None] | None = None) -> dict[str, Any]:
        if self.corpus_builder is None:
            raise ValueError(f"{self.name} is a live API: it has no corpus to build")
        return resolve(self.corpus_builder)(Path(db_path), size, seed, progress=progress)

    def corpus_schema_version(self) -> str:
        """The builder module's SCHEMA_VERSION: a corpus written in an older layout is rebuilt."""
        if self.corpus_builder is None:
            raise ValueError(f"{self.name} is a live API: it has no corpus")
        return str(resolve(f"{self.corpus_builder.partition(':')[0]}:SCHEMA_VERSION"))


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
    """A packaged domain by name."""
    try:
        return DOMAINS[name]
    except KeyError:
        raise KeyError(
            f"unknown domain {name!r} (packaged: {', '.join(sorted(DOMAINS))}; an imported API is chosen with live_api.spec)"
        ) from None


def imported_domain(spec_path: Path, live_options: Mapping[str, Any]) -> Domain:
    """The domain of a spec written by `soay spec import`, answered by the live API it describes."""
    from soay.importers.writer import sidecar

    spec_path = Path(spec_path).resolve()
    return Domain(
        name=load_spec(spec_path).domain,
        env_factory=LIVE_ENV_FACTORY,
        spec_path=spec_path,
        intents_path=sidecar(spec_path, "intents"),
        live_options=dict(live_options),
    )


def domain_for(settings: Settings) -> Domain:
    """The domain the settings name: the imported spec of `live_api.spec` when one is set,
    otherwise the packaged `data.domain`."""
    spec = settings.live_api.spec
    if spec is None:
        return get_domain(settings.data.domain)
    from soay.environment.live_api import LiveApiOptions

    options = LiveApiOptions.from_settings(settings.live_api, spec, settings.data.api_cache_path())
    return imported_domain(spec, options.model_dump(mode="json"))
