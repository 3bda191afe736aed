#!/usr/bin/env python3
"""Drop-in check: the same confluent-kafka program, run on confluent-kafka and on odradek.

    python dropin_check.py confluent|odradek BOOTSTRAP TOPIC_PREFIX

Only the import below depends on the first argument; everything after it is ordinary
confluent-kafka code (admin, producer, an assign-based consumer, a consumer group, and
transactions). Prints one line per check and exits non-zero on the first failure.
"""
import json
import sys
import threading
import time

CLIENT, BOOTSTRAP, PREFIX = sys.argv[1], sys.argv[2], sys.argv[3]

if CLIENT == "confluent":
    from confluent_kafka import (OFFSET_BEGINNING, OFFSET_END, TIMESTAMP_CREATE_TIME, Consumer,
                                 ConsumerGroupTopicPartitions, KafkaError, KafkaException, Node,
                                 Producer, TopicCollection, TopicPartition, Uuid)
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                       ConfigResource, ConfigSource, NewTopic, OffsetSpec,
                                       ResourceType)
elif CLIENT == "odradek":
    from odradek import (OFFSET_BEGINNING, OFFSET_END, TIMESTAMP_CREATE_TIME, Consumer,
                         ConsumerGroupTopicPartitions, KafkaError, KafkaException, Node,
                         Producer, TopicCollection, TopicPartition, Uuid)
    from odradek.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                               ConfigSource, NewTopic, OffsetSpec, ResourceType)
else:
    sys.exit("usage: dropin_check.py confluent|odradek BOOTSTRAP TOPIC_PREFIX")

TOPIC = PREFIX + "-" + CLIENT
GTOPIC = TOPIC + "-g"
TTOPIC = TOPIC + "-t"
checks = 0


def check(cond, what, detail=None):
    global checks
    if not cond:
        raise SystemExit("FAILED: %s%s" % (what, "" if detail is None else " (got %r)" % (detail,)))
    checks += 1
    print("ok - %s" % what)


# ---- topics (created explicitly: the broker's num.partitions is not ours to assume) -------

admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
# TOPIC's records carry 2023 timestamps: without retention.ms=-1 a time-retention pass (the
# broker's every few minutes) could delete them between the produce and the offset checks.
futures = admin.create_topics([NewTopic(TOPIC, num_partitions=3, replication_factor=1,
                                        config={"retention.ms": "-1"}),
                               NewTopic(GTOPIC, num_partitions=3, replication_factor=1),
                               NewTopic(TTOPIC, num_partitions=1, replication_factor=1)])
check(sorted(futures) == sorted([TOPIC, GTOPIC, TTOPIC]), "create_topics() returns a future per topic")
check(all(f.result(timeout=30) is None for f in futures.values()),
      "the topics are created (result() is None)")

# ---- producer ----------------------------------------------------------------------------

p = Producer({"bootstrap.servers": BOOTSTRAP, "linger.ms": 5, "acks": "all"})
reports = []


def on_delivery(err, msg):
    reports.append((err, msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value(),
                    msg.timestamp()))


for i in range(30):
    p.produce(TOPIC, value="value-%d" % i, key=b"key-%d" % i, partition=i % 3,
              timestamp=1_700_000_000_000 + i, headers=[("n", str(i).encode())],
              on_delivery=on_delivery)
    p.poll(0)
p.produce(TOPIC, value=b"with-callback-alias", partition=0, callback=on_delivery,
          headers={"kind": b"dict"})
left = p.flush(30)
check(left == 0 and len(p) == 0, "flush() delivers everything and returns 0")
check(len(reports) == 31, "one delivery report per message (%d)" % len(reports))
check(all(r[0] is None for r in reports), "no delivery errors")
first = [r for r in reports if r[5] == b"value-0"][0]
check(first[1] == TOPIC and first[2] == 0 and first[3] >= 0, "report has topic/partition/offset")
check(first[4] == b"key-0", "report carries the key as bytes")
check(first[6] == (TIMESTAMP_CREATE_TIME, 1_700_000_000_000), "report carries the timestamp")
offsets = sorted(r[3] for r in reports if r[2] == 1)
check(offsets == list(range(10)), "offsets are consecutive per partition")

