"""The serving log stream against a real Kafka-compatible broker (Tansu on loopback): a durable
outbox on disk, shipped by an idempotent producer.

Records are read back with a plain consumer, and consumed "by the enlargement" with a consumer in
the stream's group that commits. Outage tests start their own broker, stop it by its pid and
restart it on the same port; Tansu keeps nothing across a restart, so whatever is read afterwards
came from the outbox.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.consumer.fetcher import ConsumerRecord
from prometheus_client import CollectorRegistry

from cluster.broker import start_broker
from conftest import ROOT, free_port
from serving.logstream import LogStream, open_log_stream
from serving.outbox import OutboxFull
from soay.logs import OUTBOX_HEADER, OUTBOX_ID_HEADER, Feedback, RequestLog, consumed_records, consumed_topic
from soay.settings import KafkaSettings


def read_until(
    bootstrap: str, topic: str, done: Callable[[list[ConsumerRecord]], bool], timeout: float = 30.0
) -> list[ConsumerRecord]:
    """The records of every partition of `topic` from its start, read until `done` says they are
    all there (or `timeout` ran out: the caller's assertions then say what is missing)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest")
    deadline = time.monotonic() + timeout
    records: list[ConsumerRecord] = []
    try:
        while not consumer.partitions_for_topic(topic) and time.monotonic() < deadline:
            time.sleep(0.2)
        consumer.assign([TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()])
        while not done(records) and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                records.extend(batch)
    finally:
        consumer.close()
    return records


def read_topic(bootstrap: str, topic: str, expected: int) -> list[ConsumerRecord]:
    return read_until(bootstrap, topic, lambda records: len(records) >= expected)


def wait_for(condition, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def kafka_settings(bootstrap: str, **overrides) -> KafkaSettings:
    """Fresh topic names per test: the session broker is shared."""
    suffix = uuid.uuid4().hex[:8]
    topics = {"requests_topic": f"requests.{suffix}", "feedback_topic": f"feedback.{suffix}"}
    return KafkaSettings(bootstrap_servers=bootstrap, **topics, **overrides)


def request_log(n: int) -> RequestLog:
    return RequestLog(
        request_id=f"req-{n}-{uuid.uuid4().hex[:6]}", endpoint="/v1/ask", query=f"question {n}", language="en",
        solution="searchPerson -> getPersonPubs", code="final_result = 1", result=[n], status="ok",
        timings={"plan": 0.1}, models={"soay-planner": "/models/m"},
    )


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


def produced(registry: CollectorRegistry, topic: str) -> float:
    return sample(registry, "soay_log_records_produced_total", topic=topic)


def held(registry: CollectorRegistry) -> float:
    return sample(registry, "soay_log_outbox_records")


def consume_and_acknowledge(bootstrap: str, settings: KafkaSettings, expected: int, timeout: float = 30.0) -> list[ConsumerRecord]:
    """What the enlargement does once a batch is in the dataset: read the requests topic and say
    so on the acknowledgements topic (training/enlarge.py `_acknowledge`)."""
    records = read_topic(bootstrap, settings.requests_topic, expected)
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        for ack in consumed_records(records):
            producer.send(consumed_topic(settings.requests_topic), value=ack.encode())
        producer.flush(timeout=10)
    finally:
        producer.close()
    return records


def ids_of(records: list[ConsumerRecord]) -> set[str]:
    return {RequestLog.decode(r.value).request_id for r in records}


def open_stream(settings: KafkaSettings, tmp_path: Path, registry: CollectorRegistry | None = None) -> tuple[LogStream, CollectorRegistry]:
    registry = registry or CollectorRegistry()
    return LogStream(settings, tmp_path / "outbox" / "requests.sqlite", registry), registry


def test_records_and_feedback_reach_their_topics_keyed_by_request_id_and_leave_the_outbox_once_acknowledged(kafka_broker, tmp_path):
    settings = kafka_settings(kafka_broker.bootstrap)
    stream, registry = open_stream(settings, tmp_path)
    logs = [request_log(n) for n in range(20)]
    feedback = [Feedback(request_id=logs[0].request_id, verdict="bad", comment="wrong year"),
                Feedback(request_id=logs[1].request_id, verdict="good")]
    try:
        for r in logs:
            stream.log_request(r)
        for f in feedback:
            stream.log_feedback(f)
        assert stream.outbox.count() == len(logs) + len(feedback)  # on disk before anything is sent
        got = read_topic(kafka_broker.bootstrap, settings.requests_topic, len(logs))
        got_feedback = read_topic(kafka_broker.bootstrap, settings.feedback_topic, len(feedback))
        assert wait_for(lambda: produced(registry, settings.requests_topic) == len(logs))
        # the in-memory broker is not durable: records Kafka acknowledged stay until the enlargement has them
        time.sleep(3)
        assert stream.outbox.count() == len(logs) + len(feedback) and stream.outbox.count(state=0) == 0
        assert ids_of(consume_and_acknowledge(kafka_broker.bootstrap, settings, len(logs))) == {r.request_id for r in logs}
        assert wait_for(lambda: stream.outbox.count() == len(feedback), timeout=15)  # feedback: not consumed by this group
    finally:
        stream.close()

    by_id = lambda r: r.request_id  # noqa: E731
    assert sorted((RequestLog.decode(m.value) for m in got), key=by_id) == sorted(logs, key=by_id)
    assert all(m.key == RequestLog.decode(m.value).request_id.encode() for m in got)
    assert all(dict(m.headers)[OUTBOX_ID_HEADER].isdigit() and dict(m.headers)[OUTBOX_HEADER] for m in got)
    assert sorted((Feedback.decode(m.value) for m in got_feedback), key=by_id) == feedback
    # the key places a request's record and its feedback on the same partition (both topics have 3)
    partition = {m.key: m.partition for m in got}
    assert all(m.partition == partition[m.key] for m in got_feedback)
    assert produced(registry, settings.feedback_topic) == len(feedback)


def test_with_a_durable_broker_records_leave_the_outbox_when_acknowledged(kafka_broker, tmp_path):
    settings = kafka_settings(kafka_broker.bootstrap, durable_broker=True)
    stream, registry = open_stream(settings, tmp_path)
    try:
        for n in range(10):
            stream.log_request(request_log(n))
        assert wait_for(lambda: stream.outbox.count() == 0, timeout=20)
        assert produced(registry, settings.requests_topic) == 10
    finally:
        stream.close()


def test_broker_down_logging_stays_fast_and_everything_arrives_once_a_broker_answers(tmp_path):
    port = free_port()
    settings = kafka_settings(f"127.0.0.1:{port}")
    stream, registry = open_stream(settings, tmp_path)
    logs = [request_log(n) for n in range(50)]
    try:
        slowest = 0.0
        for record in logs:
            started = time.perf_counter()
            stream.log_request(record)
            slowest = max(slowest, time.perf_counter() - started)
        assert slowest < 0.25  # an fsync'd local commit, never the broker
        assert wait_for(lambda: held(registry) == len(logs), timeout=15)  # refreshed between connection attempts (5 s each)
        broker = start_broker(port=port)
        try:
            got = read_until(broker.bootstrap, settings.requests_topic, lambda rs: ids_of(rs) >= {r.request_id for r in logs})
        finally:
            stream.close()
            broker.stop()
    finally:
        stream.close()
    assert ids_of(got) == {r.request_id for r in logs}


def test_a_broker_restart_loses_nothing_shipped_but_not_consumed(tmp_path):
    """Tansu keeps its log in memory: records it acknowledged and nobody consumed are gone after a
    restart, and the stream sends them again from the outbox (the idempotent producer is refused as
    unknown by the new broker, or the heartbeat's offsets go back)."""
    port = free_port()
    broker = start_broker(port=port)
    settings = kafka_settings(broker.bootstrap)
    stream, registry = open_stream(settings, tmp_path)
    before = [request_log(n) for n in range(30)]
    try:
        for record in before:
            stream.log_request(record)
        assert wait_for(lambda: stream.outbox.count(state=0) == 0, timeout=20)  # all acknowledged
        broker.stop()
        broker = start_broker(port=port)  # empty
        after = [request_log(100 + n) for n in range(5)]
        for record in after:
            stream.log_request(record)
        wanted = {r.request_id for r in before + after}
        got = read_until(broker.bootstrap, settings.requests_topic, lambda rs: ids_of(rs) >= wanted)
        assert sample(registry, "soay_log_records_reshipped_total") >= len(before)
    finally:
        stream.close()
        broker.stop()
    assert ids_of(got) == wanted


def test_a_restart_while_idle_is_noticed_by_the_heartbeat(tmp_path):
    port = free_port()
    broker = start_broker(port=port)
    settings = kafka_settings(broker.bootstrap)
    stream, _ = open_stream(settings, tmp_path)
    logs = [request_log(n) for n in range(10)]
    try:
        for record in logs:
            stream.log_request(record)
        assert wait_for(lambda: stream.outbox.count(state=0) == 0, timeout=20)
        time.sleep(3)  # a heartbeat went out
        broker.stop()
        broker = start_broker(port=port)  # nothing new is logged: only the heartbeat can tell
        got = read_until(broker.bootstrap, settings.requests_topic, lambda rs: ids_of(rs) >= {r.request_id for r in logs})
    finally:
        stream.close()
        broker.stop()
    assert ids_of(got) == {r.request_id for r in logs}


WRITER = """
import sys, time
from pathlib import Path
from prometheus_client import CollectorRegistry
from serving.logstream import LogStream
from soay.logs import RequestLog
from soay.settings import KafkaSettings
settings = KafkaSettings.model_validate_json(sys.argv[1])
stream = LogStream(settings, Path(sys.argv[2]), CollectorRegistry())
n = 0
while True:
    stream.log_request(RequestLog(request_id=f"killed-{n}", endpoint="/v1/ask", query=f"q {n}", status="ok"))
    print(n, flush=True)
    n += 1
    time.sleep(0.01)
"""


def test_a_sigkilled_replica_loses_nothing_another_replica_ships_its_records(kafka_broker, tmp_path):
    """A replica process logs and ships (it holds the outbox's lock), and is SIGKILLed mid-stream:
    every record it had logged is shipped by the replica that takes the lock over."""
    settings = kafka_settings(kafka_broker.bootstrap)
    outbox = tmp_path / "outbox" / "requests.sqlite"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, settings.model_dump_json(), str(outbox)], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True)
    try:
        logged = [writer.stdout.readline() for _ in range(150)]
    finally:
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait(10)
    logged_ids = {f"killed-{n.strip()}" for n in logged if n.strip()}
    stream, registry = open_stream(settings, tmp_path)  # the other replica, on the same outbox
    try:
        assert wait_for(lambda: sample(registry, "soay_log_shipper") == 1, timeout=10)
        got = read_until(kafka_broker.bootstrap, settings.requests_topic, lambda rs: ids_of(rs) >= logged_ids)
    finally:
        stream.close()
    assert ids_of(got) >= logged_ids


