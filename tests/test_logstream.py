"""The serving log stream against a real Kafka-compatible broker (Tansu on loopback).

Records are read back with a plain consumer. Outage tests start their own broker, stop it by its
pid and restart it on the same port; Tansu keeps nothing across a restart, so whatever is read
afterwards came from the stream's buffer.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Callable

from kafka import KafkaConsumer, TopicPartition
from kafka.consumer.fetcher import ConsumerRecord
from prometheus_client import CollectorRegistry

from cluster.broker import start_broker
from conftest import free_port
from serving.logstream import LogStream, open_log_stream
from soay.logs import Feedback, RequestLog
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


def test_records_and_feedback_reach_their_topics_keyed_by_request_id(kafka_broker):
    settings, registry = kafka_settings(kafka_broker.bootstrap), CollectorRegistry()
    stream = LogStream(settings, registry)
    logs = [request_log(n) for n in range(20)]
    feedback = [Feedback(request_id=logs[0].request_id, verdict="bad", comment="wrong year"),
                Feedback(request_id=logs[1].request_id, verdict="good")]
    try:
        assert all(stream.log_request(r) for r in logs)
        assert all(stream.log_feedback(f) for f in feedback)
        got = read_topic(kafka_broker.bootstrap, settings.requests_topic, len(logs))
        got_feedback = read_topic(kafka_broker.bootstrap, settings.feedback_topic, len(feedback))
        assert wait_for(lambda: produced(registry, settings.requests_topic) == len(logs))
    finally:
        stream.close()

    by_id = lambda r: r.request_id  # noqa: E731
    assert sorted((RequestLog.decode(m.value) for m in got), key=by_id) == sorted(logs, key=by_id)
    assert all(m.key == RequestLog.decode(m.value).request_id.encode() for m in got)
    assert sorted((Feedback.decode(m.value) for m in got_feedback), key=by_id) == feedback
    # the key places a request's record and its feedback on the same partition (both topics have 3)
    partition = {m.key: m.partition for m in got}
    assert all(m.partition == partition[m.key] for m in got_feedback)
    assert produced(registry, settings.feedback_topic) == len(feedback)
    assert sample(registry, "soay_log_records_buffered") == 0
    assert sample(registry, "soay_log_records_dropped_total", topic=settings.requests_topic) == 0


def test_broker_down_submit_stays_fast_overflow_is_dropped_and_the_rest_arrives_after_restart():
    port = free_port()
    broker = start_broker(port=port)
    capacity, excess = 8, 5
    settings, registry = kafka_settings(broker.bootstrap, buffer_records=capacity), CollectorRegistry()
    stream = LogStream(settings, registry)
    try:
        assert all(stream.log_request(request_log(n)) for n in range(3))
        assert wait_for(lambda: produced(registry, settings.requests_topic) == 3)
        broker.stop()
        # the stream has seen its connection go (a restarted Tansu has no topics: they are made again)
        assert wait_for(lambda: sample(registry, "soay_log_broker_connections") == 0, timeout=10)

        logs = [request_log(n) for n in range(capacity + excess)]
        accepted, slowest = [], 0.0
        for record in logs:
            started = time.perf_counter()
            accepted.append(stream.log_request(record))
            slowest = max(slowest, time.perf_counter() - started)
        assert slowest < 0.05
        assert accepted == [True] * capacity + [False] * excess
        assert sample(registry, "soay_log_records_buffered") == capacity
        assert sample(registry, "soay_log_records_dropped_total", topic=settings.requests_topic) == excess
        time.sleep(1.0)  # still down: nothing leaves the buffer, nothing more is dropped
        assert sample(registry, "soay_log_records_buffered") == capacity
        assert produced(registry, settings.requests_topic) == 3

        broker = start_broker(port=port)
        got = read_topic(broker.bootstrap, settings.requests_topic, capacity)
        assert wait_for(lambda: sample(registry, "soay_log_records_buffered") == 0)
    finally:
        stream.close()
        broker.stop()

    # at-least-once: a record may come twice, never not at all
    assert {RequestLog.decode(m.value).request_id for m in got} == {r.request_id for r in logs[:capacity]}
    assert produced(registry, settings.requests_topic) >= 3 + capacity
    assert sample(registry, "soay_log_records_dropped_total", topic=settings.requests_topic) == excess


def test_slow_broker_records_that_time_out_go_back_to_the_buffer_and_arrive_later():
    """A paused broker keeps its connections and answers nothing: deliveries expire, the records
    go back to the buffer, and arrive once the broker answers again."""
    broker = start_broker(port=free_port())
    settings, registry = kafka_settings(broker.bootstrap), CollectorRegistry()
    stream = LogStream(settings, registry)
    errors = lambda: sample(registry, "soay_log_send_errors_total", topic=settings.requests_topic)  # noqa: E731
    try:
        stream.log_request(request_log(0))
        assert wait_for(lambda: produced(registry, settings.requests_topic) == 1)
        os.kill(broker.pid, signal.SIGSTOP)
        logs = [request_log(n) for n in range(5)]
        started = time.perf_counter()
        assert all(stream.log_request(r) for r in logs)
        assert time.perf_counter() - started < 0.25
        assert wait_for(lambda: errors() >= len(logs), timeout=20)
        assert sample(registry, "soay_log_records_buffered") == len(logs)
        os.kill(broker.pid, signal.SIGCONT)
        got = read_topic(broker.bootstrap, settings.requests_topic, 1 + len(logs))
    finally:
        os.kill(broker.pid, signal.SIGCONT)
        stream.close()
        broker.stop()
    assert {r.request_id for r in logs} <= {RequestLog.decode(m.value).request_id for m in got}


def test_close_delivers_the_buffer_and_is_bounded_when_the_broker_is_down(kafka_broker):
    settings = kafka_settings(kafka_broker.bootstrap)
    stream = LogStream(settings, CollectorRegistry())
    logs = [request_log(n) for n in range(5)]
    for record in logs:
        stream.log_request(record)
    stream.close()
    got = read_topic(kafka_broker.bootstrap, settings.requests_topic, len(logs))
    assert {RequestLog.decode(m.value).request_id for m in got} == {r.request_id for r in logs}
    assert not stream.log_request(request_log(9))  # a closed stream takes nothing more

    nobody = kafka_settings(f"127.0.0.1:{free_port()}")  # no broker listens there
    stream = LogStream(nobody, CollectorRegistry())
    stream.log_request(request_log(0))
    started = time.perf_counter()
    stream.close(timeout=1.0)
    assert time.perf_counter() - started < 3.0
    assert stream.pending() == 1


def test_log_requests_off_means_no_stream():
    settings = KafkaSettings(bootstrap_servers=f"127.0.0.1:{free_port()}", log_requests=False)
    assert open_log_stream(settings, CollectorRegistry()) is None