raised = None
try:
    p.produce(TOPIC, value=b"x" * 2_000_000)
except KafkaException as e:
    raised = e.args[0]
check(raised is not None and raised.code() == KafkaError.MSG_SIZE_TOO_LARGE,
      "an oversized message raises KafkaException(MSG_SIZE_TOO_LARGE)")

small = Producer({"bootstrap.servers": BOOTSTRAP, "queue.buffering.max.messages": 5})
buffer_error = False
try:
    for i in range(100):
        small.produce(TOPIC, b"fill", partition=0)
except BufferError:
    buffer_error = True
check(buffer_error, "a full queue raises BufferError")
check(small.flush(30) == 0, "flush() drains the full queue")


def failing(err, msg):
    raise ValueError("from callback")


p.produce(TOPIC, b"cb-raises", partition=2, on_delivery=failing)
try:
    p.flush(30)
    propagated = False
except ValueError:
    propagated = True
check(propagated, "an exception in a delivery callback propagates from flush()")

md = p.list_topics(TOPIC, timeout=10)
check(sorted(md.topics[TOPIC].partitions) == [0, 1, 2], "list_topics() lists the partitions")
leader = md.topics[TOPIC].partitions[0].leader
check(leader in md.brokers and md.brokers[leader].port > 0, "partition leaders are brokers")

err = KafkaError(KafkaError._PARTITION_EOF)
check(err.code() == -191 and err.name() == "_PARTITION_EOF", "KafkaError constants and names")
check(KafkaException(err).args[0] is err, "KafkaException.args[0] is the KafkaError")

# ---- consumer (assign-based) -------------------------------------------------------------

c = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": "dropin-" + CLIENT,
              "enable.auto.commit": False, "auto.offset.reset": "earliest",
              "enable.partition.eof": True})
c.assign([TopicPartition(TOPIC, p_, OFFSET_BEGINNING) for p_ in range(3)])
records, eof = [], set()
deadline = time.time() + 30
while len(eof) < 3 and time.time() < deadline:
    msg = c.poll(1.0)
    if msg is None:
        continue
    if msg.error():
        if msg.error().code() == KafkaError._PARTITION_EOF:
            eof.add(msg.partition())
        continue
    records.append(msg)
check(len(eof) == 3, "one _PARTITION_EOF event per partition")
values = sorted(m.value() for m in records)
check(b"value-7" in values and b"with-callback-alias" in values, "consumed what was produced")
m7 = [m for m in records if m.value() == b"value-7"][0]
check(m7.key() == b"key-7" and m7.partition() == 1 and m7.topic() == TOPIC, "key/partition/topic")
check(m7.headers() == [("n", b"7")], "headers are a list of (str, bytes)")
check(m7.timestamp() == (TIMESTAMP_CREATE_TIME, 1_700_000_000_007), "timestamp type and value")
check(len(m7) == len(b"value-7"), "len(msg) is the value's length")

low, high = c.get_watermark_offsets(TopicPartition(TOPIC, 1), timeout=10)
check((low, high) == (0, 10), "get_watermark_offsets() returns (low, high)", (low, high))
pos = c.position([TopicPartition(TOPIC, 1)])
check(pos[0].offset == 10, "position() is one past the last consumed offset")

c.seek(TopicPartition(TOPIC, 1, 4))
batch = []
deadline = time.time() + 30
while len(batch) < 3 and time.time() < deadline:
    batch += [m for m in c.consume(num_messages=3 - len(batch), timeout=1.0) if not m.error()]
check([m.offset() for m in batch] == [4, 5, 6], "seek() then consume() resumes at the offset")

ts = c.offsets_for_times([TopicPartition(TOPIC, 1, 1_700_000_000_004)], timeout=10)
check(ts[0].offset == 1, "offsets_for_times() finds the first offset at or after a time")

c.pause([TopicPartition(TOPIC, 0)])
c.resume([TopicPartition(TOPIC, 0)])
c.assign([TopicPartition(TOPIC, 2, OFFSET_END)])
check(c.assignment() == [TopicPartition(TOPIC, 2)], "assignment() after re-assign")
c.close()
try:
    c.poll(0)
    closed_raises = False
except RuntimeError:
    closed_raises = True
check(closed_raises, "a closed consumer raises RuntimeError")

