"""odradek.schema_registry and the serializing producer/consumer against our registry
(`odradek-broker --schema-registry`, or `odradek-schema-registry` pointed at
ODRADEK_TEST_BOOTSTRAP), and confluent-kafka's own client and serializers against the same
registry: one scenario table run by both clients, and records crossing between the two
libraries' serializers in both directions.

confluent-kafka's parts are skipped when it (with its schema-registry extras) is not installed;
schema-registry/test.sh runs this file in a venv that has it."""
import datetime
import decimal
import json
import os
import re
import select
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

import odradek
from odradek.schema_registry import Schema, SchemaReference, SchemaRegistryClient, SchemaRegistryError
from odradek.schema_registry.avro import AvroDeserializer, AvroSerializer
from odradek.serialization import MessageField, SerializationContext, SerializationError, StringSerializer

from conftest import EXTERNAL_BOOTSTRAP, REPO_ROOT, broker_binary

_LINE = re.compile(rb"listening on (\S+)")


def _target():
    return Path(os.environ.get("CARGO_TARGET_DIR") or REPO_ROOT / "target")


def _registry_binary():
    return Path(os.environ.get("ODRADEK_SCHEMA_REGISTRY_BIN") or _target() / "debug" / "odradek-schema-registry")


def _read_lines(proc, n, timeout=60.0):
    buf, lines = b"", []
    deadline = time.monotonic() + timeout
    fd = proc.stdout.fileno()
    while len(lines) < n:
        left = deadline - time.monotonic()
        if left <= 0 or proc.poll() is not None:
            raise RuntimeError("process did not start: %r" % buf)
        r, _, _ = select.select([fd], [], [], min(left, 0.5))
        if r:
            chunk = os.read(fd, 4096)
            buf += chunk
            lines = buf.split(b"\n")[:-1]
    return [_LINE.search(line).group(1).decode() for line in lines[:n]]


class Stack(object):
    """A broker and a registry: `odradek-broker --schema-registry` (restart() restarts both on
    the same data), or `odradek-schema-registry` beside the external broker (restart() restarts
    the registry, whose state lives in its topic on that broker)."""

    def __init__(self, workdir):
        self.workdir = Path(workdir)
        self.err = open(self.workdir / "stack.stderr.log", "ab")
        self.broker = self.registry = None
        if EXTERNAL_BOOTSTRAP:
            self.bootstrap = EXTERNAL_BOOTSTRAP
            self.topic = "_schemas-py-%d-%d" % (os.getpid(), int(time.time()))
        self.start()

    def start(self):
        if EXTERNAL_BOOTSTRAP:
            self.registry = subprocess.Popen(
                [str(_registry_binary()), "--bootstrap", self.bootstrap, "--listen", "127.0.0.1:0",
                 "--topic", self.topic], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.err)
            self.url = _read_lines(self.registry, 1)[0]
        else:
            self.broker = subprocess.Popen(
                [str(broker_binary()), "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                 "--override", "log.dirs=%s" % (self.workdir / "data"), "--override", "num.partitions=3",
                 "--schema-registry", "127.0.0.1:0"],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.err)
            self.bootstrap, self.url = _read_lines(self.broker, 2)

    def stop(self):
        for p in (self.registry, self.broker):
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(timeout=10)

    def restart(self):
        self.stop()
        self.start()


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    if EXTERNAL_BOOTSTRAP and not _registry_binary().is_file():
        pytest.skip("no %s: cargo build -p odradek-schema-registry" % _registry_binary())
    s = Stack(tmp_path_factory.mktemp("sr"))
    yield s
    s.stop()
    s.err.close()


_n = [0]


@pytest.fixture
def subject(request):
    _n[0] += 1
    return "s%d-%d-%s" % (os.getpid(), _n[0], re.sub(r"\W", "_", request.node.name)[:40])


def _confluent():
    return pytest.importorskip("confluent_kafka.schema_registry")


CLIENTS = ["odradek", "confluent"]


def _client(kind, url):
    if kind == "confluent":
        sr = _confluent()
        return sr.SchemaRegistryClient({"url": url}), sr
    import odradek.schema_registry as sr
    return SchemaRegistryClient({"url": url}), sr


def _avro(fields, name="User"):
    return json.dumps({"type": "record", "name": name, "namespace": "t", "fields": fields})


