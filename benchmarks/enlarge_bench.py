"""Benchmark of dataset enlargement: records/s and lag recovery after a burst of 50,000 records.

    .venv/bin/python benchmarks/enlarge_bench.py [--records 50000] [--repeats 3] [--workers 2]

Runs the real thing: the embedded broker (Tansu) on loopback, `soay enlarge` as its own process
with its verification workers on Ray, the sandbox re-running every distinct logged program. The
logged records are made from the verified train triplets of an existing dataset
(<data-root>/aminer/dataset, read only) into a fresh temporary dataset; nothing under the data
root is written. Three workloads, each repeated with fresh questions, medians reported:

- backlog: the job is paused (SIGSTOP), a burst of served traffic is produced, the job resumed:
  records/s from the resume until the group's lag is 0 (the job alone on the machine).
- live burst: the job runs and is caught up; the same kind of burst is produced as fast as the
  producer can: seconds from the end of the burst until the lag is 0 (the recovery), and from its
  start (producer and job share the machine).
- distinct: every record a different program (no repetition at all): records/s of a backlog,
  bound by the sandbox re-running each program.

Served traffic: 90 % of the records are requests, drawn from a pool of distinct questions
(`--distinct` per repeat; repeated questions are what a service mostly sees), 5 % of them with a
broken program and 5 % with a wrong logged result; 10 % are feedback verdicts (80 % good).
The group's lag is measured from outside the job: committed offsets (admin API) against end
offsets, every 0.1 s.

Writes benchmarks/results/enlarge.json; REPORT-enlarge.md is written by hand from it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.structs import TopicPartition

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cluster.broker import ensure_topics, start_broker  # noqa: E402
from soay.clarifications import is_clarification  # noqa: E402
from soay.dataset import iter_triplets  # noqa: E402
from soay.logs import Feedback, RequestLog  # noqa: E402
from soay.triplets import Triplet  # noqa: E402
from training.corpus import corpus_meta  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
REQUESTS, FEEDBACK, GROUP, PARTITIONS = "bench.requests", "bench.feedback", "bench-enlarge", 3


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def served_traffic(pool: list[Triplet], records: int, tag: str, rng: random.Random) -> list[tuple[str, str, bytes]]:
    """(topic, key, value) of a burst: requests over `pool` with 5 % broken and 5 % wrong, 10 % feedback."""
    out: list[tuple[str, str, bytes]] = []
    requests = 0
    while len(out) < records:
        if requests and rng.random() < 0.10:
            rid = f"{tag}-{rng.randrange(requests)}"
            out.append((FEEDBACK, rid, Feedback(request_id=rid, verdict="good" if rng.random() < 0.8 else "bad").encode()))
            continue
        t = pool[rng.randrange(len(pool))]
        rid, code, result, r = f"{tag}-{requests}", t.code, t.answer, rng.random()
        if r < 0.05:
            code = code.replace("final_result = ", "final_result = undefined_name + ", 1)
        elif r < 0.10:
            result = "not the answer"
        out.append((REQUESTS, rid, _request(rid, t, code, result)))
        requests += 1
    return out


def distinct_programs(pool: list[Triplet], tag: str) -> list[tuple[str, str, bytes]]:
    return [(REQUESTS, f"{tag}-{i}", _request(f"{tag}-{i}", t, t.code, t.answer)) for i, t in enumerate(pool)]


def _request(rid: str, t: Triplet, code: str, result: object) -> bytes:
    return RequestLog(request_id=rid, endpoint="/v1/ask", query=t.query, language=t.language, solution=t.solution,
                      code=code, result=result, status="ok").encode()


class Lag:
    """The group's lag seen from outside: end offsets minus committed offsets, all partitions."""

    def __init__(self, bootstrap: str) -> None:
        self.admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        self.probe = KafkaConsumer(bootstrap_servers=bootstrap)
        self.parts = [TopicPartition(t, p) for t in (REQUESTS, FEEDBACK) for p in range(PARTITIONS)]

    def __call__(self) -> int:
        ends = self.probe.end_offsets(self.parts)
        committed = self.admin.list_group_offsets({GROUP: self.parts}).get(GROUP, {})
        return sum(max(0, ends[tp] - (committed[tp].offset if tp in committed and committed[tp].offset >= 0 else 0)) for tp in self.parts)

    def wait_zero(self, timeout: float, job: subprocess.Popen | None = None) -> float:
        """Seconds until the lag is 0 (raises past `timeout`, or when the job has exited)."""
        start = time.monotonic()
        while self() != 0:
            if job is not None and job.poll() is not None:
                raise RuntimeError(f"the enlargement job exited with {job.returncode}")
            if time.monotonic() - start > timeout:
                raise TimeoutError(f"lag still {self()} after {timeout} s")
            time.sleep(0.1)
        return time.monotonic() - start

    def close(self) -> None:
        self.admin.close()
        self.probe.close()


