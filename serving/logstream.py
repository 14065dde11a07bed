"""The serving side of the log stream: every served request and every feedback becomes a Kafka record, and none is lost.

`log_request` and `log_feedback` commit the record to the node's durable outbox (serving/outbox.py)
and return; the request is answered only after that. Nothing on the request path waits on the
broker. One replica per node ships the outbox to Kafka: each replica's thread tries an exclusive
lock on the outbox (`flock`, released by the kernel when its holder dies, so a SIGKILLed shipper
is replaced within a second by another replica or by its own replacement).

The shipper's producer is idempotent (`enable_idempotence`): a retried batch is written once.
That is also how it learns that the embedded in-memory broker restarted and lost its log: the
next send of its producer is refused as UnknownProducerId. It then puts every shipped-but-not-
consumed record back to pending and starts a new producer; a log whose offsets went backwards says
the same, and so does a heartbeat (a record on `<requests_topic>.heartbeat`, whose offsets only
grow on a broker that kept its log), which finds a restart while nothing else is sent. With the
in-memory broker a record leaves the outbox only when the enlargement said, on
`<requests_topic>.consumed`, that it is in the dataset (soay/logs.py `Consumed`); a record shipped
`kafka.outbox_resend_s` ago and not acknowledged is sent again. With `kafka.durable_broker` (a
replicated Kafka cluster) the acknowledgement of the broker is enough.

Records reach Kafka at least once; the enlargement de-duplicates by request id (the message key,
so a request's record and its feedback share a partition) and by feedback identity, so the
dataset holds each once.

Everything that can block lives on the shipper thread: kafka-python's `KafkaProducer` constructor
bootstraps eagerly (blocking up to `bootstrap_timeout_ms`) and `send` can block up to
`max_block_ms` on metadata. With no broker the stream says so once (`soay serve` without `soay
broker` is a normal way to try the service); kafka-python logs every refused connection attempt,
several a second, so its loggers are raised to CRITICAL in a process that opens a stream.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import time
from pathlib import Path

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError, OutOfOrderSequenceNumberError, UnknownProducerIdError
from prometheus_client import CollectorRegistry, Counter, Gauge

from cluster.broker import ensure_topics
from serving.outbox import Outbox, OutboxFull, OutboxRecord, Shipped
from soay.logs import OUTBOX_HEADER, OUTBOX_ID_HEADER, Consumed, Feedback, RequestLog, consumed_topic
from soay.settings import KafkaSettings

log = logging.getLogger(__name__)

BATCH_RECORDS = 500
"""Records the shipper hands to the producer at once before waiting for their acknowledgements."""
REQUEST_TIMEOUT_MS = 3_000
DELIVERY_TIMEOUT_MS = 6_000
BLOCK_MS = 5_000
"""Bound on each blocking call of the shipper: the producer's bootstrap and metadata waits, the topic check."""
POLL_S = 0.2
"""How often an idle shipper looks for new records."""
RETRY_S = 1.0
"""Wait before the next attempt after the broker could not be reached or a delivery failed."""
RELEASE_S = 2.0
"""How often, with the in-memory broker, the shipper reads the enlargement's acknowledgements."""
LOCK_S = 1.0
"""How often a replica that does not ship tries to become the shipper."""
KAFKA_LOGGER = "kafka"
LOG_LOST = (UnknownProducerIdError, OutOfOrderSequenceNumberError)
"""What an idempotent producer hears from a broker that no longer knows it: the log was lost."""


