# -*- coding: utf-8 -*-
"""Freeze the open-world evaluation set: print SHA-256 of the data files and write FROZEN.txt.

Standard library only.  Run from anywhere:  python3 benchmarks/open_world/freeze.py
"""
import collections
import datetime
import hashlib
import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = ["entities.yaml", "validation.jsonl", "test.jsonl"]
SOURCES = ["world.py", "questions.txt", "build.py"]


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 16), b""):
            h.update(block)
    return h.hexdigest()


def main():
    lines = []
    hashes = {}
    for name in DATA + SOURCES:
        path = os.path.join(HERE, name)
        if os.path.exists(path):
            hashes[name] = sha256(path)
    for name in DATA:
        print(f"{hashes[name]}  {name}")

    rows = {}
    for name in ("validation.jsonl", "test.jsonl"):
        with open(os.path.join(HERE, name), encoding="utf-8") as fh:
            rows[name] = [json.loads(l) for l in fh if l.strip()]
    allrows = rows["validation.jsonl"] + rows["test.jsonl"]
    with open(os.path.join(HERE, "entities.yaml"), encoding="utf-8") as fh:
        text = fh.read()
    n_scholars = len(re.findall(r"^- id: s\d+", text, flags=re.M))
    n_pubs = len(re.findall(r"^- id: p\d+", text, flags=re.M))

    lines.append("Open-world evaluation set: FROZEN")
    lines.append(f"date (UTC): {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M')}")
    lines.append("")
    lines.append("SHA-256")
    for name in DATA:
        lines.append(f"  {hashes[name]}  {name}")
    lines.append("  sources (the hand-written inputs build.py turns into the files above):")
    for name in SOURCES:
        if name in hashes:
            lines.append(f"  {hashes[name]}  {name}")
    lines.append("")
    lines.append(f"entities: {n_scholars} scholars, {n_pubs} publications")
    lines.append(f"questions: {len(allrows)} (validation {len(rows['validation.jsonl'])}, test {len(rows['test.jsonl'])})")

    def table(title, key):
        lines.append("")
        lines.append(f"{title}: total / en / zh / validation / test")
        tot = collections.Counter(key(r) for r in allrows)
        by_lang = {lg: collections.Counter(key(r) for r in allrows if r["language"] == lg) for lg in ("en", "zh")}
        by_split = {s: collections.Counter(key(r) for r in rows[s]) for s in rows}
        for k in sorted(tot):
            lines.append(f"  {k:45s} {tot[k]:4d} {by_lang['en'][k]:4d} {by_lang['zh'][k]:4d} "
                         f"{by_split['validation.jsonl'][k]:4d} {by_split['test.jsonl'][k]:4d}")

    table("language", lambda r: r["language"])
    table("expected_kind", lambda r: r["expected_kind"])
    table("style", lambda r: r["style"])
    table("intent", lambda r: r["intent"])

    def filt(r):
        if r["scholar"] is None:
            return "-"
        a = r["arguments"]
        return "name" + ("+organization" if "organization" in a else "") + ("+interest" if "interest" in a else "")
    table("filter set (person-headed, answerable)", filt)

    with open(os.path.join(HERE, "FROZEN.txt"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    print(f"wrote FROZEN.txt ({len(allrows)} questions, {n_scholars} scholars, {n_pubs} publications)")


if __name__ == "__main__":
    main()
