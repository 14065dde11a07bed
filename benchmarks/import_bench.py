"""How well `soay spec import` covers four public API documents and their blind question sets.

    .venv/bin/python benchmarks/import_bench.py [--out benchmarks/results/import.json]

For each document under tests/data/public_apis/ (OpenFEC, D&D 5e, GeoDB, SWAPI GraphQL) it runs
the import exactly as `soay spec import` does (`import_document`, then `write_import` into a
temporary directory, which writes spec, binding and intents and loads them back), and measures:

- operations: read operations the document declares, counted here with plain JSON/YAML loading
  (GET method+path pairs; GraphQL: fields of the query root type), independently of the
  importer (whose own count is reported beside it as `operations_importer`);
- imported: APIs in the imported spec; solutions and combinations as the CLI summary counts
  them (`len(library)`, `len(combinations)`);
- gold_in_library: share of the questions whose gold call sequence, mapped to API names through
  the written binding (`METHOD /path` -> the API whose binding has that method and path;
  `query.<field>` -> the API whose binding has that field), is exactly a solution of the
  library; gold_calls_imported: share whose every gold call maps to an imported API. Each
  question that misses is listed with its mapped sequence and why (a call not imported / the
  mapping failed / the sequence is not a solution, with the graph's reason: not a head, no
  coupling between two steps, dropped as redundant, too long).

answered_right (a question answered correctly end to end through a live server of the
document) is not measured: there is no live server for these documents yet.

Nothing under soay/ is changed; the importer runs as committed.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from soay.importers import import_document, write_import  # noqa: E402
from soay.solutions import SEPARATOR  # noqa: E402

DATA = ROOT / "tests" / "data" / "public_apis"
DOCUMENTS = [
    ("openfec", "openapi.json"),
    ("dnd5e", "openapi.json"),
    ("geodb", "swagger.yaml"),
    ("swapi_graphql", "schema.graphql"),
]
READ_METHODS = {"get"}
ALL_METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}
NOT_MEASURED = "end-to-end through a live server of the document: not measured yet"


def _load(path: Path):
    text = path.read_text(encoding="utf-8")
    return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)


def document_operations(path: Path) -> tuple[str, set[str], int]:
    """(kind, the read operations as gold-call strings, all operations) with plain loading."""
    if path.suffix == ".graphql":
        from graphql import build_schema

        schema = build_schema(path.read_text(encoding="utf-8"))
        fields = {f"query.{name}" for name in schema.query_type.fields}
        return "GraphQL SDL", fields, len(fields)
    doc = _load(path)
    if "openapi" in doc:
        kind = f"OpenAPI {doc['openapi']} ({'JSON' if path.suffix == '.json' else 'YAML'})"
    else:
        kind = f"Swagger {doc.get('swagger')} ({'JSON' if path.suffix == '.json' else 'YAML'})"
    reads: set[str] = set()
    total = 0
    for p, item in (doc.get("paths") or {}).items():
        for method in item or {}:
            if method.lower() in ALL_METHODS:
                total += 1
                if method.lower() in READ_METHODS:
                    reads.add(f"{method.upper()} {p}")
    return kind, reads, total


def binding_index(binding: dict) -> dict[str, list[str]]:
    """Gold-call string -> the API names the written binding routes to it."""
    index: dict[str, list[str]] = collections.defaultdict(list)
    for name, b in (binding.get("apis") or {}).items():
        if "field" in b:
            index[f"query.{b['field']}"].append(name)
        elif "method" in b and "path" in b:
            index[f"{str(b['method']).upper()} {b['path']}"].append(name)
    return index


def steps_used(args) -> set[int]:
    """The earlier steps a gold call's arguments take values from (`<... from step N: ...>`)."""
    text = json.dumps(args, ensure_ascii=False)
    return {int(n) for n in re.findall(r"from step (\d+)", text)}


def why_not_solution(result, apis: tuple[str, ...], gold: list[dict]) -> str:
    """Why a sequence of imported APIs is not in the solution library, in the graph's terms."""
    library, graph, spec = result.library, result.library.graph, result.spec
    if len(apis) > library.max_hops:
        return f"longer than the library's max_hops ({library.max_hops})"
    reasons = []
    if apis[0] not in graph.heads:
        api = spec.api(apis[0])
        feeders = sorted({c.src for cs in graph.edges.values() for c in cs if c.dst == apis[0] and c.src != apis[0]})
        required = [f"{p.name}:{p.type}" for p in api.params if p.required]
        reasons.append(
            f"not a head: {apis[0]} (kind {api.kind}, requires {', '.join(required) or 'nothing'}) "
            f"has in-degree {graph.in_degree[apis[0]]} (fed by {', '.join(feeders[:4])}{', ...' if len(feeders) > 4 else ''})"
        )
    for step, (src, dst) in enumerate(zip(apis, apis[1:]), start=2):
        if not any(c.dst == dst for c in graph.successors(src)):
            used = steps_used(gold[step - 1].get("args") or {})
            if step - 1 not in used:
                reasons.append(
                    f"not a chain: gold step {step} ({dst}) takes nothing from step {step - 1}"
                    + (f" (it uses step {', '.join(map(str, sorted(used)))})" if used else " (its inputs come from the question)")
                )
                continue
            d = spec.api(dst)
            wanted = [f"{p.name}:{p.type}" for p in d.params if p.required] or [f"{p.name}:{p.type}" for p in d.params if p.ref]
            src_refs = sorted({a.type for a in spec.api(src).attributes if a.ref} |
                              {s.type for a in spec.api(src).attributes for s in a.attributes if s.ref})
            filters = [n for n in result.inferred.notes.get(dst, []) if " filters by " in n and "not a link" in n]
            fed = sorted(k for k in (gold[step - 1].get("args") or {}) if f"from step {step - 1}" in json.dumps(gold[step - 1]["args"][k], ensure_ascii=False))
            reasons.append(
                f"no coupling {src} -> {dst}: {dst} takes {', '.join(wanted) or 'no identifier'}; "
                f"{src} (entity {spec.api(src).entity}) returns refs {', '.join(src_refs) or 'none'}; "
                f"the gold feeds {', '.join(fed) or '?'} from step {step - 1}"
                + ("".join(f" [importer: {n}]" for n in filters if any(f"parameter {k} " in n for k in fed)))
            )
    if reasons:
        return "; ".join(reasons)
    for rejected, shorter in library.rejected:
        if rejected.apis == apis:
            return f"dropped as redundant: the shorter solution {shorter} reaches the same entity with the same attributes"
    return "a path of the graph, but not among the library's solutions"