class LogStreamMetrics:
    """The stream's Prometheus series. The outbox gauges read one shared file, so every replica
    reports the same value (`livemax` across the replicas' live processes)."""

    def __init__(self, registry: CollectorRegistry, topics: list[str]) -> None:
        def per_topic(name: str, doc: str) -> Counter:
            return Counter(name, doc, ["topic"], registry=registry)

        self.produced = per_topic("soay_log_records_produced", "Records acknowledged by Kafka")
        self.send_errors = per_topic("soay_log_send_errors", "Deliveries that failed (the record stays in the outbox and is sent again)")
        self.refused = per_topic("soay_log_outbox_refused", "Records refused because the outbox was full (their requests were answered 503)")
        self.reshipped = Counter("soay_log_records_reshipped", "Shipped records sent again because the broker lost its log", registry=registry)
        self.held = Gauge("soay_log_outbox_records", "Records in the outbox (pending or shipped and not yet consumed)", registry=registry, multiprocess_mode="livemax")
        self.pending = Gauge("soay_log_outbox_pending", "Records in the outbox Kafka has not acknowledged", registry=registry, multiprocess_mode="livemax")
        self.full = Gauge("soay_log_outbox_full", "1 while the outbox is full and questions are refused", registry=registry, multiprocess_mode="livemax")
        self.shipper = Gauge("soay_log_shipper", "1 in the replica that ships the node's outbox", registry=registry, multiprocess_mode="livesum")
        self.connections = Gauge("soay_log_broker_connections", "Open connections of the shipper's producer", registry=registry, multiprocess_mode="livesum")
        for topic in topics:  # every series shows from the start, at 0
            for counter in (self.produced, self.send_errors, self.refused):
                counter.labels(topic)