V1 = _avro([{"name": "id", "type": "long"}])
V2 = _avro([{"name": "id", "type": "long"}, {"name": "name", "type": "string", "default": ""}])
BAD = _avro([{"name": "id", "type": "string"}])


@pytest.mark.parametrize("kind", CLIENTS)
def test_scenario_table(stack, subject, kind):
    client, sr = _client(kind, stack.url)
    S, Ref, Err = sr.Schema, sr.SchemaReference, sr.SchemaRegistryError
    # register, evolve compatibly, refuse an incompatible change with 409
    id1 = client.register_schema(subject, S(V1, "AVRO"))
    assert client.register_schema(subject, S(V1, "AVRO")) == id1
    id2 = client.register_schema(subject, S(V2, "AVRO"))
    assert id2 != id1
    with pytest.raises(Err) as e:
        client.register_schema(subject, S(BAD, "AVRO"))
    assert (e.value.http_status_code, e.value.error_code) == (409, 409)
    assert client.test_compatibility(subject, S(BAD, "AVRO")) is False
    assert client.test_compatibility(subject, S(V2, "AVRO")) is True
    # look up by id and by subject/version
    assert json.loads(client.get_schema(id2).schema_str)["fields"][1]["name"] == "name"
    latest = client.get_latest_version(subject)
    assert (latest.schema_id, latest.version) == (id2, 2)
    v1 = client.get_version(subject, 1)
    assert v1.schema_id == id1
    assert client.lookup_schema(subject, S(V1, "AVRO")).version == 1
    assert client.get_versions(subject) == [1, 2]
    assert subject in client.get_subjects()
    with pytest.raises(Err) as e:
        client.get_version(subject, 7)
    assert e.value.error_code == 40402
    with pytest.raises(Err) as e:
        client.get_schema(987654)
    assert e.value.error_code == 40403
    # compatibility levels
    assert client.set_compatibility(subject, "FULL") == {"compatibility": "FULL"}
    assert client.get_compatibility(subject) == "FULL"
    client.set_compatibility(subject, "BACKWARD")
    # references
    addr = _avro([{"name": "city", "type": "string"}], name="Address")
    client.register_schema(subject + "-addr", S(addr, "AVRO"))
    person = _avro([{"name": "home", "type": "t.Address"}], name="Person")
    pid = client.register_schema(subject + "-person", S(person, "AVRO", [Ref("t.Address", subject + "-addr", 1)]))
    got = client.get_schema(pid)
    assert [(r.name, r.subject, r.version) for r in got.references] == [("t.Address", subject + "-addr", 1)]
    # delete: soft, then hard
    assert client.delete_version(subject, 2) == 2
    assert client.get_versions(subject) == [1]
    assert client.delete_version(subject, 2, permanent=True) == 2
    assert client.delete_subject(subject) == [1]
    with pytest.raises(Err) as e:
        client.get_versions(subject)
    assert e.value.error_code == 40401
    assert client.delete_subject(subject, permanent=True) == [1]
    # JSON Schema and Protobuf
    j1 = json.dumps({"type": "object", "properties": {"a": {"type": "string"}}})
    j2 = json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}})
    client.register_schema(subject + "-json", S(j1, "JSON"))
    with pytest.raises(Err) as e:
        client.register_schema(subject + "-json", S(j2, "JSON"))
    assert e.value.error_code == 409
    p1 = 'syntax = "proto3"; package t; message M { string a = 1; }'
    p2 = 'syntax = "proto3"; package t; message M { string a = 1; int64 b = 2; }'
    client.register_schema(subject + "-proto", S(p1, "PROTOBUF"))
    client.register_schema(subject + "-proto", S(p2, "PROTOBUF"))
    with pytest.raises(Err) as e:
        client.register_schema(subject + "-proto", S("message {", "PROTOBUF"))
    assert e.value.error_code == 42201


def test_bad_input_through_a_client(stack, subject):
    client = SchemaRegistryClient({"url": stack.url})
    for schema in [Schema("{not json", "AVRO"), Schema('{"type": "nope"}', "AVRO"),
                   Schema('"string"', "XML")]:
        with pytest.raises(SchemaRegistryError) as e:
            client.register_schema(subject, schema)
        assert e.value.error_code == 42201, schema
    assert client.get_subjects() is not None


