"""The serving side of the log stream: every served request and every feedback becomes a Kafka record.

Serving must never wait on, or fail because of, the broker. `log_request` and `log_feedback` only
append to a bounded in-process buffer (`kafka.buffer_records`) and return at once; beyond the bound
a record is dropped and counted. A background thread drains the buffer into Kafka with kafka-python
(`acks="all"`), and a record whose delivery fails goes back to the buffer and is sent again once
the broker answers: nothing but the overflow is lost. Delivery is at-least-once; the consumer
de-duplicates by request id, which is also the message key, so a request's record and its feedback
share a partition.

Everything that can block lives on that thread: kafka-python's `KafkaProducer` constructor
bootstraps eagerly (it blocks up to `bootstrap_timeout_ms`, then raises, when no broker answers) and
`send` can block up to `max_block_ms` on metadata. The thread also creates the topics when it
connects, and again after the producer lost its connections: a restarted broker may have lost them
(the embedded Tansu keeps topics in memory and, without them, acknowledges records it never keeps).
The producer is not idempotent: a restarted broker forgets producer ids and refuses an idempotent
producer's next batches (UnknownProducerId), and the consumer's de-duplication makes it unneeded.

With no broker the stream says so once (`soay serve` without `soay broker` is a normal way to try the
service) and is quiet after that: kafka-python logs every refused connection attempt, several a
second, so its loggers are raised to CRITICAL in a process that opens a stream; the stream's own
lines (no broker, reachable again, records back to the buffer) and its counters say what matters.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from dataclasses import dataclass

from kafka import KafkaProducer
from kafka.errors import KafkaError, MessageSizeTooLargeError
from prometheus_client import CollectorRegistry, Counter, Gauge

from cluster.broker import ensure_topics
from soay.logs import Feedback, RequestLog
from soay.settings import KafkaSettings

log = logging.getLogger(__name__)

BATCH_RECORDS = 500
"""Records the drain thread hands to the producer at once before waiting for their acknowledgements."""
REQUEST_TIMEOUT_MS = 3_000
DELIVERY_TIMEOUT_MS = 6_000
"""How long the producer keeps a record (retries included) before giving it back to the buffer; it
bounds how late an outage is noticed for records already handed over."""
BLOCK_MS = 5_000
"""Bound on each blocking call of the drain thread: the producer's bootstrap and metadata waits, the
topic check's wait for a broker."""
POLL_S = 0.2
"""How often the idle drain thread looks at the producer's connections."""
RETRY_S = 1.0
"""Wait before the next attempt after the broker could not be reached or a delivery failed."""
CLOSE_TIMEOUT_S = 5.0
KAFKA_LOGGER = "kafka"
"""kafka-python's logger tree (kafka.net.manager, kafka.net.connection, kafka.admin, ...)."""


@dataclass(frozen=True)
class Message:
    """One record as Kafka takes it: the key is the request id."""

    topic: str
    key: bytes
    value: bytes


class LogStreamMetrics:
    """The stream's Prometheus series, in the registry of the server that owns it."""

    def __init__(self, registry: CollectorRegistry, topics: list[str]) -> None:
        def per_topic(name: str, doc: str) -> Counter:
            return Counter(name, doc, ["topic"], registry=registry)

        self.produced = per_topic("soay_log_records_produced", "Records acknowledged by Kafka")
        self.dropped = per_topic("soay_log_records_dropped", "Records dropped (buffer full, or refused by Kafka)")
        self.send_errors = per_topic("soay_log_send_errors", "Records whose delivery failed (back to the buffer)")
        self.buffered = Gauge("soay_log_records_buffered", "Records not yet acknowledged by Kafka", registry=registry)
        self.connections = Gauge("soay_log_broker_connections", "Open connections of the producer", registry=registry)
        for topic in topics:  # every series shows from the start, at 0
            for counter in (self.produced, self.dropped, self.send_errors):
                counter.labels(topic)


