"""One import from end to end: read, parse, infer, generate intents, check, write."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from soay.combinations import load_combinations
from soay.importers.errors import Problem, SpecImportError
from soay.importers.graphql import read_graphql
from soay.importers.infer import Inferred, infer, snake
from soay.importers.intents import generate_intents
from soay.importers.openapi import read_openapi
from soay.importers.security import env_name
from soay.importers.source import read_document
from soay.importers.writer import render_binding, render_intents, render_spec, sidecar
from soay.solutions import SolutionLibrary
from soay.spec import ApiSpec, load_spec


@dataclass
class ImportResult:
    origin: str
    protocol: str
    inferred: Inferred
    spec: ApiSpec
    library: SolutionLibrary
    combinations: list[dict[str, Any]]
    intent_notes: list[str]
    transport: dict[str, Any] = field(default_factory=dict)

    @property
    def problems(self) -> list[Problem]:
        return self.inferred.problems

    def summary(self) -> dict[str, Any]:
        return {
            "domain": self.spec.domain,
            "protocol": self.protocol,
            "apis": len(self.spec.apis),
            "entities": sorted(self.spec.entities),
            "heads": self.library.graph.heads,
            "solutions": len(self.library),
            "combinations": len(self.combinations),
            "operations": self.inferred.operation_count,
            "imported": len(self.spec.apis),
            "not_imported": [str(p) for p in self.problems],
            "warnings": [str(p) for p in self.inferred.warnings],
        }


def import_document(location: str | Path, domain: str | None = None, max_hops: int = 3) -> ImportResult:
    """Import an OpenAPI 3.x or Swagger 2.0 document or a GraphQL schema (file or URL) into a checked spec."""
    doc = read_document(location)
    draft = read_openapi(doc) if doc.kind == "openapi" else read_graphql(doc)
    name = domain or _domain_name(draft.title, str(location))
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise SpecImportError(f"domain name {name!r} must be lower-case letters, digits and underscores")
    inferred = infer(draft, name)
    try:
        spec = inferred.spec()
    except ValueError as e:
        raise SpecImportError(f"the imported spec does not hold together: {e}") from None
    library = SolutionLibrary(spec, max_hops)
    combinations, notes = generate_intents(spec, library)
    return ImportResult(str(location), draft.protocol, inferred, spec, library, combinations, notes, _transport(draft.transport, name))


def _transport(transport: dict[str, Any], domain: str) -> dict[str, Any]:
    """The document's servers and security, with the environment variable its key is read from."""
    out = {k: v for k, v in transport.items() if k != "auth"}
    schemes = transport.get("auth") or []
    if schemes:
        out["auth"] = {"env": env_name(domain), "schemes": schemes}
    return out


def write_import(result: ImportResult, out: Path) -> dict[str, Path]:
    """Write spec, binding and intents, then load them back the way the stack will."""
    out = Path(out)
    if out.suffix not in (".yaml", ".yml"):
        raise SpecImportError(f"--out must be a .yaml file, got {out}")
    out.parent.mkdir(parents=True, exist_ok=True)
    paths = {"spec": out, "binding": sidecar(out, "binding"), "intents": sidecar(out, "intents")}
    paths["spec"].write_text(render_spec(result.inferred, result.origin, result.protocol, result.transport), encoding="utf-8")
    paths["binding"].write_text(
        render_binding(result.inferred, out.name, result.protocol, result.transport), encoding="utf-8"
    )
    paths["intents"].write_text(render_intents(result.spec.domain, result.combinations, result.intent_notes), encoding="utf-8")
    spec = load_spec(paths["spec"])
    if spec != result.spec:
        raise SpecImportError(f"{out} does not load back as the imported spec (a writer bug)")
    if result.combinations:
        load_combinations(spec, SolutionLibrary(spec, result.library.max_hops), paths["intents"])
    yaml.safe_load(paths["binding"].read_text(encoding="utf-8"))
    return paths


def _domain_name(title: str, location: str) -> str:
    base = snake(title) or snake(Path(location.split("?")[0]).stem) or "imported"
    base = re.sub(r"_+", "_", base)[:40].strip("_")
    return base if base and base[0].isalpha() else f"api_{base}"