def _roundtrip_conf(stack):
    return {"bootstrap.servers": stack.bootstrap, "linger.ms": 2}


def _consume(conf_extra, topic, n, bootstrap, cls):
    conf = {"bootstrap.servers": bootstrap, "group.id": "g-" + topic, "auto.offset.reset": "earliest"}
    conf.update(conf_extra)
    c = cls(conf)
    c.subscribe([topic])
    out = []
    deadline = time.monotonic() + 30
    while len(out) < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None:
            out.append(m)
    c.close()
    return out


USER = _avro([{"name": "id", "type": "long"}, {"name": "name", "type": "string"},
              {"name": "email", "type": ["null", "string"], "default": None},
              {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
              {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}}])


def _users(n):
    at = datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    return [{"id": i, "name": "user-%d" % i, "email": None if i % 2 else "u%d@x" % i,
             "at": at + datetime.timedelta(seconds=i), "amount": decimal.Decimal("%d.25" % i)} for i in range(n)]


def test_avro_serializing_producer_and_deserializing_consumer(stack, topic_name):
    client = SchemaRegistryClient({"url": stack.url})
    p = odradek.SerializingProducer(dict(_roundtrip_conf(stack), **{
        "key.serializer": StringSerializer(), "value.serializer": AvroSerializer(client, USER)}))
    users = _users(20)
    for u in users:
        p.produce(topic_name, key=str(u["id"]), value=u)
    assert p.flush(30) == 0
    msgs = _consume({"value.deserializer": AvroDeserializer(client)}, topic_name, 20, stack.bootstrap,
                    odradek.DeserializingConsumer)
    assert sorted((m.value() for m in msgs), key=lambda v: v["id"]) == users
    assert client.get_latest_version(topic_name + "-value").version == 1


def test_avro_serializer_options(stack, subject):
    client = SchemaRegistryClient({"url": stack.url})
    ctx = SerializationContext(subject, MessageField.VALUE)
    with pytest.raises(SchemaRegistryError) as e:
        AvroSerializer(client, V1, conf={"auto.register.schemas": False})({"id": 1}, ctx)
    assert e.value.error_code == 40401, "as confluent-kafka: the registry's error, unwrapped"
    client.register_schema(subject + "-value", Schema(V1, "AVRO"))
    data = AvroSerializer(client, V1, conf={"auto.register.schemas": False})({"id": 1}, ctx)
    latest = AvroSerializer(client, None, conf={"use.latest.version": True, "auto.register.schemas": False})
    assert latest({"id": 1}, ctx) == data
    with pytest.raises(ValueError):
        AvroSerializer(client, V1, conf={"use.latest.version": True})
    with pytest.raises(ValueError):
        AvroSerializer(client, V1, conf={"no.such.key": 1})
    rec = AvroSerializer(client, V1, conf={"subject.name.strategy": odradek.schema_registry.record_subject_name_strategy})
    rec({"id": 2}, ctx)
    assert client.get_versions("t.User")
    reader = AvroDeserializer(client, V2)
    assert reader(data, ctx) == {"id": 1, "name": ""}
    with pytest.raises(SerializationError):
        AvroDeserializer(client)(b"\x01bad", ctx)


def test_cross_client_avro_records(stack, subject):
    """confluent-kafka's AvroSerializer -> our AvroDeserializer and back, byte for byte."""
    sr = _confluent()
    from confluent_kafka.schema_registry.avro import AvroDeserializer as CAvroDeserializer
    from confluent_kafka.schema_registry.avro import AvroSerializer as CAvroSerializer
    from confluent_kafka.serialization import MessageField as CField
    from confluent_kafka.serialization import SerializationContext as CContext
    theirs_client = sr.SchemaRegistryClient({"url": stack.url})
    ours_client = SchemaRegistryClient({"url": stack.url})
    theirs_ser, theirs_de = CAvroSerializer(theirs_client, USER), CAvroDeserializer(theirs_client)
    ours_ser, ours_de = AvroSerializer(ours_client, USER), AvroDeserializer(ours_client)
    cctx, octx = CContext(subject, CField.VALUE), SerializationContext(subject, MessageField.VALUE)
    for u in _users(10):
        from_them = theirs_ser(u, cctx)
        from_us = ours_ser(u, octx)
        assert from_them == from_us, "same id, same bytes"
        assert ours_de(from_them, octx) == u
        assert theirs_de(from_us, cctx) == u


