#!/usr/bin/env python3
"""Compatibility-matrix driver for the Python clients: one code path, three adapters.

    python py_driver.py --lib confluent|kafka-python|odradek ACTION --bootstrap HOST:PORT [...]

`--lib confluent` is confluent-kafka (librdkafka), `kafka-python` is kafka-python, `odradek` is
Odradek's Python package (confluent-kafka's API). The actions and their output are the driver
protocol described in tests/compat/README.md ("Drivers"): the last stdout line is one JSON object
{"ok": bool, "error": str|null, "detail": {...}, "notes": [...]}; `member` also prints event lines
before it.
"""
import argparse
import concurrent.futures
import json
import os
import sys
import threading
import time
import traceback

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


# ---- the shared data set (same definition in every driver; see README "Data set") ----

def rec_key(i):
    return None if i % 5 == 4 else b"k%d" % i


def rec_value(i):
    if i % 11 == 10 and i % 5 != 4:  # never key and value both null (kafka-python refuses that)
        return None
    return bytes((i * 31 + j) % 256 for j in range(i % 64)) + b"#%d" % i


def rec_headers(i):
    if i % 3 == 2:
        return []
    return [("h", b"x%d" % i), ("h", b"dup"), ("empty", b"")]


def describe(key, value, headers):
    h = [(k, None if v is None else v.hex()) for k, v in headers]
    return "key=%r value=%s headers=%r" % (
        None if key is None else key, None if value is None else value.hex()[:40], h)


def compare_record(i, key, value, headers):
    """None if the record read at position i is record i of the data set, else why not."""
    want = (rec_key(i), rec_value(i), rec_headers(i))
    got = (key, value, list(headers))
    if got != want:
        return "record %d: got %s, want %s" % (i, describe(*got), describe(*want))
    return None


class Failure(Exception):
    pass


def deadline_after(seconds):
    return time.monotonic() + seconds


def left(deadline):
    return deadline - time.monotonic()


STEP = ["start"]


def step(name):
    """Names what the driver is doing, for the report if the deadline passes in the middle of it."""
    STEP[0] = name


def watchdog(seconds):
    def fire():
        emit({"ok": False, "error": "timeout (driver deadline %.0f s) during: %s%s" % (seconds, STEP[0], last_error()),
              "detail": {}})
        os._exit(3)
    t = threading.Timer(seconds, fire)
    t.daemon = True
    t.start()


LAST_ERROR = [None]


def note_error(msg):
    """The client's last reported error (librdkafka's error_cb, kafka-python's log), for the report:
    a failed TLS handshake or authentication otherwise shows only as a timeout."""
    LAST_ERROR[0] = str(msg)[:300]


def last_error():
    return " (last client error: %s)" % LAST_ERROR[0] if LAST_ERROR[0] else ""


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


# ---- security settings (--security FILE) ----