# ---- consumer group (subscribe, rebalance callbacks, commits) -----------------------------

for i in range(9):
    p.produce(GTOPIC, value=b"g-%d" % i, partition=i % 3)
check(p.flush(30) == 0, "group topic produced")
rebalances, commits = [], []


def on_assign(consumer, partitions):
    rebalances.append(("assign", sorted(tp.partition for tp in partitions),
                       threading.current_thread() is threading.main_thread()))


def on_revoke(consumer, partitions):
    rebalances.append(("revoke", sorted(tp.partition for tp in partitions),
                       threading.current_thread() is threading.main_thread()))


def on_commit(err, partitions):
    commits.append((err, sorted((tp.partition, tp.offset) for tp in partitions)))


gconf = {"bootstrap.servers": BOOTSTRAP, "group.id": "dropin-group-" + GTOPIC,
         "auto.offset.reset": "earliest", "enable.auto.commit": False, "on_commit": on_commit}
g = Consumer(gconf)
check(g.memberid() is None, "memberid() is None before joining")
code = None
try:
    g.commit(asynchronous=False)
except KafkaException as e:
    code = e.args[0].code()
check(code == KafkaError._NO_OFFSET, "a sync commit with nothing consumed raises _NO_OFFSET")
g.subscribe([GTOPIC], on_assign=on_assign, on_revoke=on_revoke)
got = []
deadline = time.time() + 60
while len(got) < 9 and time.time() < deadline:
    msg = g.poll(0.5)
    if msg is not None and not msg.error():
        got.append(msg)
check(len(got) == 9, "subscribe() then poll() consumes every partition")
check(rebalances == [("assign", [0, 1, 2], True)], "on_assign ran once, on the polling thread")
check(isinstance(g.memberid(), str) and len(g.memberid()) > 0, "memberid() after joining")
check(g.consumer_group_metadata() is not None, "consumer_group_metadata()")
check([tp.offset for tp in g.position([TopicPartition(GTOPIC, i) for i in range(3)])] == [3, 3, 3],
      "position() after consuming everything")
done = g.commit(asynchronous=False)
check(sorted((tp.partition, tp.offset) for tp in done) == [(0, 3), (1, 3), (2, 3)],
      "commit(asynchronous=False) returns the committed offsets")
check([tp.offset for tp in g.committed([TopicPartition(GTOPIC, i) for i in range(3)], timeout=10)]
      == [3, 3, 3], "committed() reads them back")
first = [m for m in got if m.partition() == 1][0]
check(g.commit(message=first) is None, "commit(message=...) is asynchronous by default")
deadline = time.time() + 30
while not commits and time.time() < deadline:
    g.poll(0.2)
check(commits == [(None, [(1, first.offset() + 1)])], "on_commit reports the async commit")
code = None
try:
    g.store_offsets(message=first)
except KafkaException as e:
    code = e.args[0].code()
check(code == KafkaError._INVALID_ARG, "store_offsets() needs enable.auto.offset.store=false")
g.close()
check(rebalances[-1] == ("revoke", [0, 1, 2], True), "close() runs on_revoke on the calling thread")

g2 = Consumer(dict(gconf, **{"enable.auto.offset.store": False}))
g2.subscribe([GTOPIC])
resumed = []
deadline = time.time() + 60
while not resumed and time.time() < deadline:
    msg = g2.poll(0.5)
    if msg is not None and not msg.error():
        resumed.append(msg)
check([(m.partition(), m.offset()) for m in resumed] == [(1, first.offset() + 1)],
      "a new member resumes from the committed offsets")
g2.store_offsets(offsets=[TopicPartition(GTOPIC, 1, 2)])
res2 = g2.commit(asynchronous=False)
check(sorted((tp.partition, tp.offset) for tp in res2) == [(0, -1001), (1, 2), (2, -1001)],
      "commit() sends the stored offsets (OFFSET_INVALID for the rest of the assignment)")
g2.close()

# ---- unsubscribe() and statistics (librdkafka's schema) --------------------------------------

stats = []
rebalances.clear()
g3 = Consumer(dict(gconf, **{"group.id": "dropin-stats-" + GTOPIC, "statistics.interval.ms": 100,
                             "stats_cb": stats.append}))