def test_cross_client_through_the_broker(stack, topic_name):
    """confluent-kafka's SerializingProducer writes, our DeserializingConsumer reads, and the other way."""
    ck = pytest.importorskip("confluent_kafka")
    _confluent()
    from confluent_kafka.schema_registry import SchemaRegistryClient as CClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer as CAvroDeserializer
    from confluent_kafka.schema_registry.avro import AvroSerializer as CAvroSerializer
    users = _users(10)
    cp = ck.SerializingProducer({"bootstrap.servers": stack.bootstrap,
                                 "value.serializer": CAvroSerializer(CClient({"url": stack.url}), USER)})
    for u in users:
        cp.produce(topic_name, value=u)
    cp.flush(30)
    got = _consume({"value.deserializer": AvroDeserializer(SchemaRegistryClient({"url": stack.url}))},
                   topic_name, 10, stack.bootstrap, odradek.DeserializingConsumer)
    assert sorted((m.value() for m in got), key=lambda v: v["id"]) == users
    back = topic_name + "-back"
    p = odradek.SerializingProducer({"bootstrap.servers": stack.bootstrap,
                                     "value.serializer": AvroSerializer(SchemaRegistryClient({"url": stack.url}), USER)})
    for u in users:
        p.produce(back, value=u)
    assert p.flush(30) == 0
    got = _consume({"value.deserializer": CAvroDeserializer(CClient({"url": stack.url}))}, back, 10,
                   stack.bootstrap, ck.DeserializingConsumer)
    assert sorted((m.value() for m in got), key=lambda v: v["id"]) == users


JSON_SCHEMA = json.dumps({"title": "Order", "type": "object", "additionalProperties": False,
                          "properties": {"id": {"type": "integer"}, "item": {"type": "string"}},
                          "required": ["id"]})


def test_json_serializers_both_ways(stack, subject):
    pytest.importorskip("jsonschema")
    from odradek.schema_registry.json_schema import JSONDeserializer, JSONSerializer
    client = SchemaRegistryClient({"url": stack.url})
    ctx = SerializationContext(subject, MessageField.VALUE)
    ser, de = JSONSerializer(JSON_SCHEMA, client), JSONDeserializer(None, schema_registry_client=client)
    data = ser({"id": 1, "item": "x"}, ctx)
    assert de(data, ctx) == {"id": 1, "item": "x"}
    with pytest.raises(SerializationError):
        ser({"item": "no id"}, ctx)
    assert client.get_latest_version(subject + "-value").schema.schema_type == "JSON"
    sr = pytest.importorskip("confluent_kafka.schema_registry")
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer as CDe
    from confluent_kafka.schema_registry.json_schema import JSONSerializer as CSer
    from confluent_kafka.serialization import MessageField as CField
    from confluent_kafka.serialization import SerializationContext as CContext
    cclient = sr.SchemaRegistryClient({"url": stack.url})
    cctx = CContext(subject, CField.VALUE)
    theirs = CSer(JSON_SCHEMA, cclient)({"id": 2, "item": "y"}, cctx)
    assert de(theirs, ctx) == {"id": 2, "item": "y"}
    assert CDe(JSON_SCHEMA)(data, cctx) == {"id": 1, "item": "x"}


