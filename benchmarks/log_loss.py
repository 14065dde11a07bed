"""Does the request log lose or duplicate anything across faults? (issue 25, `log_loss` of reliability.json)

What runs: the embedded broker (Tansu, in memory) on a free port; `soay serve` on the demo model with
two ingress replicas, pointed at it, with its outbox in a temporary directory; `soay enlarge` on a copy
of the dataset, consuming and committing in the service's consumer group (so records leave the
outbox only once it has them). Clients send N feedback verdicts (`POST /v1/feedback`, each for its
own request id; the cheapest request that makes a record) while three faults strike: the broker
restarted (its in-memory log is lost), the broker away for OUTAGE_S and back empty, and an ingress
replica SIGKILLed. A client does not retry: a verdict answered 202 was promised kept.

The verdict: every 202'd request id is in the dataset's feedback file (`lost` counts those missing)
and none is there twice (`duplicated`). Records the broker holds more than once (a shipper that died
between acknowledgement and bookkeeping, a log re-sent after a restart the enlargement had partly
read, or a record re-sent after RESEND_S without the enlargement's acknowledgement) are counted as
`kafka_duplicates`: the enlargement's de-duplication is what keeps them out.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import httpx

from cluster.broker import Broker, start_broker
from soay.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
SOAY = [sys.executable, "-m", "cli.main"]
CONCURRENCY = 16
OUTAGE_S = 10.0
SERVE_START_S = 900.0
RESEND_S = 60
"""kafka.outbox_resend_s of the service: records the enlargement skipped after a restart come again this soon."""
SETTLE_S = 600.0
"""How long the enlargement may take to catch up after the last verdict."""
FEEDBACK_FILE = Path("enlarge") / "feedback.jsonl"
INGRESS_TITLE = "ServeReplica:soay:ingress"
"""Ray names a replica's process by its deployment (`ray::ServeReplica:<app>:<deployment>`)."""


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(url: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"soay serve exited with {proc.returncode} before {url}/healthz answered")
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)
    raise TimeoutError(f"{url}/healthz not healthy within {timeout} s")


def _stop(proc: subprocess.Popen, grace: float = 30.0) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGINT)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)


def _descendants(root: int) -> set[int]:
    """Every process under `root` (from /proc): Ray's raylet, its workers and their replicas."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _ingress_pids(serve_pid: int) -> list[int]:
    """The ingress replicas' processes of this `soay serve` (not of another Ray on the machine)."""
    found = subprocess.run(["pgrep", "-f", INGRESS_TITLE], capture_output=True, text=True).stdout.split()
    mine = _descendants(serve_pid)
    return [int(p) for p in found if int(p) in mine]


class Faults:
    """The three faults, each struck once as the sent count passes its mark."""

    def __init__(self, broker: Broker, serve_pid: int, total: int, log: Callable[[str], None]) -> None:
        self.broker, self.serve_pid, self.log = broker, serve_pid, log
        self.port = int(broker.bootstrap.rsplit(":", 1)[1])
        self.marks = {int(total * 0.25): self.restart_broker, int(total * 0.5): self.broker_outage, int(total * 0.75): self.kill_ingress}
        self.struck: list[dict[str, object]] = []

    async def maybe(self, sent: int) -> None:
        fault = self.marks.pop(sent, None)
        if fault is not None:
            started = time.monotonic()
            detail = await fault()
            self.struck.append({"fault": fault.__name__, "at_record": sent, "seconds": round(time.monotonic() - started, 1), **detail})
            self.log(f"fault {fault.__name__} at record {sent}: {detail}")

    async def restart_broker(self) -> dict[str, object]:
        self.broker.stop()
        self.broker = await asyncio.to_thread(start_broker, port=self.port)
        return {"broker_pid": self.broker.pid}

    async def broker_outage(self) -> dict[str, object]:
        self.broker.stop()
        await asyncio.sleep(OUTAGE_S)
        self.broker = await asyncio.to_thread(start_broker, port=self.port)
        return {"outage_s": OUTAGE_S}

    async def kill_ingress(self) -> dict[str, object]:
        pids = _ingress_pids(self.serve_pid)
        if not pids:
            return {"killed": None, "note": "no ingress replica process found"}
        os.kill(pids[0], signal.SIGKILL)
        return {"killed": pids[0], "ingress_replicas": len(pids)}


