"""Per-record delivery results for a batch with invalid records (KIP-467, issue 26).

The broker refuses the whole batch and names the invalid records (Produce ``record_errors``).
librdkafka and the Java client then report, per record: the partition's code for a listed record
when it is the only one (INVALID_RECORD when several are listed), with the broker's message for
it, and ``_INVALID_DIFFERENT_RECORD`` ("refused because a different record in the batch was
invalid") for every other record (librdkafka does that only when several records are listed;
with one it fails the whole batch with the partition's code, and there we follow the Java
client). Each case runs with ``odradek`` and with confluent-kafka, and
the Java client's answer for the same cases (tests/compat/JavaRecordErrors.java) is compared too,
against whichever broker the suite runs on (our broker, or Apache Kafka with
ODRADEK_TEST_BOOTSTRAP): all three must give the same list on both brokers.
"""
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import create_topic

HOUR_MS = 3_600_000
KEYLESS = ["different", "INVALID_RECORD", "different", "INVALID_RECORD", "different"]
TIMESTAMPS = ["different", "INVALID_TIMESTAMP", "different"]
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["odradek", "confluent_kafka"])
def kafka(request):
    """The client package under test (skipped if it is not installed)."""
    return pytest.importorskip(request.param)


def outcomes(kafka, bootstrap, topic, records):
    """Produces (key, timestamp) records to partition 0 in one batch; each record's outcome."""
    p = kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 200, "retries": 0})
    # Metadata first, so every record joins the same batch.
    p.list_topics(topic, timeout=10)
    results = [None] * len(records)

    def report(i):
        def on_delivery(err, msg):
            results[i] = err
        return on_delivery

    for i, (key, ts) in enumerate(records):
        p.produce(topic, value=b"value", key=key, partition=0, timestamp=ts, on_delivery=report(i))
    assert p.flush(30) == 0
    return results


def name(err):
    if err is None:
        return "ok"
    if err.name() == "_INVALID_DIFFERENT_RECORD":
        return "different"
    return err.name()


def test_listed_records_fail_alone_and_the_rest_say_a_different_record_was_invalid(
        kafka, bootstrap, topic_name):
    now = int(time.time() * 1000)
    keyless = topic_name + "-keyless"
    create_topic(bootstrap, keyless, partitions=1, config={"cleanup.policy": "compact"})
    errs = outcomes(kafka, bootstrap, keyless,
                    [(b"a", now), (None, now), (b"b", now), (None, now), (b"c", now)])
    assert [name(e) for e in errs] == KEYLESS
    if kafka.__name__ == "odradek":
        # Ours carries the broker's message for the record (confluent-kafka's KafkaError has
        # only the code's text; librdkafka keeps the message in the C message's errstr).
        assert "Compacted topic cannot accept message without key" in errs[1].str(), errs[1].str()
    assert not errs[0].retriable() and not errs[1].retriable()

    timestamps = topic_name + "-timestamps"
    create_topic(bootstrap, timestamps, partitions=1,
                 config={"message.timestamp.before.max.ms": str(HOUR_MS)})
    errs = outcomes(kafka, bootstrap, timestamps,
                    [(None, now), (None, now - 2 * HOUR_MS), (None, now)])
    if kafka.__name__ == "odradek":
        assert [name(e) for e in errs] == TIMESTAMPS
    else:
        # librdkafka differs from the Java client when the broker lists a single record: it
        # fails the whole batch with the partition's code (it tells records apart only when
        # record_errors has more than one entry, rdkafka_broker.c rd_kafka_dr_msgq0). We follow
        # the Java client, which names the one bad record and refuses the others as "different".
        assert [name(e) for e in errs] == ["INVALID_TIMESTAMP"] * 3
    if kafka.__name__ == "odradek":
        assert "is out of range" in errs[1].str(), errs[1].str()


def test_the_java_client_reports_the_same(bootstrap):
    java = shutil.which("java")
    if java is None:
        pytest.skip("java not found (the Java client check needs Java 17+)")
    classpath = subprocess.run([str(REPO / "tests" / "compat" / "kafka.sh"), "classpath"],
                               capture_output=True, text=True, timeout=1800,
                               stdin=subprocess.DEVNULL)
    assert classpath.returncode == 0, "kafka.sh classpath failed: %s" % classpath.stderr[-2000:]
    run = subprocess.run([java, "-cp", classpath.stdout.strip(),
                          str(REPO / "tests" / "compat" / "JavaRecordErrors.java"), bootstrap],
                         capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stderr[-4000:]
    lines = dict(line.split(" ", 1) for line in run.stdout.splitlines() if " " in line)
    assert lines.get("keyless", "").split() == KEYLESS, run.stdout
    assert lines.get("timestamps", "").split() == TIMESTAMPS, run.stdout
