"""librdkafka (confluent-kafka) as a peer the Rust suite drives step by step.

Reads one JSON command per line on stdin and answers one JSON line on stdout, so a test can
interleave librdkafka calls with Odradek calls (zombie fencing needs exactly that).

Commands ({"op": ...}):
  producer  bootstrap, transactional_id   create the transactional producer
  init                                    init_transactions
  begin                                   begin_transaction
  send      topic, partition, values      produce and flush (errors of deliveries are reported)
  commit / abort                          commit_transaction / abort_transaction
  consume   bootstrap, topic, partitions, isolation, markers
            read every partition from the beginning until it holds the marker value
            (a record whose value is `markers`), return the values before the markers
  close     flush and exit

Answers: {"ok": true, ...} or {"ok": false, "fatal": bool, "abortable": bool,
"retriable": bool, "code": "NAME", "error": "text"}.
"""
import json
import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

TIMEOUT = 30.0


def failure(err):
    if isinstance(err, KafkaException):
        err = err.args[0]
    if isinstance(err, KafkaError):
        return {
            "ok": False,
            "fatal": err.fatal(),
            "abortable": err.txn_requires_abort(),
            "retriable": err.retriable(),
            "code": err.name(),
            "error": err.str(),
        }
    return {"ok": False, "fatal": False, "abortable": False, "retriable": False,
            "code": type(err).__name__, "error": str(err)}


class Peer:
    def __init__(self):
        self.producer = None

    def producer_op(self, cmd):
        self.producer = Producer({
            "bootstrap.servers": cmd["bootstrap"],
            "transactional.id": cmd["transactional_id"],
            "transaction.timeout.ms": 30000,
            "linger.ms": 5,
        })
        return {"ok": True}

    def send(self, cmd):
        errors = []

        def report(err, _msg):
            if err is not None:
                errors.append(err)

        for value in cmd["values"]:
            self.producer.produce(cmd["topic"], value.encode(), partition=cmd["partition"],
                                  on_delivery=report)
        left = self.producer.flush(TIMEOUT)
        if errors:
            return failure(errors[0])
        if left:
            return {"ok": False, "fatal": False, "abortable": False, "retriable": True,
                    "code": "_TIMED_OUT", "error": "%d records not delivered" % left}
        return {"ok": True}

    def consume(self, cmd):
        consumer = Consumer({
            "bootstrap.servers": cmd["bootstrap"],
            "group.id": "rdkafka-peer-reader",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": cmd["isolation"],
        })
        partitions = list(range(cmd["partitions"]))
        consumer.assign([TopicPartition(cmd["topic"], p, 0) for p in partitions])
        values = []
        open_partitions = set(partitions)
        deadline = time.monotonic() + 60
        try:
            while open_partitions and time.monotonic() < deadline:
                msg = consumer.poll(0.2)
                if msg is None:
                    continue
                if msg.error():
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        continue
                    return failure(msg.error())
                if msg.partition() not in open_partitions:
                    continue
                value = (msg.value() or b"").decode()
                if value == cmd["markers"]:
                    open_partitions.discard(msg.partition())
                else:
                    values.append(value)
        finally:
            consumer.close()
        if open_partitions:
            return {"ok": False, "fatal": False, "abortable": False, "retriable": True,
                    "code": "_TIMED_OUT", "error": "no marker in partitions %s" % sorted(open_partitions)}
        return {"ok": True, "values": values}

    def handle(self, cmd):
        op = cmd["op"]
        try:
            if op == "producer":
                return self.producer_op(cmd)
            if op == "init":
                self.producer.init_transactions(TIMEOUT)
            elif op == "begin":
                self.producer.begin_transaction()
            elif op == "send":
                return self.send(cmd)
            elif op == "commit":
                self.producer.commit_transaction(TIMEOUT)
            elif op == "abort":
                self.producer.abort_transaction(TIMEOUT)
            elif op == "consume":
                return self.consume(cmd)
            else:
                return {"ok": False, "fatal": False, "abortable": False, "retriable": False,
                        "code": "BAD_COMMAND", "error": "unknown op %r" % op}
            return {"ok": True}
        except (KafkaException, KafkaError) as exc:
            return failure(exc)


def main():
    peer = Peer()
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        cmd = json.loads(line)
        if cmd["op"] == "close":
            break
        print(json.dumps(peer.handle(cmd)), flush=True)


if __name__ == "__main__":
    main()