def _proto_class():
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    fdp = descriptor_pb2.FileDescriptorProto(name="odradek_test/order.proto", package="odradek.test", syntax="proto3")
    m = fdp.message_type.add(name="Order")
    m.field.add(name="id", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
                label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    m.field.add(name="item", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    inner = m.nested_type.add(name="Line")
    inner.field.add(name="sku", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                    label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    order = message_factory.GetMessageClass(pool.FindMessageTypeByName("odradek.test.Order"))
    line = message_factory.GetMessageClass(pool.FindMessageTypeByName("odradek.test.Order.Line"))
    return order, line


def test_protobuf_serializers_both_ways(stack, subject):
    pytest.importorskip("google.protobuf")
    from odradek.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
    Order, Line = _proto_class()
    client = SchemaRegistryClient({"url": stack.url})
    ctx = SerializationContext(subject, MessageField.VALUE)
    data = ProtobufSerializer(Order, client)(Order(id=7, item="x"), ctx)
    assert data[5:6] == b"\x00", "message index [0] is one zero byte"
    assert ProtobufDeserializer(Order)(data, ctx) == Order(id=7, item="x")
    nested = ProtobufSerializer(Line, client, conf={"subject.name.strategy": odradek.schema_registry.topic_record_subject_name_strategy})(Line(sku="a"), ctx)
    assert nested[5:8] == b"\x04\x00\x00", "indexes [0, 0] for the first nested message"
    assert ProtobufDeserializer(Line)(nested, ctx) == Line(sku="a")
    sr = pytest.importorskip("confluent_kafka.schema_registry")
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer as CDe
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer as CSer
    from confluent_kafka.serialization import MessageField as CField
    from confluent_kafka.serialization import SerializationContext as CContext
    cclient = sr.SchemaRegistryClient({"url": stack.url})
    cctx = CContext(subject, CField.VALUE)
    theirs = CSer(Order, cclient, {"use.deprecated.format": False})(Order(id=8, item="y"), cctx)
    assert theirs == ProtobufSerializer(Order, client)(Order(id=8, item="y"), ctx)
    assert ProtobufDeserializer(Order)(theirs, ctx) == Order(id=8, item="y")
    assert CDe(Order, {"use.deprecated.format": False}, schema_registry_client=cclient)(data, cctx) == Order(id=7, item="x")


def test_schemas_survive_a_restart(stack, subject):
    client = SchemaRegistryClient({"url": stack.url})
    sid = client.register_schema(subject, Schema(V1, "AVRO"))
    stack.restart()
    client = SchemaRegistryClient({"url": stack.url})
    assert client.get_schema(sid).schema_str == V1
    assert client.get_latest_version(subject).schema_id == sid


def test_avro_values_match_fastavro(stack):
    fastavro = pytest.importorskip("fastavro")
    import io
    from odradek._odradek import AvroSchema
    schema = json.loads(USER)
    schema["fields"] += [{"name": "u", "type": {"type": "string", "logicalType": "uuid"}},
                         {"name": "d", "type": {"type": "int", "logicalType": "date"}},
                         {"name": "m", "type": {"type": "map", "values": {"type": "array", "items": "double"}}}]
    parsed = fastavro.parse_schema(schema)
    ours = AvroSchema(json.dumps(schema))
    for u in _users(5):
        u.update(u=uuid.UUID(int=u["id"] + 1), d=datetime.date(2020, 2, 29), m={"k": [1.5, -2.0]})
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, u)
        assert ours.encode(u) == buf.getvalue()
        assert ours.decode(buf.getvalue()) == fastavro.schemaless_reader(io.BytesIO(buf.getvalue()), parsed)


@pytest.mark.parametrize("kind", CLIENTS)
def test_serialization_module_same_script(kind):
    """The same script on confluent_kafka.serialization and odradek.serialization."""
    if kind == "confluent":
        ser = pytest.importorskip("confluent_kafka.serialization")
    else:
        import odradek.serialization as ser
    ctx = ser.SerializationContext("t", ser.MessageField.VALUE, [("h", b"v")])
    assert (ctx.topic, ctx.field, str(ser.MessageField.KEY)) == ("t", "value", "key")
    out = [ser.StringSerializer()("héllo", ctx), ser.StringSerializer("latin-1")("héllo", ctx),
           ser.IntegerSerializer()(-7, ctx), ser.DoubleSerializer()(2.5, ctx),
           ser.StringSerializer()(None, ctx)]
    assert out == ["héllo".encode(), "héllo".encode("latin-1"), b"\xff\xff\xff\xf9",
                   b"@\x04\x00\x00\x00\x00\x00\x00", None]
    assert ser.StringDeserializer()(out[0], ctx) == "héllo"
    assert ser.IntegerDeserializer()(out[2], ctx) == -7
    assert ser.DoubleDeserializer()(out[3], ctx) == 2.5
    for bad in (lambda: ser.IntegerSerializer()(2 ** 40, ctx), lambda: ser.IntegerDeserializer()(b"\x00", ctx),
                lambda: ser.DoubleSerializer()("x", ctx), lambda: ser.StringDeserializer()(b"\xff", ctx)):
        with pytest.raises(ser.SerializationError):
            bad()
    assert issubclass(ser.SerializationError, Exception)