g3.subscribe([GTOPIC], on_assign=on_assign, on_revoke=on_revoke)
seen = 0
deadline = time.time() + 60
while seen < 9 and time.time() < deadline:
    msg = g3.poll(0.5)
    if msg is not None and not msg.error():
        seen += 1
check(seen == 9, "a statistics-enabled member reads everything")
g3.commit(offsets=[TopicPartition(GTOPIC, i, 1) for i in range(3)], asynchronous=False)


def lag_seen():
    for raw in reversed(stats):
        doc = json.loads(raw)
        parts = doc.get("topics", {}).get(GTOPIC, {}).get("partitions", {})
        if all(parts.get(str(i), {}).get("committed_offset") == 1 for i in range(3)):
            return doc
    return None


deadline = time.time() + 30
while lag_seen() is None and time.time() < deadline:
    g3.poll(0.2)
doc = lag_seen()
check(doc is not None and doc["type"] == "consumer" and "cgrp" in doc,
      "stats_cb gets librdkafka's statistics JSON")
check([doc["topics"][GTOPIC]["partitions"][str(i)]["consumer_lag"] for i in range(3)] == [2, 2, 2],
      "the statistics' consumer_lag is the high watermark minus the committed offset")
check(all("rtt" in b and "throttle" in b for b in doc["brokers"].values()),
      "every broker entry has its rtt and throttle windows")
check(doc["cgrp"]["assignment_size"] == 3, "cgrp.assignment_size")
g3.unsubscribe()
check(rebalances[-1][0] == "assign" and len(g3.assignment()) == 3,
      "unsubscribe() returns before revoking: the assignment stays until the next poll")
g3.poll(0.5)
check(rebalances[-1][0] == "revoke" and g3.assignment() == [], "the next poll() runs on_revoke")
g3.close()

# ---- transactions (init, abort, consume-transform-produce with offsets, fencing) ----------

def read_txn_topic(isolation, expect):
    """TTOPIC's values from the beginning: until `expect` arrived and the end was reached."""
    r = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": "dropin-reader-" + TTOPIC,
                  "enable.auto.commit": False, "isolation.level": isolation,
                  "enable.partition.eof": True})
    r.assign([TopicPartition(TTOPIC, 0, OFFSET_BEGINNING)])
    out = []
    deadline = time.time() + 30
    while time.time() < deadline:
        msg = r.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF and len(out) >= expect:
                break
            continue
        out.append(msg.value())
    r.close()
    return out


txn_conf = {"bootstrap.servers": BOOTSTRAP, "transactional.id": "dropin-txn-" + TTOPIC,
            "linger.ms": 5}
tp = Producer(txn_conf)
check(tp.init_transactions(30) is None, "init_transactions() registers the transactional.id")
state = None
try:
    tp.produce(TTOPIC, b"outside", partition=0)
except KafkaException as e:
    state = e.args[0]
check(state is not None and state.code() == KafkaError._STATE,
      "produce() outside a transaction raises KafkaException(_STATE)")

aborted_reports = []
tp.begin_transaction()
for i in range(3):
    tp.produce(TTOPIC, b"aborted-%d" % i, partition=0,
               on_delivery=lambda err, msg: aborted_reports.append(err))
check(tp.flush(30) == 0 and aborted_reports == [None] * 3,
      "records of an open transaction are delivered")
check(tp.abort_transaction(30) is None, "abort_transaction()")

src = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": "dropin-txn-" + GTOPIC,
                "auto.offset.reset": "earliest", "enable.auto.commit": False,
                "isolation.level": "read_committed"})
src.subscribe([GTOPIC])
inputs = []
deadline = time.time() + 60
while len(inputs) < 9 and time.time() < deadline:
    msg = src.poll(0.5)
    if msg is not None and not msg.error():
        inputs.append(msg)
check(len(inputs) == 9, "the transaction's input is consumed")
tp.begin_transaction()
for msg in inputs:
    tp.produce(TTOPIC, b"t-" + msg.value(), partition=0)
positions = src.position(src.assignment())
check(tp.send_offsets_to_transaction(positions, src.consumer_group_metadata(), 30) is None,
      "send_offsets_to_transaction() with the consumer's group metadata")
