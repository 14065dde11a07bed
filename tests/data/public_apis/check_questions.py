"""Check the hand-written question sets against the public API documents.

For every ``<name>/questions.yaml`` beside this file it verifies that

* each gold ``call`` names an operation that exists in the document
  (``METHOD /path`` for OpenAPI/Swagger, ``query.<field>`` for GraphQL);
* each argument name is a parameter of that operation (path-level and
  operation-level parameters, ``$ref`` resolved) or an argument of that field;
* the operation's required parameters are all given;
* ids are unique and every question has text, a language and an answer field.

It prints per-set statistics (question count, calls-per-question mix, share of
Chinese questions, distinct operations used) and exits non-zero on any error.

This reads the documents with plain YAML/JSON and graphql-core; it does not use
the project's importers.

    python tests/data/public_apis/check_questions.py
"""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}


def _load(path: Path):
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return json.loads(text)
    return yaml.safe_load(text)


def _resolve(doc, node):
    seen = 0
    while isinstance(node, dict) and "$ref" in node and seen < 20:
        ref = node["$ref"]
        if not ref.startswith("#/"):
            raise ValueError(f"external $ref not supported: {ref}")
        target = doc
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            target = target[part]
        node = target
        seen += 1
    return node


def _credential_names(doc) -> set[str]:
    """Names of apiKey security schemes: credentials, never part of a gold call."""
    schemes = (doc.get("components") or {}).get("securitySchemes") or doc.get("securityDefinitions") or {}
    return {s["name"] for s in schemes.values() if isinstance(s, dict) and s.get("type") == "apiKey"}


def openapi_operations(doc) -> dict[str, dict[str, bool]]:
    """Map 'METHOD /path' -> {parameter name: required}.

    A parameter that carries an apiKey credential (a security scheme's name,
    e.g. OpenFEC's ``api_key`` query parameter) is never counted as required:
    the caller's credentials are not part of a question's gold call.
    """
    credentials = _credential_names(doc)
    ops: dict[str, dict[str, bool]] = {}
    for path, item in (doc.get("paths") or {}).items():
        item = _resolve(doc, item)
        shared = [_resolve(doc, p) for p in item.get("parameters", [])]
        for method, op in item.items():
            if method.lower() not in METHODS:
                continue
            params: dict[tuple[str, str], dict] = {}
            for p in shared + [_resolve(doc, p) for p in op.get("parameters", [])]:
                params[(p.get("in"), p["name"])] = p  # operation level overrides path level
            table: dict[str, bool] = {}
            for (where, name), p in params.items():
                if where == "body":  # Swagger 2.0 body parameter: not a named argument
                    continue
                required = bool(p.get("required")) or where == "path"
                table[name] = required and name not in credentials
            ops[f"{method.upper()} {path}"] = table
    return ops


def graphql_operations(sdl: str) -> dict[str, dict[str, bool]]:
    from graphql import GraphQLNonNull, Undefined, build_schema

    schema = build_schema(sdl)
    ops: dict[str, dict[str, bool]] = {}
    for kind, root in (("query", schema.query_type), ("mutation", schema.mutation_type)):
        if root is None:
            continue
        for fname, field in root.fields.items():
            ops[f"{kind}.{fname}"] = {
                aname: isinstance(arg.type, GraphQLNonNull) and arg.default_value is Undefined
                for aname, arg in field.args.items()
            }
    return ops


def check_set(qpath: Path) -> tuple[list[str], dict]:
    errors: list[str] = []
    qs = _load(qpath)
    docpath = qpath.parent / qs["document"]
    if docpath.suffix in (".graphql", ".graphqls", ".gql"):
        ops = graphql_operations(docpath.read_text(encoding="utf-8"))
    else:
        ops = openapi_operations(_load(docpath))

    seen_ids: set[str] = set()
    steps = collections.Counter()
    langs = collections.Counter()
    used = collections.Counter()
    for q in qs["questions"]:
        qid = q.get("id", "?")
        where = f"{qpath.parent.name}:{qid}"
        if qid in seen_ids:
            errors.append(f"{where}: duplicate id")
        seen_ids.add(qid)
        for key in ("question", "language", "gold", "answer_field"):
            if not q.get(key):
                errors.append(f"{where}: missing {key}")
        if q.get("language") not in ("en", "zh"):
            errors.append(f"{where}: language must be en or zh")
        langs[q.get("language")] += 1
        gold = q.get("gold") or []
        steps[len(gold)] += 1
        for n, step in enumerate(gold, 1):
            call = step.get("call")
            args = step.get("args") or {}
            if call not in ops:
                errors.append(f"{where} step {n}: no operation {call!r} in {docpath.name}")
                continue
            used[call] += 1
            params = ops[call]
            for name in args:
                if name not in params:
                    errors.append(f"{where} step {n}: {call} has no parameter {name!r}")
            for name, required in params.items():
                if required and name not in args:
                    errors.append(f"{where} step {n}: {call} needs required parameter {name!r}")
    total = sum(steps.values())
    stats = {
        "document": docpath.name,
        "operations_in_document": len(ops),
        "questions": total,
        "calls_per_question": {k: f"{v} ({100 * v / total:.0f}%)" for k, v in sorted(steps.items())},
        "zh_share": f"{100 * langs['zh'] / total:.0f}%",
        "distinct_operations_used": len(used),
    }
    if total < 30:
        errors.append(f"{qpath.parent.name}: only {total} questions (need 30)")
    return errors, stats


def main() -> int:
    sets = sorted(HERE.glob("*/questions.yaml"))
    if not sets:
        print("no questions.yaml found", file=sys.stderr)
        return 1
    all_errors: list[str] = []
    for qpath in sets:
        errors, stats = check_set(qpath)
        print(f"{qpath.parent.name}: {json.dumps(stats, ensure_ascii=False)}")
        all_errors += errors
    for e in all_errors:
        print("ERROR", e)
    print(f"{len(sets)} sets checked, {len(all_errors)} errors")
    return 1 if all_errors else 0


if __name__ == "__main__":
    sys.exit(main())