async def _send(url: str, headers: dict[str, str], total: int, faults: Faults, log: Callable[[str], None]) -> tuple[set[str], Counter]:
    """Send `total` verdicts, CONCURRENCY at a time; the ids answered 202, and every status seen."""
    accepted: set[str] = set()
    statuses: Counter = Counter()
    next_id = 0
    started = time.monotonic()
    async with httpx.AsyncClient(timeout=60) as client:

        async def worker() -> None:
            nonlocal next_id
            while next_id < total:
                n, next_id = next_id, next_id + 1
                await faults.maybe(n)
                request_id = f"loss-{n:06d}"
                try:
                    response = await client.post(f"{url}/v1/feedback", headers=headers,
                                                 json={"request_id": request_id, "verdict": "good" if n % 3 else "bad"})
                    statuses[str(response.status_code)] += 1
                    if response.status_code == 202:
                        accepted.add(request_id)
                except httpx.HTTPError as exc:
                    statuses[type(exc).__name__] += 1
                if n and n % 1000 == 0:
                    log(f"sent {n}/{total} ({n / (time.monotonic() - started):.0f}/s), accepted {len(accepted)}")

        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return accepted, statuses


def _kept(feedback_file: Path) -> Counter:
    ids: Counter = Counter()
    if feedback_file.is_file():
        for line in feedback_file.read_text().splitlines():
            request_id = json.loads(line)["request_id"]
            if request_id.startswith("loss-"):
                ids[request_id] += 1
    return ids


def _kafka_copies(bootstrap: str, topic: str) -> Counter:
    """How many times each verdict is on the (current) broker's topic."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest")
    copies: Counter = Counter()
    try:
        consumer.assign([TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()])
        while batch := consumer.poll(timeout_ms=2000):
            for records in batch.values():
                copies.update(json.loads(r.value)["request_id"] for r in records)
    finally:
        consumer.close()
    return copies


def run_log_loss(model: Path, total: int = 10_000, log: Callable[[str], None] = print) -> dict[str, object]:
    """Run the experiment end to end and return the `log_loss` section."""
    settings = Settings()
    work = Path(tempfile.mkdtemp(prefix="soay-log-loss-"))
    dataset = work / "dataset"
    shutil.copytree(settings.data.dataset_path(), dataset)
    broker = start_broker(port=_free_port())
    port = _free_port()
    env = {**os.environ, "SOAY_KAFKA__BOOTSTRAP_SERVERS": broker.bootstrap, "SOAY_KAFKA__OUTBOX_DIR": str(work / "outbox"),
           "SOAY_KAFKA__OUTBOX_RESEND_S": str(RESEND_S), "SOAY_SERVE__MIN_REPLICAS": "2", "SOAY_SERVE__MAX_REPLICAS": "2", "SOAY_SERVE__PORT": str(port)}
    env.pop("SOAY_SERVE__API_KEY", None)
    url = f"http://127.0.0.1:{port}"
    serve = subprocess.Popen([*SOAY, "serve", "--model", str(model)], cwd=ROOT, env=env, stdout=(work / "serve.log").open("w"), stderr=subprocess.STDOUT)
    enlarge = None
    faults = Faults(broker, serve.pid, total, log)
    try:
        log(f"starting soay serve at {url} (logs: {work / 'serve.log'})")
        _wait_healthy(url, serve, SERVE_START_S)
        enlarge = subprocess.Popen([*SOAY, "enlarge", "--workers", "0", "--dataset", str(dataset)], cwd=ROOT, env=env,
                                   stdout=(work / "enlarge.log").open("w"), stderr=subprocess.STDOUT)
        started = time.monotonic()
        accepted, statuses = asyncio.run(_send(url, {}, total, faults, log))
        send_s = time.monotonic() - started
        log(f"sent {total} in {send_s:.0f} s; {len(accepted)} accepted; waiting for the enlargement to catch up")
        deadline = time.monotonic() + SETTLE_S
        while time.monotonic() < deadline and not accepted <= set(_kept(dataset / FEEDBACK_FILE)):
            time.sleep(5)
        kept = _kept(dataset / FEEDBACK_FILE)
        copies = _kafka_copies(faults.broker.bootstrap, settings.kafka.feedback_topic)
    finally:
        if enlarge is not None:
            _stop(enlarge)
        _stop(serve)
        faults.broker.stop()
    return {
        "records": total, "sent": len(accepted), "lost": len(accepted - set(kept)),
        "duplicated": sum(n - 1 for n in kept.values() if n > 1),
        "kept_though_not_acknowledged": len(set(kept) - accepted),
        "statuses": dict(statuses), "faults": faults.struck, "send_seconds": round(send_s, 1),
        "kafka_duplicates_on_the_last_broker": sum(n - 1 for n in copies.values() if n > 1),
        "what": "feedback verdicts POSTed to a served demo model (2 ingress replicas, in-memory Tansu, outbox), "
                "consumed by `soay enlarge` into a copy of the dataset",
    }


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True, help="model directory `soay serve --model` takes")
    parser.add_argument("--records", type=int, default=10_000)
    args = parser.parse_args()
    print(json.dumps(run_log_loss(args.model, args.records), indent=2))
