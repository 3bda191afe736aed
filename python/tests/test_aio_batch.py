"""asyncio clients (odradek.aio) and Producer.produce_batch."""
import asyncio
import collections

import pytest

import odradek
from odradek import KafkaError, KafkaException, Producer, TopicPartition
from odradek.aio import AIOConsumer, AIOProducer

from conftest import consume_all


def test_aio_send_resolves_to_delivered_message(producer_conf, topic):
    async def main():
        p = AIOProducer(producer_conf)
        msg = await p.send(topic, b"hello", key=b"k", partition=1, headers=[("h", b"v")])
        assert msg.error() is None
        assert (msg.topic(), msg.partition(), msg.offset()) == (topic, 1, 0)
        assert msg.value() == b"hello" and msg.key() == b"k"
        futs = [p.send(topic, b"m-%d" % i, partition=0) for i in range(500)]
        done = await asyncio.gather(*futs)
        assert [m.offset() for m in done] == list(range(500))
        assert await p.flush() == 0
        await p.close()

    asyncio.run(main())


def test_aio_send_errors_raise_kafka_exception(producer_conf, topic):
    async def main():
        p = AIOProducer(dict(producer_conf, **{"max.request.size": 1000}))
        with pytest.raises(KafkaException) as ei:
            await p.send(topic, b"x" * 5000)
        assert ei.value.args[0].code() == KafkaError.MSG_SIZE_TOO_LARGE
        await p.close()

    asyncio.run(main())


def test_aio_send_reports_delivery_failures(no_autocreate, topic):
    bootstrap, conf = no_autocreate

    async def main():
        p = AIOProducer(dict(conf, **{"bootstrap.servers": bootstrap, "max.block.ms": 1000}))
        with pytest.raises(KafkaException) as ei:
            await p.send(topic + "-missing", b"x")
        assert ei.value.args[0].code() == KafkaError._UNKNOWN_TOPIC
        await p.close()

    asyncio.run(main())


def test_aio_cancelled_send_is_harmless(producer_conf, topic):
    async def main():
        p = AIOProducer(producer_conf)
        fut = p.send(topic, b"x")
        fut.cancel()
        other = await p.send(topic, b"y")
        assert other.error() is None
        assert await p.flush(5) == 0
        await p.close()

    asyncio.run(main())


def test_aio_loop_is_not_blocked(producer_conf, topic):
    async def main():
        p = AIOProducer(producer_conf)
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.001)

        t = asyncio.ensure_future(ticker())
        await asyncio.gather(*(p.send(topic, b"%d" % i) for i in range(2000)))
        t.cancel()
        assert ticks > 0
        await p.close()

    asyncio.run(main())


def test_aio_consumer_async_for(producer_conf, consumer_conf, topic):
    async def main():
        p = AIOProducer(producer_conf)
        await asyncio.gather(*(p.send(topic, b"v%d" % i, partition=2) for i in range(50)))
        await p.close()
        c = AIOConsumer(dict(consumer_conf, **{"enable.partition.eof": True}))
        c.assign([TopicPartition(topic, 2, odradek.OFFSET_BEGINNING)])
        got = []
        async for msg in c:
            if msg.error() is not None:
                assert msg.error().code() == KafkaError._PARTITION_EOF
                break
            got.append(msg.value())
        assert got == [b"v%d" % i for i in range(50)]
        assert await c.poll(0.2) is None
        wm = await c.get_watermark_offsets(TopicPartition(topic, 2))
        assert wm == (0, 50)
        await c.close()

    asyncio.run(main())


def test_aio_consumer_iteration_ends_on_close(consumer_conf, topic):
    async def main():
        c = AIOConsumer(consumer_conf)
        c.assign([TopicPartition(topic, 0, odradek.OFFSET_END)])
        got = []

        async def reader():
            async for msg in c:
                got.append(msg)

        task = asyncio.ensure_future(reader())
        await asyncio.sleep(0.3)
        await c.close()
        await asyncio.wait_for(task, 5)
        assert got == []

    asyncio.run(main())


def test_aio_requires_a_loop(producer_conf):
    with pytest.raises(RuntimeError, match="event loop"):
        AIOProducer(producer_conf)


def test_produce_batch_values_and_keys(producer_conf, consumer_conf, topic):
    p = Producer(producer_conf)
    reports = collections.Counter()
    values = [b"b-%d" % i for i in range(1000)]
    keys = [b"k-%d" % (i % 10) for i in range(1000)]
    n = p.produce_batch(topic, values, keys=keys,
                        on_delivery=lambda e, m: reports.update([(e is None, m.value())]))
    assert n == 1000
    assert p.flush(20) == 0
    assert len(reports) == 1000 and all(ok for ok, _ in reports) and set(reports.values()) == {1}
    n = p.produce_batch(topic, ["s-%d" % i for i in range(10)], partition=1)
    assert n == 10
    assert p.flush(10) == 0
    c = odradek.Consumer(consumer_conf)
    c.assign([TopicPartition(topic, 1, 0)])
    got = [m.value() for m in consume_all(c, 1000) if m.value().startswith(b"s-")]
    assert got == [b"s-%d" % i for i in range(10)]
    c.close()


def test_produce_batch_confluent_style_dicts(producer_conf, topic):
    p = Producer(producer_conf)
    got = []
    msgs = [
        {"value": b"a", "key": b"k1"},
        {"value": "b", "partition": 2, "callback": lambda e, m: got.append(("own", m.partition()))},
        {"value": b"c", "timestamp": 1_600_000_000_000},
        {"value": b"x" * 5000},
    ]
    big = Producer(dict(producer_conf, **{"max.request.size": 1000}))
    big.produce(topic, b"warm up metadata")
    big.flush(10)
    n = big.produce_batch(topic, msgs, on_delivery=lambda e, m: got.append((e and e.name(), m.value())))
    assert n == 3
    assert msgs[3]["_error"].code() == KafkaError.MSG_SIZE_TOO_LARGE
    assert big.flush(10) == 0
    assert ("own", 2) in got
    assert (None, b"a") in got and ("MSG_SIZE_TOO_LARGE", b"x" * 5000) in got
    with pytest.raises(TypeError):
        p.produce_batch(topic, "not a list")
    with pytest.raises(TypeError):
        p.produce_batch(topic, [1, 2, 3])
    with pytest.raises(ValueError):
        p.produce_batch(topic, [b"a"], keys=[b"1", b"2"])