def produce(producer: KafkaProducer, burst: list[tuple[str, str, bytes]]) -> float:
    start = time.monotonic()
    for topic, key, value in burst:
        producer.send(topic, key=key.encode(), value=value)
    producer.flush(timeout=120)
    return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", type=Path, default=ROOT / "data")
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--distinct", type=int, default=1000, help="distinct questions per served-traffic burst")
    parser.add_argument("--distinct-programs", type=int, default=1000, help="records of the all-distinct workload per repeat")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-records", type=int, default=5000)
    parser.add_argument("--out", type=Path, default=RESULTS / "enlarge.json")
    args = parser.parse_args()

    source = args.data_root / "aminer" / "dataset"
    corpus = args.data_root / "aminer" / "corpus.sqlite"
    meta = corpus_meta(corpus)
    if not meta:
        raise SystemExit(f"no corpus at {corpus}: run `soay generate` first")
    train = sorted((t for t in iter_triplets(source, split="train") if not is_clarification(t.answer)), key=lambda t: t.id)  # logs of answered requests
    random.Random(0).shuffle(train)
    need = 500 + args.repeats * (2 * args.distinct + args.distinct_programs)
    if len(train) < need:
        raise SystemExit(f"{len(train)} train triplets at {source}; this run needs {need}")
    slices = iter(range(0, need, 1))
    take = lambda n: [train[next(slices)] for _ in range(n)]  # noqa: E731 - disjoint slices of the pool

    rng = random.Random(1)
    broker = start_broker(port=free_port())
    tmp = tempfile.TemporaryDirectory(prefix="enlarge-bench-")
    job = None
    results: dict = {"machine": f"{platform.machine()}, {os.cpu_count()} cores (shared with other work)", "args": {k: str(v) for k, v in vars(args).items()},
                     "backlog": [], "live": [], "distinct": []}
    try:
        ensure_topics(broker.bootstrap, [REQUESTS, FEEDBACK], PARTITIONS)
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=20, batch_size=512 * 1024, acks=1)
        env = {**os.environ, "SOAY_DATA__ROOT": str(args.data_root), "SOAY_DATA__CORPUS_SIZE": meta["size"], "SOAY_DATA__SEED": meta["seed"],
               "SOAY_KAFKA__BOOTSTRAP_SERVERS": broker.bootstrap, "SOAY_KAFKA__REQUESTS_TOPIC": REQUESTS,
               "SOAY_KAFKA__FEEDBACK_TOPIC": FEEDBACK, "SOAY_KAFKA__PARTITIONS": str(PARTITIONS), "SOAY_KAFKA__CONSUMER_GROUP": GROUP,
               # a paused job must stay in its group: the session outlives the pause
               "SOAY_ENLARGE__SESSION_TIMEOUT_MS": "120000", "SOAY_ENLARGE__HEARTBEAT_INTERVAL_MS": "3000",
               "SOAY_ENLARGE__MAX_POLL_INTERVAL_MS": "300000", "SOAY_ENLARGE__PROGRESS_SECONDS": "10"}
        log = open(Path(tmp.name) / "job.log", "w")  # noqa: SIM115
        job = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "enlarge", "--dataset", str(Path(tmp.name) / "dataset"), "--workers", str(args.workers),
             "--batch-records", str(args.batch_records), "--metrics-port", str(free_port()), "--json"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=log, text=True,
        )
        lag = Lag(broker.bootstrap)
        produce(producer, served_traffic(take(500), 500, "warmup", rng))
        warm = lag.wait_zero(300, job)
        print(f"warm-up: job up and caught up after {warm:.1f} s", flush=True)

        for k in range(args.repeats):
            burst = served_traffic(take(args.distinct), args.records, f"backlog{k}", rng)
            os.kill(job.pid, signal.SIGSTOP)
            produce(producer, burst)
            os.kill(job.pid, signal.SIGCONT)
            seconds = lag.wait_zero(600, job)
            results["backlog"].append({"records": len(burst), "seconds": round(seconds, 2), "records_per_s": round(len(burst) / seconds)})
            print(f"backlog {k}: {len(burst)} records in {seconds:.2f} s = {len(burst) / seconds:,.0f}/s", flush=True)

            burst = served_traffic(take(args.distinct), args.records, f"live{k}", rng)
            started = time.monotonic()
            produced = produce(producer, burst)
            recovery = lag.wait_zero(600, job)
            total = time.monotonic() - started
            results["live"].append({"records": len(burst), "produce_s": round(produced, 2), "recovery_s": round(recovery, 2),
                                    "burst_start_to_zero_s": round(total, 2), "records_per_s": round(len(burst) / total)})
            print(f"live {k}: burst produced in {produced:.2f} s, lag 0 {recovery:.2f} s after its end ({total:.2f} s after its start)", flush=True)

            burst = distinct_programs(take(args.distinct_programs), f"distinct{k}")
            os.kill(job.pid, signal.SIGSTOP)
            produce(producer, burst)
            os.kill(job.pid, signal.SIGCONT)
            seconds = lag.wait_zero(600, job)
            results["distinct"].append({"records": len(burst), "seconds": round(seconds, 2), "records_per_s": round(len(burst) / seconds)})
            print(f"distinct {k}: {len(burst)} programs in {seconds:.2f} s = {len(burst) / seconds:,.0f}/s", flush=True)
        lag.close()
        producer.close()
        job.send_signal(signal.SIGTERM)  # the job finishes its batch and prints its report
        out, _ = job.communicate(timeout=120)
        results["job_report"] = json.loads(out.strip().splitlines()[-1])
    finally:
        if job is not None and job.poll() is None:
            os.kill(job.pid, signal.SIGCONT)
            job.kill()
            job.wait()
        broker.stop()
        tmp.cleanup()
    for name, key in (("backlog", "records_per_s"), ("live", "recovery_s"), ("distinct", "records_per_s")):
        results[f"median_{name}_{key}"] = statistics.median(r[key] for r in results[name])
    results["median_live_records_per_s"] = statistics.median(r["records_per_s"] for r in results["live"])
    results["load_average_after"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps({k: v for k, v in results.items() if k.startswith("median") or k == "load_average_after"}, indent=2))


if __name__ == "__main__":
    main()