def test_a_full_outbox_refuses_records_and_says_so(tmp_path):
    settings = kafka_settings(f"127.0.0.1:{free_port()}", outbox_records=5)  # no broker: nothing drains
    stream, registry = open_stream(settings, tmp_path)
    try:
        for n in range(5):
            stream.log_request(request_log(n))
        try:
            stream.log_request(request_log(5))
        except OutboxFull as exc:
            assert "5 records" in str(exc)
        else:
            raise AssertionError("a sixth record was taken by an outbox of five")
        assert stream.full()
        assert sample(registry, "soay_log_outbox_full") == 1
        assert sample(registry, "soay_log_outbox_refused_total", topic=settings.requests_topic) == 1
    finally:
        stream.close()


def test_log_requests_off_means_no_stream(tmp_path):
    settings = KafkaSettings(bootstrap_servers=f"127.0.0.1:{free_port()}", log_requests=False)
    assert open_log_stream(settings, tmp_path / "outbox.sqlite", CollectorRegistry()) is None


def test_a_record_nobody_acknowledges_is_sent_again_and_forgotten_once_acknowledged(kafka_broker, tmp_path):
    """The enlargement may skip records (its position kept across a broker restart) or lose an
    acknowledgement: after `outbox_resend_s` the record goes out again; acknowledged, it is gone."""
    settings = kafka_settings(kafka_broker.bootstrap, outbox_resend_s=2.0)
    stream, registry = open_stream(settings, tmp_path)
    record = request_log(0)
    try:
        stream.log_request(record)
        copies = lambda: len(read_until(kafka_broker.bootstrap, settings.requests_topic, lambda rs: len(rs) >= 2, timeout=2))  # noqa: E731
        assert wait_for(lambda: copies() >= 2, timeout=30)  # sent, not acknowledged, sent again
        assert stream.outbox.count() == 1
        consume_and_acknowledge(kafka_broker.bootstrap, settings, 1)
        assert wait_for(lambda: stream.outbox.count() == 0, timeout=15)
    finally:
        stream.close()