def evaluate(name: str, filename: str) -> dict:
    path = DATA / name / filename
    kind, reads, total_ops = document_operations(path)
    started = time.perf_counter()
    result = import_document(str(path))  # the same calls as `soay spec import` (cli/main.py spec_import)
    with tempfile.TemporaryDirectory(prefix="import-bench-") as tmp:
        written = write_import(result, Path(tmp) / f"{result.spec.domain}.yaml")
        binding = yaml.safe_load(written["binding"].read_text(encoding="utf-8"))
    seconds = time.perf_counter() - started
    summary = result.summary()
    index = binding_index(binding)
    imported_ops = {call for call in index if call in reads}

    questions = yaml.safe_load((DATA / name / "questions.yaml").read_text(encoding="utf-8"))["questions"]
    in_library = calls_imported = 0
    by_length: dict[int, list[int]] = collections.defaultdict(lambda: [0, 0])
    misses = []
    for q in questions:
        calls = [g["call"] for g in q["gold"]]
        by_length[len(calls)][1] += 1
        mapped: list[str | None] = []
        problems: list[str] = []
        for call in calls:
            names = index.get(call, [])
            if len(names) == 1:
                mapped.append(names[0])
            elif len(names) > 1:
                mapped.append(None)
                problems.append(f"mapping failed: {call} is bound to several APIs ({', '.join(names)})")
            elif call in reads:
                mapped.append(None)
                problems.append(f"call not imported: {call} is in the document but no imported API is bound to it")
            else:
                mapped.append(None)
                problems.append(f"mapping failed: {call} is not a read operation of the document")
        if not problems:
            calls_imported += 1
            apis = tuple(mapped)
            if apis in result.library:
                in_library += 1
                by_length[len(calls)][0] += 1
                continue
            reason, detail = "sequence not a solution", why_not_solution(result, apis, q["gold"])
        else:
            reason = "call not imported" if any(p.startswith("call not imported") for p in problems) else "mapping failed"
            detail = "; ".join(problems)
        misses.append({
            "id": q["id"],
            "question": q["question"],
            "gold": calls,
            "mapped": SEPARATOR.join(m or "?" for m in mapped),
            "why": reason,
            "detail": detail,
        })

    n = len(questions)
    return {
        "name": name,
        "document": f"tests/data/public_apis/{name}/{filename}",
        "kind": kind,
        "domain": summary["domain"],
        "operations": len(reads),
        "operations_all_methods": total_ops,
        "operations_importer": summary["operations"],
        "imported": summary["imported"],
        "imported_read_operations": len(imported_ops),
        "imported_pct": round(100 * len(imported_ops) / len(reads), 1) if reads else None,
        "not_imported": summary["not_imported"],
        "heads": len(summary["heads"]),
        "solutions": summary["solutions"],
        "combinations": summary["combinations"],
        "combination_notes": len(result.intent_notes),
        "combination_notes_sample": result.intent_notes[:3],
        "gold_sequences": n,
        "gold_in_library": round(100 * in_library / n, 1),
        "gold_in_library_n": in_library,
        "gold_calls_imported": round(100 * calls_imported / n, 1),
        "gold_calls_imported_n": calls_imported,
        "gold_in_library_by_calls": {str(k): f"{v[0]}/{v[1]}" for k, v in sorted(by_length.items())},
        "misses_by_reason": dict(collections.Counter(m["why"] for m in misses)),
        "not_matching": misses,
        "answered_right": None,
        "answered_right_note": NOT_MEASURED,
        "import_seconds": round(seconds, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "import.json")
    parser.add_argument("--only", nargs="*", help="Document names to run (default all four).")
    args = parser.parse_args()

    docs = [d for d in DOCUMENTS if not args.only or d[0] in args.only]
    documents = []
    for name, filename in docs:
        r = evaluate(name, filename)
        documents.append(r)
        print(
            f"{name}: {r['imported_read_operations']}/{r['operations']} imported ({r['imported_pct']} %), "
            f"{r['solutions']} solutions, {r['combinations']} combinations, gold in library "
            f"{r['gold_in_library']} % ({r['gold_in_library_n']}/{r['gold_sequences']}), gold calls imported "
            f"{r['gold_calls_imported']} %",
            flush=True,
        )
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "soay"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    out = {
        "documents": documents,
        "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "commit": head,
        "soay_tree_clean": not dirty,
        "command": "benchmarks/import_bench.py " + " ".join(sys.argv[1:]),
        "targets": {"imported_pct": 95, "gold_in_library": 90, "answered_right": 80},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
