"""Benchmark of the AMiner APIs over a big corpus: p50/p99 latency of every API, in-process and
through the HTTP clone.

    .venv/bin/python benchmarks/api_bench.py [--size 1000000] [--db PATH] [--calls 3000] [--http-calls 300]
                                             [--before benchmarks/results/api-before.json]

Builds a corpus of --size persons with `soay corpus build` (timed; under a temporary directory,
removed afterwards unless --keep) or uses --db. Arguments are drawn from the corpus: names that
exist (alone, with their organisation, with an interest), common first names and surnames, names
in Chinese characters, unknown names, organisation and interest filters, exact titles and title
keywords, ids of random and of the most prolific scholars, unknown ids. The calls of all APIs are
shuffled together and timed one by one on the in-process environment (the object the sandbox
calls) after a warm-up; then a sample of them goes through the HTTP clone (`soay api serve`).

Writes benchmarks/results/api.json and benchmarks/REPORT-api.md. --before embeds the per-API
figures of an earlier run (its api.json) as the "before" columns.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT))

from soay.environment.academic import AcademicEnvironment  # noqa: E402

TARGET_P99_MS = 20.0
UNKNOWN_NAMES = ["Qxzt Vormbly", "Zyglo Prannek", "Ixtu Wembravon", "Plorf Quandiss", "Vexa Drommolt"]
UNKNOWN_WORDS = ["zorbulent quixotry", "flarnished vromble", "quaggish plinthopter", "xylotic brummage"]


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


def summary(ms: list[float]) -> dict[str, float]:
    return {
        "calls": len(ms),
        "p50_ms": round(percentile(ms, 0.50), 3),
        "p90_ms": round(percentile(ms, 0.90), 3),
        "p99_ms": round(percentile(ms, 0.99), 3),
        "max_ms": round(max(ms), 3),
        "mean_ms": round(statistics.fmean(ms), 3),
    }


def cpu_summary(ms: list[float]) -> dict[str, float]:
    """CPU time of the calling thread (SQLite runs in it): the call's own cost, without the time it
    waited for a core on a shared machine."""
    return {"cpu_p50_ms": round(percentile(ms, 0.50), 3), "cpu_p99_ms": round(percentile(ms, 0.99), 3)}


def build_corpus(size: int, work: Path) -> tuple[Path, dict]:
    env = {**os.environ, "SOAY_DATA__ROOT": str(work)}
    print(f"building a {size:,}-person corpus under {work} ...", flush=True)
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "cli.main", "corpus", "build", "--size", str(size)],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )
    if out.returncode != 0:
        raise RuntimeError(f"soay corpus build failed:\n{out.stderr[-3000:]}")
    seconds = time.perf_counter() - start
    report = json.loads(out.stdout.strip().splitlines()[-1])
    db = Path(report["path"])
    return db, {"seconds_whole_command": round(seconds, 1), "size_mb": round(db.stat().st_size / 2**20, 1), **report}


# ----------------------------------------------------------------------------- the arguments


def draw_cases(env: AcademicEnvironment, db: Path, calls: int, rng: random.Random) -> list[tuple[str, str, dict]]:
    """(api, case, arguments) with `calls` calls per API, the cases of an API in equal shares."""
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    n_persons = conn.execute("SELECT max(id) FROM person").fetchone()[0]
    persons = [env.sample_entity("person", rng) for _ in range(calls)]
    pubs = [env.sample_entity("publication", rng) for _ in range(calls)]
    # Common first and last name parts, counted over a sample of scholars.
    sample_ids = rng.sample(range(1, n_persons + 1), min(n_persons, 20_000))
    sample = [
        r for i in range(0, len(sample_ids), 500)
        for r in conn.execute(
            f"SELECT name, name_zh FROM person WHERE id IN ({', '.join('?' * len(sample_ids[i:i + 500]))})",
            sample_ids[i:i + 500],
        )
    ]
    firsts: dict[str, int] = defaultdict(int)
    lasts: dict[str, int] = defaultdict(int)
    for name, _ in sample:
        firsts[name.split()[0]] += 1
        lasts[name.split()[-1]] += 1
    common_first = sorted(firsts, key=lambda k: -firsts[k])[:40]
    common_last = sorted(lasts, key=lambda k: -lasts[k])[:40]
    zh_names = [zh for _, zh in sample if zh][:2000]
    prolific = [r[0] for r in conn.execute(
        "SELECT pid FROM person WHERE id IN (SELECT id FROM person ORDER BY num_pubs DESC LIMIT 200)"
    )]
    titles = [env.head_inputs("searchPublication", p)["publication_info"] for p in pubs[: max(50, calls // 4)]]
    orgs = conn.execute("SELECT name, name_zh FROM organization ORDER BY id").fetchall()
    org_names = [name for name, _ in rng.sample(orgs, min(500, len(orgs)))]
    org_zh = [zh for _, zh in rng.sample(orgs, min(2000, len(orgs))) if zh][:500]
    fields = [r[0] for r in conn.execute("SELECT name FROM field")]
    fields_zh = [r[0] for r in conn.execute("SELECT name_zh FROM field WHERE name_zh != ''")]
    conn.close()

    def head(i: int) -> dict:
        return env.head_inputs("searchPerson", persons[i % len(persons)])

    def unknown_id() -> str:
        return "%024x" % rng.getrandbits(96)

    def keywords(title: str) -> str:
        words = [w for w in title.split() if len(w) > 3] or title.split()
        return " ".join(rng.sample(words, min(len(words), rng.choice((1, 2, 3)))))

    def garbled(title: str) -> str:  # a title with one word wrong: no row holds all the words
        words = title.split()
        words[rng.randrange(len(words))] = rng.choice(UNKNOWN_WORDS).split()[0]
        return " ".join(words)

    person_cases = {
        "name": lambda i: {"name": head(i)["name"]},
        "name+organization": lambda i: {"name": head(i)["name"], "organization": head(i)["organization"]},
        "name+interest": lambda i: {"name": head(i)["name"], "interest": head(i)["interest"]},
        "surname+interest": lambda i: {"name": head(i)["name"].split()[-1], "interest": head(i)["interest"]},
        "common surname": lambda i: {"name": rng.choice(common_last)},
        "common first name": lambda i: {"name": rng.choice(common_first)},
        "common first+last": lambda i: {"name": f"{rng.choice(common_first)} {rng.choice(common_last)}"},
        "reversed name": lambda i: {"name": " ".join(reversed(head(i)["name"].split()))},
        "name prefix": lambda i: {"name": " ".join(w[:3] for w in head(i)["name"].split())},
        "chinese name": lambda i: {"name": zh_names[i % len(zh_names)]} if zh_names else {"name": head(i)["name"]},
        "unknown name": lambda i: {"name": rng.choice(UNKNOWN_NAMES)},
        "organization": lambda i: {"organization": rng.choice(org_names)},
        "organization (chinese)": lambda i: {"organization": rng.choice(org_zh or org_names)},
        "interest": lambda i: {"interest": rng.choice(fields)},
        "interest (chinese)": lambda i: {"interest": rng.choice(fields_zh or fields)},
        "organization+interest": lambda i: {"organization": rng.choice(org_names), "interest": rng.choice(fields)},
    }
    pub_cases = {
        "exact title": lambda i: {"publication_info": titles[i % len(titles)]},
        "title keywords": lambda i: {"publication_info": keywords(titles[i % len(titles)])},
        "title, one word wrong": lambda i: {"publication_info": garbled(titles[i % len(titles)])},
        "lower-cased title prefix": lambda i: {"publication_info": " ".join(titles[i % len(titles)].lower().split()[:4])},
        "unknown words": lambda i: {"publication_info": rng.choice(UNKNOWN_WORDS)},
    }

    def person_id_cases() -> dict:
        return {
            "random scholar": lambda i: {"person_id": persons[i]},
            "most prolific scholars": lambda i: {"person_id": prolific[i % len(prolific)]},
            "unknown id": lambda i: {"person_id": unknown_id()},
        }

    plan = {
        "searchPerson": person_cases,
        "searchPublication": pub_cases,
        "getCoauthors": person_id_cases(),
        "getPersonInterest": person_id_cases(),
        "getPersonBasicInfo": person_id_cases(),
        "getPersonPubs": person_id_cases(),
        "getPublication": {
            "random publication": lambda i: {"pub_id": pubs[i]},
            "unknown id": lambda i: {"pub_id": unknown_id()},
        },
    }
    assert set(plan) == set(env.spec.api_names), "every API of the spec is benchmarked"
    out = []
    for api, cases in plan.items():
        names = list(cases)
        for i in range(calls):
            case = names[i % len(names)]
            out.append((api, case, cases[case](i)))
    rng.shuffle(out)
    return out


# --------------------------------------------------------------------------------- the timing


def time_in_process(env: AcademicEnvironment, calls: list[tuple[str, str, dict]], warmup: int) -> dict:
    for api, _, args in calls[:warmup]:
        env.call(api, **args)
    per_api: dict[str, list[float]] = defaultdict(list)
    per_case: dict[tuple[str, str], list[float]] = defaultdict(list)
    cpu_api: dict[str, list[float]] = defaultdict(list)
    cpu_case: dict[tuple[str, str], list[float]] = defaultdict(list)
    empty: dict[tuple[str, str], int] = defaultdict(int)
    started = time.perf_counter()
    for k, (api, case, args) in enumerate(calls):
        c0 = time.thread_time_ns()
        t0 = time.perf_counter_ns()
        result = env.call(api, **args)
        ms = (time.perf_counter_ns() - t0) / 1e6
        cpu = (time.thread_time_ns() - c0) / 1e6
        per_api[api].append(ms)
        per_case[(api, case)].append(ms)
        cpu_api[api].append(cpu)
        cpu_case[(api, case)].append(cpu)
        empty[(api, case)] += not result
        if k % 2000 == 0 or k == len(calls) - 1:
            print(f"\rin-process {k + 1}/{len(calls)} calls, {time.perf_counter() - started:.0f} s", end="", flush=True)
    print(flush=True)
    return {
        "apis": {api: {**summary(ms), **cpu_summary(cpu_api[api])} for api, ms in sorted(per_api.items())},
        "cases": {
            api: {
                case: {**summary(ms), **cpu_summary(cpu_case[(a, case)]), "empty_results": empty[(a, case)]}
                for (a, case), ms in sorted(per_case.items()) if a == api
            }
            for api in sorted(per_api)
        },
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def time_http(db: Path, calls: list[tuple[str, str, dict]], warmup: int) -> dict:
    import httpx

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "api", "serve", "--db", str(db), "--port", str(port)],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            deadline = time.monotonic() + 120
            while True:
                try:
                    if client.get("/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the HTTP clone did not start: {proc.stderr.read().decode()[-2000:]}")
                time.sleep(0.2)
            for api, _, args in calls[:warmup]:
                client.post(f"/api/{api}", json=args)
            per_api: dict[str, list[float]] = defaultdict(list)
            for k, (api, _, args) in enumerate(calls):
                t0 = time.perf_counter_ns()
                response = client.post(f"/api/{api}", json=args)
                ms = (time.perf_counter_ns() - t0) / 1e6
                response.raise_for_status()
                per_api[api].append(ms)
                if k % 500 == 0 or k == len(calls) - 1:
                    print(f"\rHTTP {k + 1}/{len(calls)} calls", end="", flush=True)
            print(flush=True)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
    return {api: summary(ms) for api, ms in sorted(per_api.items())}


# ------------------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000, help="persons of the corpus to build")
    parser.add_argument("--db", type=Path, help="use this corpus instead of building one")
    parser.add_argument("--built-in", type=float, help="with --db: the seconds its `soay corpus build` took, for the report")
    parser.add_argument("--calls", type=int, default=3000, help="timed in-process calls per API")
    parser.add_argument("--warmup", type=int, default=2000, help="untimed calls first (all APIs mixed)")
    parser.add_argument("--http-calls", type=int, default=300, help="calls per API through the HTTP clone (0: none)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--before", type=Path, help="an earlier api.json whose per-API figures are the 'before' columns")
    parser.add_argument("--keep", action="store_true", help="keep the built corpus (its path is printed)")
    parser.add_argument("--note", action="append", default=[], help="a paragraph for the report (repeatable)")
    parser.add_argument("--out", type=Path, default=RESULTS / "api.json")
    parser.add_argument("--report", type=Path, default=ROOT / "benchmarks" / "REPORT-api.md")
    args = parser.parse_args()

    results: dict[str, object] = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
                    "sqlite": sqlite3.sqlite_version, "load_average_at_start": os.getloadavg()[0]},
        "command": " ".join(["benchmarks/api_bench.py", *sys.argv[1:]]),
        "target_p99_ms": TARGET_P99_MS,
        "notes": args.note,
    }
    work = None
    try:
        if args.db:
            db = args.db
            results["corpus"] = {"path": str(db), "size_mb": round(db.stat().st_size / 2**20, 1)}
            if args.built_in:
                results["corpus"]["seconds_whole_command"] = args.built_in
        else:
            work = Path(tempfile.mkdtemp(prefix="soay-api-bench-", dir=os.environ.get("TMPDIR", "/tmp")))
            db, results["corpus"] = build_corpus(args.size, work)
        print("corpus", results["corpus"], flush=True)
        with AcademicEnvironment(db) as env:
            results["corpus"]["persons"] = env._n_persons
            results["corpus"]["publications"] = env._n_publications
            rng = random.Random(args.seed)
            calls = draw_cases(env, db, args.calls, rng)
            warm = draw_cases(env, db, max(1, args.warmup // len(env.spec.api_names)), random.Random(args.seed + 1))
            results["in_process"] = _timed(env, warm, calls)
        if args.http_calls:
            by_api: dict[str, list] = defaultdict(list)
            for call in calls:
                if len(by_api[call[0]]) < args.http_calls:
                    by_api[call[0]].append(call)
            sample = [c for cs in by_api.values() for c in cs]
            random.Random(args.seed + 2).shuffle(sample)
            results["http"] = time_http(db, sample, warmup=min(200, len(sample)))
    finally:
        if work and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        elif work:
            print(f"kept the corpus at {db}")
    results["machine"]["load_average_at_end"] = os.getloadavg()[0]
    if args.before:
        results["before"] = json.loads(args.before.read_text())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2, ensure_ascii=False))
    args.report.write_text(render(results))
    print(f"wrote {args.out} and {args.report}")


def _timed(env: AcademicEnvironment, warm: list, calls: list) -> dict:
    for api, _, a in warm:
        env.call(api, **a)
    return time_in_process(env, calls, 0)


def render(r: dict) -> str:
    c = r["corpus"]
    ip = r["in_process"]["apis"]
    before = r.get("before") or {}
    b_ip = before.get("in_process", {}).get("apis", {})
    b_cases = before.get("in_process", {}).get("cases", {})
    target = r["target_p99_ms"]
    m = r["machine"]

    def ok(s: dict) -> str:
        return "yes" if s["p99_ms"] <= target else "**no**"

    lines = [
        "# Benchmark: the AMiner APIs over a 1,000,000-person corpus",
        "",
        f"Command: `.venv/bin/python {r['command']}`",
        f"Machine: {m['cpus']} CPUs shared with other work, Python {m['python']}, SQLite {m['sqlite']}, {m['platform']}"
        + (
            f"; 1-minute load average {m['load_average_at_start']:.1f} at the start, {m['load_average_at_end']:.1f} at the end."
            if "load_average_at_end" in m
            else "."
        ),
        f"Raw figures: `benchmarks/results/api.json`. Target: every API's p99 <= {target:g} ms.",
        "",
        "## Corpus",
        "",
    ]
    if "seconds_whole_command" in c:
        lines.append(
            f"{c['persons']:,} persons, {c['publications']:,} publications, built by `soay corpus build --size "
            f"{c['persons']}` in {c['seconds_whole_command']} s (whole command); {c['size_mb']} MB on disk."
        )
    else:
        lines.append(f"{c['persons']:,} persons, {c['publications']:,} publications ({c['path']}, {c['size_mb']} MB).")
    for note in r.get("notes", []):
        lines += ["", note]
    lines += [
        "",
        "## Latency per API, in-process (the environment object the sandbox calls)",
        "",
        "The calls of all APIs shuffled together, each timed alone (wall clock, and the CPU time of",
        "the calling thread, in which SQLite runs), after a warm-up; one thread."
        + (" Before: the same calls on the code and corpus before this change." if b_ip else ""),
        "",
    ]
    head = "| API | calls |" + (" before p50 | before p99 |" if b_ip else "") + " p50 | p90 | p99 | max | CPU p50 | CPU p99 | p99 <= target |"
    lines += [head, "|" + "---|" * (head.count("|") - 1)]
    for api, s in ip.items():
        b = b_ip.get(api, {})
        was = f" {b.get('p50_ms', '-')} | {b.get('p99_ms', '-')} |" if b_ip else ""
        lines.append(
            f"| {api} | {s['calls']} |{was} {s['p50_ms']} | {s['p90_ms']} | {s['p99_ms']} | {s['max_ms']} | "
            f"{s['cpu_p50_ms']} | {s['cpu_p99_ms']} | {ok(s)} |"
        )
    lines += [
        "",
        "All figures in milliseconds.",
        "",
        "## Per kind of argument, in-process",
        "",
        "| API | arguments | calls | empty results |" + (" before p50 | before p99 |" if b_cases else "")
        + " p50 | p99 | CPU p50 | CPU p99 |",
        "|---|---|---|---|" + ("---|---|" if b_cases else "") + "---|---|---|---|",
    ]
    for api, cases in r["in_process"]["cases"].items():
        for case, s in cases.items():
            b = b_cases.get(api, {}).get(case, {})
            was = f" {b.get('p50_ms', '-')} | {b.get('p99_ms', '-')} |" if b_cases else ""
            lines.append(
                f"| {api} | {case} | {s['calls']} | {s['empty_results']} |{was} {s['p50_ms']} | {s['p99_ms']} | "
                f"{s['cpu_p50_ms']} | {s['cpu_p99_ms']} |"
            )
    if "http" in r:
        b_http = before.get("http", {})
        lines += [
            "",
            "## Latency per API through the HTTP clone (`soay api serve`, one client, keep-alive)",
            "",
            "A sample of the same calls, POSTed one at a time over loopback: JSON and HTTP handling included.",
            "",
            "| API | calls |" + (" before p50 | before p99 |" if b_http else "") + " p50 | p99 | max |",
            "|---|---|" + ("---|---|" if b_http else "") + "---|---|---|",
        ]
        for api, s in r["http"].items():
            b = b_http.get(api, {})
            was = f" {b.get('p50_ms', '-')} | {b.get('p99_ms', '-')} |" if b_http else ""
            lines.append(f"| {api} | {s['calls']} |{was} {s['p50_ms']} | {s['p99_ms']} | {s['max_ms']} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