def read_security(path):
    """--security FILE: key=value lines with librdkafka's property names (README "Drivers"); the
    values (a password among them) are never printed."""
    out = {}
    if not path:
        return out
    with open(path) as f:
        for line in f:
            line = line.rstrip("\r\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            k, sep, v = line.partition("=")
            if not sep:
                raise Failure("--security %s: a line without '='" % path)
            out[k.strip()] = v
    return out


# librdkafka's names -> kafka-python's keyword arguments.
KP_SECURITY = {"security.protocol": "security_protocol", "ssl.ca.location": "ssl_cafile",
               "ssl.certificate.location": "ssl_certfile", "ssl.key.location": "ssl_keyfile",
               "ssl.key.password": "ssl_password", "sasl.mechanism": "sasl_mechanism",
               "sasl.username": "sasl_plain_username", "sasl.password": "sasl_plain_password"}


def kafka_python_security(sec):
    kw = {}
    for k, v in sec.items():
        if k == "ssl.endpoint.identification.algorithm":
            kw["ssl_check_hostname"] = v.lower() == "https"
        elif k in KP_SECURITY:
            kw[KP_SECURITY[k]] = v
        else:
            raise Failure("kafka-python adapter: no equivalent for security property %s" % k)
    return kw


# ---- adapters ----

class ConfluentLike:
    """confluent-kafka and odradek (which mirrors confluent-kafka's API)."""

    def __init__(self, lib, bootstrap, security):
        self.bootstrap = bootstrap
        # librdkafka's names: both libraries take them as they are; with them, the client's
        # errors (a refused handshake or login) are kept for the report.
        self.sec = dict(security, error_cb=note_error) if security else {}
        if lib == "odradek":
            import odradek as ck
            from odradek import admin as ck_admin
            self.name = "odradek-python"
            self.version = "odradek %s" % ck.version()[0]
        else:
            import confluent_kafka as ck
            from confluent_kafka import admin as ck_admin
            self.name = "confluent-kafka"
            self.version = "confluent-kafka %s (librdkafka %s)" % (ck.__version__, ck.libversion()[0])
        self.ck = ck
        self.admin_mod = ck_admin
        self.lib = lib

    def producer(self, **conf):
        c = {"bootstrap.servers": self.bootstrap, "linger.ms": 5}
        c.update(self.sec)
        c.update(conf)
        return CKProducer(self.ck.Producer(c))

    def consumer_conf(self, **conf):
        c = {"bootstrap.servers": self.bootstrap, "enable.auto.commit": False,
             "auto.offset.reset": "earliest", "group.id": "compat-reader-%d" % os.getpid()}
        c.update(self.sec)
        c.update(conf)
        return c

    def read_partition(self, topic, partition, count, deadline, isolation="read_uncommitted"):
        step("reading %s-%d (%s)" % (topic, partition, isolation))
        """Reads `count` records of one partition from offset 0: list of (offset, key, value, headers)."""
        ck = self.ck
        c = ck.Consumer(self.consumer_conf(**{"isolation.level": isolation}))
        try:
            c.assign([ck.TopicPartition(topic, partition, ck.OFFSET_BEGINNING)])
            out = []
            while len(out) < count:
                if left(deadline) <= 0:
                    raise Failure("read %s-%d: %d of %d records before the deadline" % (topic, partition, len(out), count))
                m = c.poll(0.2)
                if m is None:
                    continue
                if m.error():
                    if m.error().code() == ck.KafkaError._PARTITION_EOF:
                        continue
                    raise Failure("consume error: %s" % m.error())
                out.append((m.offset(), m.key(), m.value(), [(k, v) for k, v in (m.headers() or [])]))
            return out
        finally:
            c.close()

    def member(self, topic, group, stop_file, deadline, protocol="classic"):
        ck = self.ck
        if protocol == "consumer":
            # KIP-848: the broker assigns and decides sessions and heartbeats.
            conf = {"group.id": group, "group.protocol": "consumer"}
        else:
            conf = {"group.id": group, "partition.assignment.strategy": "roundrobin",
                    "heartbeat.interval.ms": 500, "session.timeout.ms": 10000}
        c = ck.Consumer(self.consumer_conf(**conf))
        try:
            c.subscribe([topic])
            last = None
            while not os.path.exists(stop_file):
                if left(deadline) <= 0:
                    raise Failure("member: no stop signal before the deadline")
                m = c.poll(0.2)
                now = sorted(tp.partition for tp in c.assignment())
                if now != last:
                    emit({"event": "assignment", "partitions": now})
                    last = now
                if m is None:
                    continue
                if m.error():
                    if m.error().code() == ck.KafkaError._PARTITION_EOF:
                        continue
                    raise Failure("consume error: %s" % m.error())
                emit({"event": "record", "partition": m.partition(), "offset": m.offset()})
        finally:
            c.close()

    def transactional_producer(self, txn_id):
        conf = {"bootstrap.servers": self.bootstrap, "transactional.id": txn_id, "linger.ms": 5}
        conf.update(self.sec)
        log = []
        if self.lib == "confluent":
            # librdkafka says why a coordinator lookup failed only in its debug log: keep the
            # last such line for the report.
            import logging

            class Keep(logging.Handler):
                def emit(self, record):
                    msg = record.getMessage()
                    if "Failed" in msg or "rror" in msg:
                        log.append(msg)

            lg = logging.getLogger("compat-librdkafka")
            lg.addHandler(Keep())
            lg.setLevel(logging.DEBUG)
            lg.propagate = False
            conf.update({"debug": "eos", "logger": lg})
        t = CKTxnProducer(self.ck.Producer(conf))
        t.log = log
        return t

    def admin_cycle(self, topic, deadline, replication=1):
        a = self.admin_mod.AdminClient(dict(self.sec, **{"bootstrap.servers": self.bootstrap}))
        fut = a.create_topics([self.admin_mod.NewTopic(topic, num_partitions=3, replication_factor=replication)])[topic]
        try:
            fut.result(timeout=max(1, left(deadline)))
        except concurrent.futures.TimeoutError:
            raise Failure("create_topics: no result for the topic before the deadline")
        wait_for(deadline, lambda: topic in a.list_topics(timeout=5).topics, "created topic listed")
        parts = wait_for(deadline, lambda: len(a.list_topics(topic, timeout=5).topics[topic].partitions) == 3 or None,
                         "created topic described with 3 partitions")
        try:
            a.create_topics([self.admin_mod.NewTopic(topic, num_partitions=3, replication_factor=replication)])[topic].result(
                timeout=max(1, left(deadline)))
            raise Failure("second create_topics succeeded (want TOPIC_ALREADY_EXISTS)")
        except self.ck.KafkaException as e:
            if e.args[0].code() != self.ck.KafkaError.TOPIC_ALREADY_EXISTS:
                raise Failure("second create_topics: %s (want TOPIC_ALREADY_EXISTS)" % e)
        try:
            a.delete_topics([topic])[topic].result(timeout=max(1, left(deadline)))
        except concurrent.futures.TimeoutError:
            raise Failure("delete_topics: no result for the topic before the deadline")
        wait_for(deadline, lambda: topic not in a.list_topics(timeout=5).topics, "deleted topic gone from the listing")
        return parts


    # ---- the quotas scenario (README "Scenarios": quotas) ----

    def _throttle_conf(self, seen):
        """throttle_cb counting the throttle events with a throttle time; odradek's package may
        not take it yet: then None (and the run says so)."""
        def cb(ev):
            if ev.throttle_time > 0:
                seen[0] += 1
        return {"throttle_cb": cb}

    def _make(self, kind, conf, seen):
        """(client, how its throttling is observed): with throttle_cb when the library takes it."""
        try:
            return kind(dict(conf, **self._throttle_conf(seen))), "throttle_cb"
        except (self.ck.KafkaException, TypeError, ValueError) as e:
            if self.lib == "confluent":
                raise
            return kind(conf), "no throttle_cb (refused: %s)" % str(e)[:200]

    def quota_produce(self, topic, client_id, size, run, warmup, deadline):
        seen = [0]
        conf = {"bootstrap.servers": self.bootstrap, "client.id": client_id, "batch.size": 32768,
                "linger.ms": 0, "queue.buffering.max.kbytes": 1024}
        conf.update(self.sec)
        p, how = self._make(self.ck.Producer, conf, seen)
        value = b"q" * size
        acked = [0, 0]
        failed = []
        t0 = time.monotonic()

        def cb(err, msg):
            at = time.monotonic() - t0
            if err:
                failed.append(str(err))
            elif warmup <= at < run:
                acked[0] += size
                acked[1] += 1

        step("producing")
        while time.monotonic() - t0 < run:
            try:
                p.produce(topic, value=value, partition=0, on_delivery=cb)
                p.poll(0)
            except BufferError:
                p.poll(0.05)
        if failed:
            raise Failure("a delivery failed: %s" % failed[0])
        return acked, throttle_result(how, seen[0])

    def quota_consume(self, topic, client_id, fetch_bytes, count, run, warmup, deadline):
        seen = [0]
        conf = self.consumer_conf(**{"client.id": client_id, "max.partition.fetch.bytes": fetch_bytes,
                                     "fetch.max.bytes": fetch_bytes})
        if self.lib == "confluent":
            conf["message.max.bytes"] = fetch_bytes  # librdkafka: fetch.max.bytes >= message.max.bytes
        c, how = self._make(self.ck.Consumer, conf, seen)
        ck = self.ck
        c.assign([ck.TopicPartition(topic, 0, ck.OFFSET_BEGINNING)])
        return consume_loop(lambda: poll_confluent(c, ck), count, run, warmup, deadline,
                            lambda: throttle_result(how, seen[0]))


class CKProducer:
    def __init__(self, p):
        self.p = p
        self.reports = []

    def send(self, topic, key, value, headers=None, partition=None):
        idx = len(self.reports)
        self.reports.append(None)

        def cb(err, msg, idx=idx):
            self.reports[idx] = (str(err), None, None) if err else (None, msg.partition(), msg.offset())

        kw = {"key": key, "value": value, "on_delivery": cb}
        if headers:
            kw["headers"] = headers
        if partition is not None:
            kw["partition"] = partition
        while True:
            try:
                self.p.produce(topic, **kw)
                break
            except BufferError:
                self.p.poll(0.1)
        self.p.poll(0)

    def finish(self, deadline):
        """Flushes; returns the delivery reports of the records sent since the last finish()."""
        step("flush")
        left_n = self.p.flush(max(0.5, left(deadline)))
        if left_n:
            raise Failure("flush: %d records still queued at the deadline" % left_n)
        reports, self.reports = self.reports, []
        return reports

    def close(self):
        pass


class CKTxnProducer(CKProducer):
    log = []

    def last_log(self):
        self.p.poll(0)
        return " (client log: %s)" % self.log[-1].split("]: ", 1)[-1] if self.log else ""

    def init(self, timeout):
        self.p.init_transactions(timeout)

    def begin(self):
        self.p.begin_transaction()

    def commit(self, timeout):
        self.p.commit_transaction(timeout)

    def abort(self, timeout):
        # Send the records first, so the aborted batch is really in the log (read_uncommitted
        # sees it) rather than purged from the queue.
        self.p.flush(timeout)
        self.p.abort_transaction(timeout)


class KafkaPython:
    def __init__(self, lib, bootstrap, security):
        import kafka
        self.kafka = kafka
        self.bootstrap = bootstrap
        self.sec = kafka_python_security(security)
        self.name = "kafka-python"
        self.version = "kafka-python %s" % kafka.__version__
        if security:
            # kafka-python says why a connection failed only in its log: keep its first error
            # (the refused handshake or login; later ones are "Bootstrap failed"), a warning
            # until there is one.
            import logging
            kept = [0]

            class Keep(logging.Handler):
                def emit(self, record):
                    if record.levelno > kept[0]:
                        kept[0] = record.levelno
                        note_error(record.getMessage())
            logging.getLogger("kafka").addHandler(Keep(logging.WARNING))

    def producer(self, **conf):
        kw = {"bootstrap_servers": self.bootstrap, "linger_ms": 5}
        kw.update(self.sec)
        codec = conf.pop("compression.type", "none")
        if codec != "none":
            kw["compression_type"] = codec
        if conf.pop("enable.idempotence", False):
            kw["enable_idempotence"] = True
            kw["acks"] = "all"
        conf.pop("partitioner", None)  # kafka-python's default partitioner is murmur2 (Java's)
        if conf:
            raise Failure("kafka-python adapter: unsupported options %r" % conf)
        return KPProducer(self.kafka.KafkaProducer(**kw))

    def read_partition(self, topic, partition, count, deadline, isolation="read_uncommitted"):
        step("reading %s-%d (%s)" % (topic, partition, isolation))
        k = self.kafka
        c = k.KafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False,
                            auto_offset_reset="earliest", isolation_level=isolation, **self.sec)
        try:
            tp = k.TopicPartition(topic, partition)
            c.assign([tp])
            c.seek_to_beginning(tp)
            out = []
            while len(out) < count:
                if left(deadline) <= 0:
                    raise Failure("read %s-%d: %d of %d records before the deadline" % (topic, partition, len(out), count))
                for recs in c.poll(timeout_ms=200).values():
                    for r in recs:
                        out.append((r.offset, r.key, r.value, list(r.headers or [])))
            return out[:count] if len(out) > count else out
        finally:
            c.close()

    def member(self, topic, group, stop_file, deadline, protocol="classic"):
        if protocol != "classic":
            raise Failure("kafka-python has no %s group protocol" % protocol)
        k = self.kafka
        from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
        c = k.KafkaConsumer(bootstrap_servers=self.bootstrap, group_id=group, enable_auto_commit=False,
                            auto_offset_reset="earliest", heartbeat_interval_ms=500,
                            session_timeout_ms=10000,
                            partition_assignment_strategy=[RoundRobinPartitionAssignor], **self.sec)
        try:
            c.subscribe([topic])
            last = None
            while not os.path.exists(stop_file):
                if left(deadline) <= 0:
                    raise Failure("member: no stop signal before the deadline")
                batch = c.poll(timeout_ms=200)
                now = sorted(tp.partition for tp in c.assignment())
                if now != last:
                    emit({"event": "assignment", "partitions": now})
                    last = now
                for recs in batch.values():
                    for r in recs:
                        emit({"event": "record", "partition": r.partition, "offset": r.offset})
        finally:
            c.close()

    def transactional_producer(self, txn_id):
        return KPTxnProducer(self.kafka.KafkaProducer(bootstrap_servers=self.bootstrap, transactional_id=txn_id, max_block_ms=30000,
                                                      enable_idempotence=True, acks="all", linger_ms=5,
                                                      **self.sec))

    def admin_cycle(self, topic, deadline, replication=1):
        from kafka.admin import KafkaAdminClient, NewTopic
        from kafka.errors import TopicAlreadyExistsError
        a = KafkaAdminClient(bootstrap_servers=self.bootstrap, **self.sec)
        try:
            a.create_topics([NewTopic(topic, 3, replication)])
            wait_for(deadline, lambda: topic in a.list_topics(), "created topic listed")
            d = a.describe_topics([topic])
            if len(d) != 1 or len(d[0]["partitions"]) != 3:
                raise Failure("describe_topics: %r (want 3 partitions)" % d)
            try:
                a.create_topics([NewTopic(topic, 3, replication)])
                raise Failure("second create_topics succeeded (want TOPIC_ALREADY_EXISTS)")
            except TopicAlreadyExistsError:
                pass
            a.delete_topics([topic])
            wait_for(deadline, lambda: topic not in a.list_topics(), "deleted topic gone from the listing")
        finally:
            a.close()


    # ---- the quotas scenario (README "Scenarios": quotas) ----

    def _watch_throttle(self, seen):
        """kafka-python honours throttle_time_ms (it pauses the connection) and logs a warning
        "... throttled by broker (N ms)" per throttled response: counted here."""
        import logging

        class Count(logging.Handler):
            def emit(self, record):
                if "throttled by broker" in record.getMessage():
                    seen[0] += 1
        logging.getLogger("kafka").addHandler(Count(logging.WARNING))
        return 'its log ("throttled by broker")'

    def quota_produce(self, topic, client_id, size, run, warmup, deadline):
        seen = [0]
        how = self._watch_throttle(seen)
        p = self.kafka.KafkaProducer(bootstrap_servers=self.bootstrap, client_id=client_id, batch_size=32768,
                                     linger_ms=0, **self.sec)
        value = b"q" * size
        acked = [0, 0]
        failed = []
        # kafka-python 3.0 has no buffer_memory (its accumulator is unbounded and send() never
        # blocks): the driver keeps at most 1 MiB unacknowledged, like the other clients' buffers.
        done = [0]
        limit = max(1, (1 << 20) // size)
        t0 = time.monotonic()

        def ok(_md):
            done[0] += 1
            if warmup <= time.monotonic() - t0 < run:
                acked[0] += size
                acked[1] += 1

        def err(e):
            done[0] += 1
            failed.append(repr(e))

        step("producing")
        sent = 0
        while time.monotonic() - t0 < run:
            if sent - done[0] >= limit:
                time.sleep(0.005)
                continue
            f = p.send(topic, value=value, partition=0)
            sent += 1
            f.add_callback(ok)
            f.add_errback(err)
        if failed:
            raise Failure("a delivery failed: %s" % failed[0])
        return acked, throttle_result(how, seen[0])

    def quota_consume(self, topic, client_id, fetch_bytes, count, run, warmup, deadline):
        seen = [0]
        how = self._watch_throttle(seen)
        k = self.kafka
        c = k.KafkaConsumer(bootstrap_servers=self.bootstrap, client_id=client_id, enable_auto_commit=False,
                            auto_offset_reset="earliest", max_partition_fetch_bytes=fetch_bytes,
                            fetch_max_bytes=fetch_bytes, **self.sec)
        tp = k.TopicPartition(topic, 0)
        c.assign([tp])
        c.seek_to_beginning(tp)

        def poll():
            return [r.value for recs in c.poll(timeout_ms=50).values() for r in recs]
        return consume_loop(poll, count, run, warmup, deadline, lambda: throttle_result(how, seen[0]))


class KPProducer:
    def __init__(self, p):
        self.p = p
        self.futures = []

    def send(self, topic, key, value, headers=None, partition=None):
        self.futures.append(self.p.send(topic, key=key, value=value, headers=headers or None, partition=partition))

    def finish(self, deadline):
        self.p.flush(timeout=max(0.5, left(deadline)))
        out = []
        for f in self.futures:
            try:
                md = f.get(timeout=max(0.5, left(deadline)))
                out.append((None, md.partition, md.offset))
            except Exception as e:  # noqa: BLE001 - any delivery failure is data for the report
                out.append((repr(e), None, None))
        self.futures = []
        return out

    def close(self):
        self.p.close(timeout=10)


class KPTxnProducer(KPProducer):
    def last_log(self):
        return ""

    def init(self, timeout):
        self.p.init_transactions()

    def begin(self):
        self.p.begin_transaction()

    def commit(self, timeout):
        self.p.commit_transaction()

    def abort(self, timeout):
        self.p.flush(timeout=timeout)  # the aborted records must reach the log first
        self.p.abort_transaction()


def wait_for(deadline, cond, what):
    last_err = None
    while True:
        try:
            r = cond()
            if r:
                return r
        except Exception as e:  # noqa: BLE001 - retried until the deadline, then reported
            last_err = e
        if left(deadline) <= 0:
            raise Failure("%s: not within the deadline%s" % (what, "" if last_err is None else " (last error: %r)" % last_err))
        time.sleep(0.1)


def check_reports(reports, what):
    bad = [(i, r) for i, r in enumerate(reports) if r is None or r[0] is not None]
    if bad:
        i, r = bad[0]
        raise Failure("%s: %d of %d deliveries failed, first #%d: %s" % (
            what, len(bad), len(reports), i, "no delivery report" if r is None else r[0]))


# ---- actions ----

def act_write(c, a, deadline):
    detail, ok = {}, True
    for codec in a.codecs.split(","):
        step("write %s" % codec)
        try:
            p = c.producer(**{"compression.type": codec})
            try:
                for i in range(a.count):
                    p.send("%s-%s" % (a.topic, codec), rec_key(i), rec_value(i), rec_headers(i), partition=0)
                reports = p.finish(deadline)
            finally:
                p.close()
            check_reports(reports, codec)
            offs = [r[2] for r in reports]
            if offs != list(range(offs[0], offs[0] + len(offs))):
                raise Failure("%s: offsets not contiguous: %r" % (codec, offs[:10]))
            detail[codec] = "ok"
        except Exception as e:  # noqa: BLE001
            detail[codec] = "%s: %s%s" % (type(e).__name__, e, last_error())
            ok = False
    return ok, detail


def act_verify(c, a, deadline):
    detail, ok = {}, True
    for codec in a.codecs.split(","):
        try:
            got = c.read_partition("%s-%s" % (a.topic, codec), 0, a.count, deadline)
            for i, (off, key, value, headers) in enumerate(got):
                why = compare_record(i, key, value, headers)
                if why:
                    raise Failure(why)
            detail[codec] = "ok"
        except Exception as e:  # noqa: BLE001
            detail[codec] = "%s: %s%s" % (type(e).__name__, e, last_error())
            ok = False
    return ok, detail


def act_keyed(c, a, deadline):
    conf = {}
    if a.partitioner == "murmur2" and c.name != "kafka-python":
        conf["partitioner"] = "murmur2_random"
    p = c.producer(**conf)
    try:
        for i in range(a.count):
            p.send(a.topic, b"k%d" % i, b"v")
        reports = p.finish(deadline)
    finally:
        p.close()
    check_reports(reports, "keyed")
    return True, {"partitions": [r[1] for r in reports]}


def act_fill(c, a, deadline):
    p = c.producer()
    try:
        for i in range(a.count):
            p.send(a.topic, b"k%d" % i, b"g%d" % i, partition=i % a.partitions)
        reports = p.finish(deadline)
    finally:
        p.close()
    check_reports(reports, "fill")
    return True, {}


def act_member(c, a, deadline):
    c.member(a.topic, a.group, a.stop, deadline, a.protocol)
    return True, {}


def act_idempotence(c, a, deadline):
    p = c.producer(**{"enable.idempotence": True, "acks": "all"} if c.name != "kafka-python" else {"enable.idempotence": True})
    try:
        for i in range(a.count):
            p.send(a.topic, None, b"i%d" % i, partition=0)
        reports = p.finish(deadline)
    finally:
        p.close()
    check_reports(reports, "idempotent produce")
    offs = [r[2] for r in reports]
    if offs != list(range(offs[0], offs[0] + a.count)):
        raise Failure("delivery offsets not contiguous in send order: first %r" % offs[:10])
    got = c.read_partition(a.topic, 0, a.count, deadline)
    values = [v for _, _, v, _ in got]
    want = [b"i%d" % i for i in range(a.count)]
    if values != want:
        bad = next(i for i, (x, y) in enumerate(zip(values, want)) if x != y)
        raise Failure("read back: record %d is %r, want %r" % (bad, values[bad], want[bad]))
    return True, {}


def act_transactions(c, a, deadline):
    p = c.transactional_producer("compat-%s" % a.topic)
    n = 10
    try:
        step("init_transactions")
        p.init(min(30, max(1, left(deadline) - 5)))
        for tag, commit in (("c1", True), ("ab", False), ("c2", True)):
            step("begin_transaction (%s)" % tag)
            p.begin()
            for i in range(n):
                p.send(a.topic, None, b"%s-%d" % (tag.encode(), i), partition=0)
            if commit:
                step("commit_transaction (%s)" % tag)
                p.commit(min(30, max(1, left(deadline) - 5)))
                check_reports(p.finish(deadline), "transactional produce")
            else:
                step("abort_transaction (%s)" % tag)
                p.abort(min(30, max(1, left(deadline) - 5)))
                p.finish(deadline)  # aborted records may report errors or offsets; both fine
    except Failure:
        raise
    except Exception as e:  # noqa: BLE001
        raise Failure("%s: %s: %s%s" % (STEP[0], type(e).__name__, e, p.last_log()))
    finally:
        p.close()
    want = [b"c1-%d" % i for i in range(n)] + [b"c2-%d" % i for i in range(n)]
    got = [v for _, _, v, _ in c.read_partition(a.topic, 0, 2 * n, deadline, "read_committed")]
    if got != want:
        raise Failure("read_committed read %r, want c1-0..9 then c2-0..9" % got)
    raw = [v for _, _, v, _ in c.read_partition(a.topic, 0, 3 * n, deadline, "read_uncommitted")]
    want_raw = [b"c1-%d" % i for i in range(n)] + [b"ab-%d" % i for i in range(n)] + [b"c2-%d" % i for i in range(n)]
    if raw != want_raw:
        raise Failure("read_uncommitted read %r, want c1, ab (aborted), c2" % raw)
    return True, {}


def act_admin(c, a, deadline):
    c.admin_cycle(a.topic, deadline, a.replication)
    return True, {}


def throttle_result(how, events):
    """The driver protocol's throttle fields: throttled is None when the client cannot say."""
    if how.startswith("no "):
        return {"throttled": None, "throttle_report": how}
    return {"throttled": events > 0, "throttle_report": "%s: %d throttle events" % (how, events)}


def poll_confluent(c, ck):
    m = c.poll(0.05)
    if m is None:
        return []
    if m.error():
        if m.error().code() == ck.KafkaError._PARTITION_EOF:
            return []
        raise Failure("consume error: %s" % m.error())
    return [m.value()]


def consume_loop(poll, count, run, warmup, deadline, throttle):
    """From the first record on, the value bytes received in [warmup, run); stops at run, or when
    all `count` records of the topic are read (exhausted)."""
    step("consuming")
    t0, total, got = None, 0, [0, 0]
    exhausted = False
    while t0 is None or time.monotonic() - t0 < run:
        if left(deadline) <= 0:
            raise Failure("%d records read before the deadline" % total)
        for v in poll():
            now = time.monotonic()
            if t0 is None:
                t0 = now
            total += 1
            if warmup <= now - t0 < run:
                got[0] += len(v or b"")
                got[1] += 1
        if total >= count and time.monotonic() - t0 < run:
            exhausted = True
            break
    return got, dict(throttle(), exhausted=exhausted)


def act_quota_produce(c, a, deadline):
    (b, n), thr = c.quota_produce(a.topic, a.client_id, a.size, a.seconds, a.warmup, deadline)
    return True, dict(thr, bytes=b, records=n, window=a.seconds - a.warmup)


def act_quota_consume(c, a, deadline):
    (b, n), thr = c.quota_consume(a.topic, a.client_id, a.fetch_bytes, a.count, a.seconds, a.warmup, deadline)
    return True, dict(thr, bytes=b, records=n, window=a.seconds - a.warmup)


def act_info(c, a, deadline):
    return True, {"version": c.version}


ACTIONS = {"write": act_write, "verify": act_verify, "keyed": act_keyed, "fill": act_fill,
           "member": act_member, "idempotence": act_idempotence, "transactions": act_transactions,
           "admin": act_admin, "info": act_info, "quota_produce": act_quota_produce,
           "quota_consume": act_quota_consume}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True, choices=["confluent", "kafka-python", "odradek"])
    ap.add_argument("action", choices=sorted(ACTIONS))
    ap.add_argument("--bootstrap", default="")
    ap.add_argument("--topic", default="")
    ap.add_argument("--codecs", default=",".join(CODECS))
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--replication", type=int, default=1, help="replication factor of the topics admin creates")
    ap.add_argument("--partitioner", default="murmur2", choices=["murmur2", "default"])
    ap.add_argument("--group", default="")
    ap.add_argument("--stop", default="")
    ap.add_argument("--protocol", default="classic", choices=["classic", "consumer"],
                    help="the group protocol of `member` (consumer: KIP-848)")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--client-id", default="")
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--fetch-bytes", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=23.0)
    ap.add_argument("--warmup", type=float, default=3.0)
    ap.add_argument("--security", default="", help="a key=value file of client security settings (librdkafka names)")
    a = ap.parse_args()
    deadline = deadline_after(a.timeout)
    watchdog(a.timeout + 5)
    try:
        sec = read_security(a.security)
        c = KafkaPython(a.lib, a.bootstrap, sec) if a.lib == "kafka-python" else ConfluentLike(a.lib, a.bootstrap, sec)
        ok, detail = ACTIONS[a.action](c, a, deadline)
        emit({"ok": ok, "error": None if ok else "; ".join("%s: %s" % kv for kv in detail.items() if kv[1] != "ok"),
              "detail": detail})
        if a.action.startswith("quota_"):
            os._exit(0)  # records still buffered at the end of a produce run are not waited for
    except Failure as e:
        emit({"ok": False, "error": str(e), "detail": {}})
    except Exception as e:  # noqa: BLE001 - the driver reports every failure as data
        traceback.print_exc()
        emit({"ok": False, "error": "%s: %s" % (type(e).__name__, e), "detail": {}})


if __name__ == "__main__":
    main()