check(tp.commit_transaction(30) is None, "commit_transaction()")
# Apache Kafka writes the commit markers after EndTxn returns; librdkafka asks for stable
# offsets with read_committed, other clients may briefly see the previous commit: poll.
deadline = time.time() + 30
committed = src.committed([TopicPartition(GTOPIC, i) for i in range(3)], timeout=10)
while [t.offset for t in committed] != [3, 3, 3] and time.time() < deadline:
    time.sleep(0.1)
    committed = src.committed([TopicPartition(GTOPIC, i) for i in range(3)], timeout=10)
check([t.offset for t in committed] == [3, 3, 3], "the offsets commit with the transaction")
src.close()

outputs = sorted(b"t-" + m.value() for m in inputs)
got = read_txn_topic("read_committed", 9)
check(sorted(got) == outputs, "read_committed sees the committed records only")
got = read_txn_topic("read_uncommitted", 12)
check(sorted(got) == sorted(outputs + [b"aborted-%d" % i for i in range(3)]),
      "read_uncommitted sees the aborted records too")

tp.begin_transaction()
tp.produce(TTOPIC, b"zombie", partition=0)
check(tp.flush(30) == 0, "the older instance's records are delivered")
newer = Producer(txn_conf)
newer.init_transactions(30)
fenced = None
try:
    tp.commit_transaction(30)
except KafkaException as e:
    fenced = e.args[0]
check(fenced is not None and fenced.fatal(),
      "a newer instance fences the older one: its commit fails with a fatal KafkaError")
check(not fenced.retriable() and not fenced.txn_requires_abort(),
      "the fatal error is neither retriable nor abortable")
newer.begin_transaction()
newer.produce(TTOPIC, b"fresh", partition=0)
newer.commit_transaction(30)
got = read_txn_topic("read_committed", 10)
check(sorted(got) == sorted(outputs + [b"fresh"]),
      "read_committed sees the newer instance's commit, not the fenced one's records")

# ---- admin: cluster, configs, group offsets, offsets, records -----------------------------

cluster = admin.describe_cluster(request_timeout=30).result(timeout=30)
md = admin.list_topics(timeout=10)
check(cluster.cluster_id == md.cluster_id and sorted(n.id for n in cluster.nodes) == sorted(md.brokers),
      "describe_cluster() reports the cluster id and every broker")
check(all(isinstance(n, Node) and n.port == md.brokers[n.id].port for n in cluster.nodes)
      and cluster.controller.id in md.brokers, "describe_cluster() nodes and controller are Nodes")

described = admin.describe_topics(TopicCollection([TOPIC, TOPIC + "-missing"]), request_timeout=30)
desc = described[TOPIC].result(timeout=30)
check(list(described) == [TOPIC, TOPIC + "-missing"] and desc.name == TOPIC
      and not desc.is_internal and [p.id for p in desc.partitions] == [0, 1, 2],
      "describe_topics() describes each topic's partitions")
check(all(isinstance(n, Node) and (n.host, n.port) == (md.brokers[n.id].host, md.brokers[n.id].port)
          and [r.id for r in p.replicas] == md.topics[TOPIC].partitions[p.id].replicas
          for p in desc.partitions for n in [p.leader, *p.replicas, *p.isr]),
      "describe_topics() leader, replicas and isr are Nodes")
check(isinstance(desc.topic_id, Uuid) and len(str(desc.topic_id)) == 22
      and desc.topic_id.get_most_significant_bits() != 0, "describe_topics() topic_id is a Uuid")
code = None
try:
    described[TOPIC + "-missing"].result(timeout=30)
except KafkaException as e:
    code = e.args[0].code()
check(code == KafkaError.UNKNOWN_TOPIC_OR_PART, "describe_topics() of a missing topic fails")

resource = ConfigResource(ResourceType.TOPIC, TOPIC)
configs = admin.describe_configs([resource], request_timeout=30)[resource].result(timeout=30)
entry = configs["retention.ms"]
check(isinstance(entry, ConfigEntry) and entry.name == "retention.ms" and entry.value is not None,
      "describe_configs() maps config names to ConfigEntry")
check(all(e.is_default == (e.source == ConfigSource.DEFAULT_CONFIG.value) for e in configs.values()),
      "ConfigEntry.source is the ConfigSource value; is_default follows it")
