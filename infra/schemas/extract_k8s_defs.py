"""Vendor the Kubernetes core types that KubeRay's CRDs embed (pod templates, services, resource
requirements) as JSON schema, from a `_definitions.json` of kubernetes-json-schema ("strict":
unknown fields are errors, as kubectl's default `--validate=strict` makes them).

    python infra/schemas/extract_k8s_defs.py .../v1.28.0-local-strict/_definitions.json infra/schemas/k8s-v1.28-core.json

The source ships in the `kubernetes-validate` wheel (kubernetes_validate/kubernetes-json-schema/);
only the closure of the roots below is kept, without descriptions, so the file stays small.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOTS = (
    "io.k8s.api.core.v1.PodSpec",
    "io.k8s.api.core.v1.ServiceSpec",
    "io.k8s.api.core.v1.ResourceRequirements",
    "io.k8s.api.core.v1.EnvVar",
    "io.k8s.api.core.v1.EnvFromSource",
    "io.k8s.api.core.v1.VolumeMount",
    "io.k8s.api.core.v1.SecurityContext",
)
PREFIX = "#/$defs/"


def strip(node: Any) -> Any:
    """The schema without prose: descriptions validate nothing."""
    if isinstance(node, dict):
        return {k: strip(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [strip(v) for v in node]
    return node


def refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {node["$ref"].removeprefix(PREFIX)} if isinstance(node.get("$ref"), str) else set()
        return found.union(*(refs(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(refs(v) for v in node))
    return set()


def closure(defs: dict[str, Any], roots: tuple[str, ...]) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name not in kept:
            kept[name] = strip(defs[name])
            todo.extend(refs(kept[name]))
    return dict(sorted(kept.items()))


def main(source: str, out: str) -> None:
    document = json.loads(Path(source).read_text())
    origin = f"kubernetes-json-schema {Path(source).parent.name}/{Path(source).name}"
    vendored = {"$schema": document["$schema"], "$comment": f"closure of {', '.join(ROOTS)} from {origin}", "$defs": closure(document["$defs"], ROOTS)}
    Path(out).write_text(json.dumps(vendored, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:3])