class LogStream:
    """The request log of one ingress replica: a durable outbox, and (in one replica) its shipper."""

    def __init__(self, settings: KafkaSettings, outbox_path: Path, registry: CollectorRegistry) -> None:
        self.settings = settings
        self.topics = [settings.requests_topic, settings.feedback_topic]
        self.heartbeat_topic = f"{settings.requests_topic}.heartbeat"
        self.consumed_topic = consumed_topic(settings.requests_topic)
        self.metrics = LogStreamMetrics(registry, self.topics)
        self.outbox = Outbox(outbox_path, settings.outbox_records)
        self._lock_path = outbox_path.with_suffix(".ship-lock")
        self._lock_fd: int | None = None
        self._stop = threading.Event()
        self._producer: KafkaProducer | None = None
        self._acks: KafkaConsumer | None = None
        self._reachable = True
        self._ever_connected = False
        self._was_full = False
        self._next_release = 0.0
        self._heartbeat_offset = -1
        logging.getLogger(KAFKA_LOGGER).setLevel(logging.CRITICAL)  # see the module's docstring
        self._thread = threading.Thread(target=self._run, name="soay-logstream", daemon=True)
        self._thread.start()

    # --- the request path: a local fsync'd commit, never the broker --------------------------

    def log_request(self, record: RequestLog) -> None:
        """Commit a served request's record; OutboxFull when the outbox cannot take it."""
        self._put(self.settings.requests_topic, record.request_id, record)

    def log_feedback(self, feedback: Feedback) -> None:
        """Commit a client's feedback; OutboxFull when the outbox cannot take it."""
        self._put(self.settings.feedback_topic, feedback.request_id, feedback)

    def full(self) -> bool:
        """Whether new records would be refused: the service then refuses the questions that make
        them. Read on every question, so it is the shipper thread's last count (refreshed at least
        once a second) rather than a COUNT on the event loop; `log_request` itself checks exactly."""
        return self._was_full

    def _put(self, topic: str, key: str, record: RequestLog | Feedback) -> None:
        try:
            self.outbox.put(topic, key.encode(), record.encode())
        except OutboxFull:
            self.metrics.refused.labels(topic).inc()
            self._note_full(True)
            raise

    def _note_full(self, full: bool) -> None:
        if full and not self._was_full:
            log.warning("request log outbox full (%d records not yet safe in Kafka at %s): questions are refused with 503 "
                        "until the shipper drains it%s", self.settings.outbox_records, self.settings.bootstrap_servers,
                        "" if self.settings.durable_broker else " (with the in-memory broker, records leave once `soay enlarge` consumed them)")
        elif self._was_full and not full:
            log.warning("request log outbox has room again")
        self._was_full = full
        self.metrics.full.set(int(full))

    def close(self) -> None:
        """Stop shipping; what is not yet in Kafka stays in the outbox for the next shipper. A
        second call does nothing."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join(BLOCK_MS / 1000 * 3)
        if self._producer is not None:
            self._producer.close(timeout=1.0)
        if self._acks is not None:
            self._acks.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
        self.outbox.close()

    # --- the shipper thread -------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            self._refresh_gauges()
            if not self._hold_lock():
                self._stop.wait(LOCK_S)
                continue
            if self._producer is None and not self._connect():
                self._stop.wait(RETRY_S)
                continue
            batch = self.outbox.pending(BATCH_RECORDS)
            if batch and not self._ship(batch):
                self._stop.wait(RETRY_S)
            elif not self.settings.durable_broker and time.monotonic() >= self._next_release:
                self._release()
                self._next_release = time.monotonic() + RELEASE_S
            elif not batch:
                self._stop.wait(POLL_S)

    def _refresh_gauges(self) -> None:
        held, pending = self.outbox.count(), self.outbox.count(state=0)
        self.metrics.held.set(held)
        self.metrics.pending.set(pending)
        self._note_full(held >= self.settings.outbox_records)
        self.metrics.shipper.set(int(self._lock_fd is not None))
        connections = self._producer.metrics()["producer-metrics"]["connection-count"] if self._producer else 0
        self.metrics.connections.set(int(connections))

    def _hold_lock(self) -> bool:
        """Whether this replica ships: it holds the outbox's lock, or takes it now."""
        if self._lock_fd is not None:
            return True
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._lock_fd = fd
        log.info("log stream: this replica ships the outbox %s (%d records held)", self.outbox.path, self.outbox.count())
        return True

    def _connect(self) -> bool:
        """Create the topics if missing, then an idempotent producer; False while no broker answers."""
        kafka = self.settings
        try:
            ensure_topics(kafka.bootstrap_servers, self.topics, kafka.partitions, wait_s=BLOCK_MS / 1000)
            ensure_topics(kafka.bootstrap_servers, [self.heartbeat_topic, self.consumed_topic], 1, wait_s=BLOCK_MS / 1000)
            self._producer = KafkaProducer(
                bootstrap_servers=kafka.bootstrap_servers, acks="all", enable_idempotence=True,
                request_timeout_ms=REQUEST_TIMEOUT_MS, delivery_timeout_ms=DELIVERY_TIMEOUT_MS,
                max_block_ms=BLOCK_MS, bootstrap_timeout_ms=BLOCK_MS, reconnect_backoff_max_ms=int(RETRY_S * 1000),
                allow_auto_create_topics=False,
            )
        except Exception as exc:  # noqa: BLE001 - whatever the broker does, the thread lives on and retries
            if self._reachable and not self._ever_connected:
                log.warning("request log not shipped yet: no broker at %s; start `soay broker` or set kafka.bootstrap_servers "
                            "(records wait in %s, up to %d, and are sent once a broker answers)",
                            kafka.bootstrap_servers, self.outbox.path, kafka.outbox_records)
            elif self._reachable:
                log.warning("log stream: Kafka at %s unreachable (%s); records wait in the outbox", kafka.bootstrap_servers, exc)
            self._reachable = False
            return False
        if not self._reachable:
            log.warning("log stream: Kafka at %s reachable%s", kafka.bootstrap_servers, " again" if self._ever_connected else "")
        self._reachable = self._ever_connected = True
        return True

    def _drop_producer(self) -> None:
        """Forget the producer (it is re-created, with a new producer id, on the next attempt)."""
        if self._producer is not None:
            try:
                self._producer.close(timeout=0)
            except KafkaError:
                pass
        self._producer = None

    def _ship(self, batch: list[OutboxRecord]) -> bool:
        """Send a batch, wait for its acknowledgements and mark what was acknowledged; False when
        some of it must be sent again later."""
        futures, failure = [], None
        for record in batch:
            try:
                headers = [(OUTBOX_HEADER, self.outbox.uid.encode()), (OUTBOX_ID_HEADER, str(record.id).encode())]
                futures.append((record, self._producer.send(record.topic, value=record.value, key=record.key, headers=headers)))
            except Exception as exc:  # noqa: BLE001 - e.g. no metadata within max_block_ms: the broker is away (or lost the topic)
                self.metrics.send_errors.labels(record.topic).inc()
                failure = exc
                break
        acked = []
        for record, future in futures:
            try:
                meta = future.get(timeout=DELIVERY_TIMEOUT_MS / 1000 + 1.0)
            except Exception as exc:  # noqa: BLE001 - expired, refused or not answered: sent again later
                self.metrics.send_errors.labels(record.topic).inc()
                failure = exc
                continue
            acked.append(Shipped(record.id, meta.partition, meta.offset))
            self.metrics.produced.labels(record.topic).inc()
        if acked and not self.settings.durable_broker and self._offsets_went_back(batch, acked):
            self._lost("its offsets went back")
        self.outbox.shipped(acked, keep=not self.settings.durable_broker)
        if failure is not None:
            self._failed(failure, len(futures) - len(acked))
        return len(acked) == len(batch)

    def _offsets_went_back(self, batch: list[OutboxRecord], acked: list[Shipped]) -> bool:
        """A partition that acknowledged an offset at or below one it had acknowledged before lost its log."""
        topics = {r.id: r.topic for r in batch}
        known = self.outbox.shipped_partitions()
        return any(s.offset <= known.get((topics[s.id], s.partition), -1) for s in acked)

    def _failed(self, error: Exception, count: int) -> None:
        if isinstance(error, LOG_LOST):
            self._lost(f"it no longer knows this producer ({type(error).__name__})")
        else:
            log.warning("log stream: %d records not acknowledged (%s); they stay in the outbox", count, error)
        self._drop_producer()  # a new one checks the topics first: a restarted broker may have lost them

    def _lost(self, why: str) -> None:
        reshipped = self.outbox.reship()
        self.metrics.reshipped.inc(reshipped)
        log.warning("log stream: the broker at %s lost its log (%s): %d records shipped and not yet consumed are sent again",
                    self.settings.bootstrap_servers, why, reshipped)

    def _release(self) -> None:
        """With the in-memory broker: forget the records the enlargement acknowledged, after a
        heartbeat proved that the broker is the one they were shipped to; send again those shipped
        long ago and never acknowledged."""
        if not self.outbox.count(state=1):
            return
        try:
            beat = self._producer.send(self.heartbeat_topic, value=b"").get(timeout=DELIVERY_TIMEOUT_MS / 1000 + 1.0)
        except Exception as exc:  # noqa: BLE001 - a lost log is handled; anything else waits for the next round
            self._failed(exc, 0)
            return
        went_back, self._heartbeat_offset = beat.offset <= self._heartbeat_offset, beat.offset
        if went_back:  # a producer created after an outage is new to any broker: the heartbeat's offsets tell
            self._lost("the heartbeat's offsets went back")
            return
        try:
            forgotten = self.outbox.forget([i for ack in self._acknowledgements() if ack.outbox == self.outbox.uid for i in ack.ids])
        except Exception as exc:  # noqa: BLE001 - read again next round
            log.debug("log stream: no acknowledgements read (%s)", exc)
            forgotten = 0
        stale = self.outbox.reship_stale(self.settings.outbox_resend_s)
        if stale:
            log.warning("log stream: %d records shipped %.0f s ago were not acknowledged by the enlargement: sent again",
                        stale, self.settings.outbox_resend_s)
        log.debug("log stream: %d records acknowledged and forgotten", forgotten)

    def _acknowledgements(self) -> list[Consumed]:
        """Every acknowledgement on the broker, read from the start each round: a position kept
        across a restart of the in-memory broker would skip the start of its new log (the topic
        holds one small record per enlargement batch, and forgetting twice is harmless)."""
        if self._acks is None:
            self._acks = KafkaConsumer(bootstrap_servers=self.settings.bootstrap_servers, enable_auto_commit=False,
                                       allow_auto_create_topics=False, auto_offset_reset="earliest")
            self._acks.assign([TopicPartition(self.consumed_topic, 0)])
        self._acks.seek_to_beginning()
        acks = []
        while batch := self._acks.poll(timeout_ms=int(POLL_S * 1000)):
            for messages in batch.values():
                for message in messages:
                    try:
                        acks.append(Consumed.decode(message.value))
                    except ValueError:
                        log.warning("log stream: an acknowledgement that is not one: %r", message.value[:200])
        return acks


def open_log_stream(settings: KafkaSettings, outbox_path: Path, registry: CollectorRegistry) -> LogStream | None:
    """The stream, or None when `kafka.log_requests` is off: then nothing is kept and nothing
    connects to a broker."""
    return LogStream(settings, outbox_path, registry) if settings.log_requests else None
