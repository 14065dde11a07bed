"""Writing an import for review: the spec with its inferences as comments, the binding, the intents.

The spec file is exactly the format soay/spec.py loads, so it can be committed as is; every
line the importer guessed carries an `# inferred:` comment above it, and what it could not
import is listed at the top. The binding (how each API is called over HTTP) and the generated
intents are written beside it (`<name>.binding.yaml`, `<name>.intents.yaml`).
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import yaml

from soay.importers.errors import Problem
from soay.importers.infer import Inferred


def _dump(value: Any) -> str:
    return yaml.safe_dump(value, sort_keys=False, allow_unicode=True, width=110, default_flow_style=False)


def _comment(lines: list[str], indent: str = "") -> str:
    out = []
    for line in lines:
        for piece in textwrap.wrap(line, 100, subsequent_indent="    ") or [""]:
            out.append(f"{indent}# {piece}".rstrip())
    return "\n".join(out) + ("\n" if out else "")


def render_spec(inferred: Inferred, origin: str, protocol: str, transport: dict[str, Any] | None = None) -> str:
    header = [
        f"API library spec imported by `soay spec import` from {origin} ({protocol}).",
        "Review it before committing: `# inferred:` comments say what the importer guessed (entities,",
        "kinds, relations, references); the binding beside it says how each API is called.",
    ]
    header.append(f"{len(inferred.apis)} of {inferred.operation_count} operations imported.")
    auth = (transport or {}).get("auth")
    if auth:
        scheme = auth["schemes"][0]
        where = f"{scheme['in']} {scheme['name']!r}" if scheme["type"] == "apiKey" else scheme["type"]
        header.append(f"inferred: the API wants a key ({scheme['scheme']}: {where}); it is sent from the "
                      f"live_api.api_key setting or ${auth['env']} at call time, never written here.")
    if inferred.problems:
        header.append("Not imported:")
        header.extend(f"  - {p}" for p in inferred.problems)
    if inferred.warnings:
        header.append("Read despite defects (warnings):")
        header.extend(f"  - {p}" for p in inferred.warnings)
    text = _comment(header)
    text += _dump({"domain": inferred.domain, "description": inferred.description})
    text += "entities:\n"
    text += _comment([f"inferred: {n}" for n in inferred.notes.get("entities", [])], "  ")
    for name, entity in inferred.entities.items():
        flow = yaml.safe_dump({name: entity}, default_flow_style=None, allow_unicode=True, width=200)
        text += textwrap.indent(flow, "  ")
    text += "apis:\n"
    for api in inferred.apis:
        text += "\n" + _comment([f"inferred: {n}" for n in inferred.notes.get(api["name"], [])], "  ")
        block = _dump([api])
        text += textwrap.indent(block, "  ")
    return text


def render_binding(inferred: Inferred, spec_name: str, protocol: str, transport: dict[str, Any]) -> str:
    body = {
        "spec": spec_name,
        "protocol": protocol,
        **transport,
        "apis": inferred.bindings,
        "listers": inferred.listers,
        "inferred": {k: v for k, v in inferred.notes.items()},
        "not_imported": [str(p) for p in inferred.problems],
        "warnings": [str(p) for p in inferred.warnings],
    }
    header = _comment(
        [
            f"How the APIs of {spec_name} are reached over {protocol} (written by `soay spec import`).",
            "openapi: method, path and where each parameter goes (path, query, body); `names` maps a",
            "parameter the spec renamed back to the document's name; `unwrap` names the property of a",
            "paged answer that holds the records; `auth` the security scheme and the environment",
            "variable the key is read from (the live_api.api_key setting takes precedence).",
            "graphql: the query document of each API. `listers` list records without required input",
            "and can sample head entities from a live service.",
        ]
    )
    return header + _dump(body)


def render_intents(domain: str, combinations: list[dict[str, Any]], notes: list[str]) -> str:
    header = _comment(
        [
            f"Combinations of the imported {domain} spec, generated from its solution library with the",
            "templates in soay/importers/phrasings.yaml. Review the phrasings (the Chinese ones embed",
            "the spec's English descriptions); the last English and the last Chinese phrasing are",
            "held out of training.",
        ]
        + [f"note: {n}" for n in notes]
    )
    return header + _dump({"domain": domain, "combinations": combinations})


def sidecar(spec_path: Path, kind: str) -> Path:
    """`movies.yaml` -> `movies.binding.yaml` / `movies.intents.yaml`."""
    return spec_path.with_name(f"{spec_path.stem}.{kind}.yaml")


def problems_text(problems: list[Problem]) -> list[str]:
    return [str(p) for p in problems]