change = ConfigResource(ResourceType.TOPIC, TOPIC, incremental_configs=[
    ConfigEntry("delete.retention.ms", "86400000", incremental_operation=AlterConfigOpType.SET)])
check(admin.incremental_alter_configs([change])[resource].result(timeout=30) is None,
      "incremental_alter_configs() resolves to None")
entry = admin.describe_configs([resource])[resource].result(timeout=30)["delete.retention.ms"]
check(entry.value == "86400000" and entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
      and not entry.is_default, "the altered config is described as DYNAMIC_TOPIC_CONFIG")
code = None
try:
    admin.describe_configs([ConfigResource("topic", TOPIC + "-missing")])[
        ConfigResource("topic", TOPIC + "-missing")].result(timeout=30)
except KafkaException as e:
    code = e.args[0].code()
check(code == KafkaError.UNKNOWN_TOPIC_OR_PART, "describe_configs() of a missing topic fails")

agroup = "dropin-admin-" + TOPIC
futs = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(
    agroup, [TopicPartition(TOPIC, 0, 4), TopicPartition(TOPIC, 1, 7)])], request_timeout=30)
altered = futs[agroup].result(timeout=30)
check(list(futs) == [agroup] and altered.group_id == agroup
      and sorted((t.partition, t.offset, t.error) for t in altered.topic_partitions)
      == [(0, 4, None), (1, 7, None)], "alter_consumer_group_offsets() sets the offsets")
listed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(agroup)])[agroup]
check(sorted((t.partition, t.offset) for t in listed.result(timeout=30).topic_partitions)
      == [(0, 4), (1, 7)], "list_consumer_group_offsets() reads them back")
coord = admin.describe_consumer_groups([agroup], request_timeout=30)[agroup].result(timeout=30).coordinator
check(isinstance(coord, Node) and coord.id in md.brokers
      and (coord.host, coord.port) == (md.brokers[coord.id].host, md.brokers[coord.id].port),
      "describe_consumer_groups() reports the coordinator as a Node")
raised = None
try:
    admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(agroup), ConsumerGroupTopicPartitions("x")])
except ValueError as e:
    raised = e
check(raised is not None, "alter_consumer_group_offsets() takes one group per call (ValueError)")
raised = None
try:
    admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(agroup), ConsumerGroupTopicPartitions("x")])
except ValueError as e:
    raised = e
check(raised is not None, "list_consumer_group_offsets() takes one group per call (ValueError)")
raised = None
try:
    admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(agroup, [TopicPartition(TOPIC, 0, 4)])])
except ValueError as e:
    raised = e
check(raised is not None, "list_consumer_group_offsets() refuses partitions with an offset (ValueError)")

p1 = TopicPartition(TOPIC, 1)
futs = admin.list_offsets({p1: OffsetSpec.earliest()})
earliest = futs[p1].result(timeout=30)
check(list(futs) == [p1] and earliest.offset == 0, "list_offsets() earliest",
      (list(futs), earliest.offset, earliest.timestamp, earliest.leader_epoch))
info = admin.list_offsets({p1: OffsetSpec.latest()})[p1].result(timeout=30)
check((info.offset, info.timestamp) == (10, -1), "list_offsets() latest is the high watermark")
info = admin.list_offsets({p1: OffsetSpec.for_timestamp(1_700_000_000_004)})[p1].result(timeout=30)
check((info.offset, info.timestamp) == (1, 1_700_000_000_004), "list_offsets() for a timestamp")
info = admin.list_offsets({p1: OffsetSpec.max_timestamp()})[p1].result(timeout=30)
check((info.offset, info.timestamp) == (9, 1_700_000_000_028), "list_offsets() max timestamp")

doomed = TopicPartition(TOPIC, 1, 3)
futs = admin.delete_records([doomed], request_timeout=30)
check(list(futs) == [doomed] and futs[doomed].result(timeout=30).low_watermark == 3,
      "delete_records() reports the new low watermark")
check(admin.list_offsets({p1: OffsetSpec.earliest()})[p1].result(timeout=30).offset == 3,
      "list_offsets() earliest after delete_records()")

print("%s: %d checks passed" % (CLIENT, checks))