class LogStream:
    """A non-blocking Kafka producer of RequestLog and Feedback records with a bounded buffer."""

    def __init__(self, settings: KafkaSettings, registry: CollectorRegistry) -> None:
        self.settings = settings
        self.topics = [settings.requests_topic, settings.feedback_topic]
        self.metrics = LogStreamMetrics(registry, self.topics)
        self._queue: deque[Message] = deque()
        self._in_flight = 0
        self._cond = threading.Condition()
        self._closing = False
        self._deadline = float("inf")
        self._producer: KafkaProducer | None = None
        self._topics_ready = False
        self._connections = 0
        self._reachable = True
        self._ever_connected = False
        logging.getLogger(KAFKA_LOGGER).setLevel(logging.CRITICAL)  # see the module's docstring
        self.metrics.buffered.set_function(self.pending)
        self.metrics.connections.set_function(lambda: self._connections)
        self._thread = threading.Thread(target=self._run, name="soay-logstream", daemon=True)
        self._thread.start()

    # --- the request path: never blocks on the broker --------------------------------------

    def log_request(self, record: RequestLog) -> bool:
        """Queue a served request's record; False when it was dropped."""
        return self._submit(self.settings.requests_topic, record.request_id, record)

    def log_feedback(self, feedback: Feedback) -> bool:
        """Queue a client's feedback; False when it was dropped."""
        return self._submit(self.settings.feedback_topic, feedback.request_id, feedback)

    def pending(self) -> int:
        """Records submitted and not yet acknowledged (buffered or being delivered)."""
        return len(self._queue) + self._in_flight

    def _submit(self, topic: str, key: str, record: RequestLog | Feedback) -> bool:
        try:
            value = record.encode()
        except ValueError as exc:  # a result JSON cannot hold: the request is answered all the same
            self.metrics.dropped.labels(topic).inc()
            log.warning("log stream: dropped a record that does not serialise: %s", exc)
            return False
        with self._cond:
            if self._closing or self.pending() >= self.settings.buffer_records:
                self.metrics.dropped.labels(topic).inc()
                return False
            self._queue.append(Message(topic, key.encode(), value))
            self._cond.notify()
        return True

    def close(self, timeout: float = CLOSE_TIMEOUT_S) -> None:
        """Deliver what is buffered for at most `timeout` seconds, then stop; a replica calls it
        when it shuts down. Records still buffered after that are lost (and logged)."""
        with self._cond:
            self._closing = True
            self._deadline = time.monotonic() + timeout
            self._cond.notify()
        self._thread.join(timeout + 1.0)
        if self.pending():
            log.warning("log stream closed with %d records not delivered", self.pending())

    # --- the drain thread ---------------------------------------------------------------------

    def _run(self) -> None:
        while not self._finished():
            batch = self._take()
            self._watch_connections()  # just before sending: a connection lost by now is seen first
            if not (self._producer and self._topics_ready) and not self._connect():
                self._give_back(batch, wait=True)
            elif batch:
                failed = self._deliver(self._producer, batch)
                self._give_back(failed, wait=bool(failed))
        if self._producer is not None:
            try:
                self._producer.close(timeout=max(0.0, self._deadline - time.monotonic()))
            except KafkaError as exc:  # kafka-python raises when its own buffer does not empty in time
                log.warning("log stream: the producer closed with records unsent: %s", exc)

    def _finished(self) -> bool:
        with self._cond:
            return self._closing and (not self._queue or time.monotonic() >= self._deadline)

    def _watch_connections(self) -> None:
        """Losing every connection may mean the broker restarted: topics are checked again before
        the next record goes out."""
        count = int(self._producer.metrics()["producer-metrics"]["connection-count"]) if self._producer else 0
        if self._connections and not count:
            self._topics_ready = False
        self._connections = count

    def _connect(self) -> bool:
        """Create the topics if missing, then the producer; False while no broker answers."""
        try:
            kafka = self.settings
            ensure_topics(kafka.bootstrap_servers, self.topics, kafka.partitions, wait_s=BLOCK_MS / 1000)
            self._topics_ready = True
            if self._producer is None:
                self._producer = KafkaProducer(
                    bootstrap_servers=kafka.bootstrap_servers, acks="all", retries=5, enable_idempotence=False,
                    request_timeout_ms=REQUEST_TIMEOUT_MS, delivery_timeout_ms=DELIVERY_TIMEOUT_MS,
                    max_block_ms=BLOCK_MS, bootstrap_timeout_ms=BLOCK_MS, reconnect_backoff_max_ms=int(RETRY_S * 1000),
                    allow_auto_create_topics=False,
                )
        except Exception as exc:  # noqa: BLE001 - whatever the broker does, the thread lives on and retries
            if self._reachable and not self._ever_connected:
                log.warning("request log disabled: no broker at %s; start `soay broker` or set kafka.bootstrap_servers "
                            "(up to %d records wait and are sent once a broker answers; beyond that they are dropped "
                            "and counted in soay_log_records_dropped)", self.settings.bootstrap_servers, self.settings.buffer_records)
            elif self._reachable:
                log.warning("log stream: Kafka at %s unreachable (%s); buffering up to %d records",
                            self.settings.bootstrap_servers, exc, self.settings.buffer_records)
            self._reachable = False
            return False
        if not self._reachable:
            log.warning("log stream: Kafka at %s reachable%s", self.settings.bootstrap_servers, " again" if self._ever_connected else "")
        self._reachable = self._ever_connected = True
        return True

    def _take(self) -> list[Message]:
        """The next records to send (waiting up to POLL_S for some); they count as pending until
        given back or acknowledged."""
        with self._cond:
            if not self._queue and not self._closing:
                self._cond.wait(POLL_S)
            batch = [self._queue.popleft() for _ in range(min(BATCH_RECORDS, len(self._queue)))]
            self._in_flight = len(batch)
        return batch

    def _give_back(self, records: list[Message], wait: bool) -> None:
        """Put unsent records back at the head of the buffer; `wait` pauses RETRY_S (close wakes it)."""
        with self._cond:
            self._queue.extendleft(reversed(records))
            self._in_flight = 0
            if wait:
                self._cond.wait(RETRY_S)

    def _deliver(self, producer: KafkaProducer, batch: list[Message]) -> list[Message]:
        """Send a batch and wait for its acknowledgements; returns the records to send again."""
        sent, failed, error = [], [], None
        for message in batch:
            try:
                sent.append((message, producer.send(message.topic, value=message.value, key=message.key)))
            except MessageSizeTooLargeError as exc:  # sending it again cannot help
                self.metrics.dropped.labels(message.topic).inc()
                log.warning("log stream: dropped a record of %d bytes: %s", len(message.value), exc)
            except Exception as exc:  # noqa: BLE001 - e.g. no metadata within max_block_ms: the broker is away
                failed.append(message)
                error = exc
        deadline = time.monotonic() + DELIVERY_TIMEOUT_MS / 1000 + 1.0
        for message, future in sent:
            try:
                future.get(timeout=max(0.0, deadline - time.monotonic()))
            except Exception as exc:  # noqa: BLE001 - expired, refused or not answered: it goes back to the buffer
                failed.append(message)
                error = exc
            else:
                self.metrics.produced.labels(message.topic).inc()
        for message in failed:
            self.metrics.send_errors.labels(message.topic).inc()
        if failed:
            log.warning("log stream: %d records back to the buffer (%s)", len(failed), error)
            self._topics_ready = False
        return failed


def open_log_stream(settings: KafkaSettings, registry: CollectorRegistry) -> LogStream | None:
    """The stream, or None when `kafka.log_requests` is off: then nothing is produced and nothing
    connects to a broker."""
    return LogStream(settings, registry) if settings.log_requests else None
