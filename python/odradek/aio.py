"""asyncio clients.

``AIOProducer.send()`` returns an :class:`asyncio.Future` that resolves to the delivered
:class:`~odradek.Message` (topic, partition, offset, timestamp) or raises
:class:`~odradek.KafkaException`. Futures are completed from Odradek's runtime threads through
``loop.call_soon_threadsafe``, in batches: no thread per call, and the event loop never blocks.

``AIOConsumer`` is iterated with ``async for msg in consumer``; it yields what
:meth:`odradek.Consumer.poll` returns (records, and events such as partition EOF with
``msg.error()`` set). Fetching happens on the runtime; the loop only picks up the results.
It joins consumer groups with :meth:`AIOConsumer.subscribe`: the rebalance callbacks
(``on_assign(consumer, partitions)``, ...) are plain functions that receive the underlying
:class:`odradek.Consumer` and run on the event loop inside :meth:`AIOConsumer.poll` (during
``unsubscribe`` / ``close``, on the executor thread that waits for the group); ``on_commit``
from the configuration likewise.
"""

import asyncio
import functools
from typing import Any, Callable, Dict, List, Optional, Union

from ._odradek import (
    Consumer,
    ConsumerGroupMetadata,
    KafkaException,
    Message,
    TopicPartition,
    _AIOProducer,
)

__all__ = ["AIOProducer", "AIOConsumer"]

_Payload = Union[str, bytes, None]
_Headers = Union[Dict[str, _Payload], List[Any], None]
_Rebalance = Optional[Callable[[Consumer, List[TopicPartition]], Any]]


def _running_loop(loop: Optional[asyncio.AbstractEventLoop]) -> asyncio.AbstractEventLoop:
    if loop is not None:
        return loop
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        raise RuntimeError(
            "create odradek.aio clients inside a running event loop (or pass loop=...)"
        ) from None


class AIOProducer:
    """An asyncio producer. Configuration as for :class:`odradek.Producer`."""

    def __init__(
        self,
        conf: Optional[Dict[str, Any]] = None,
        *,
        loop: Optional[asyncio.AbstractEventLoop] = None,
        **kwargs: Any,
    ) -> None:
        self._loop = _running_loop(loop)
        self._core = _AIOProducer(self._loop, conf, **kwargs)

    def send(
        self,
        topic: str,
        value: _Payload = None,
        key: _Payload = None,
        partition: int = -1,
        timestamp: int = 0,
        headers: _Headers = None,
    ) -> "asyncio.Future[Message]":
        """Produces a message now; the returned future resolves to its delivery report."""
        fut: "asyncio.Future[Message]" = self._loop.create_future()
        try:
            self._core.send(fut, topic, value, key, partition, timestamp, headers)
        except BufferError:
            # The queue is full (queue.buffering.max.messages): wait for room without
            # blocking the loop, then send.
            task = asyncio.ensure_future(
                self._send_when_room(fut, topic, value, key, partition, timestamp, headers)
            )
            task.add_done_callback(_consume_task_exception)
        except KafkaException as e:
            fut.set_exception(e)
        return fut

    async def _send_when_room(self, fut: "asyncio.Future[Message]", *args: Any) -> None:
        delay = 0.001
        while True:
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.05)
            try:
                self._core.send(fut, *args)
                return
            except BufferError:
                continue
            except KafkaException as e:
                if not fut.done():
                    fut.set_exception(e)
                return

    async def flush(self, timeout: Optional[float] = None) -> int:
        """Waits until every message sent so far is delivered; returns the number still
        outstanding (0 unless ``timeout`` passed first)."""
        fut: "asyncio.Future[int]" = self._loop.create_future()
        self._core.flush(fut)
        if timeout is None or timeout < 0:
            return await fut
        try:
            return await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            return len(self._core)

    async def close(self) -> None:
        """Flushes and closes the producer."""
        await self.flush()
        fut: "asyncio.Future[int]" = self._loop.create_future()
        self._core.close(fut)
        await fut

    async def list_topics(self, topic: Optional[str] = None, timeout: float = -1) -> Any:
        """Cluster metadata (see :meth:`odradek.Producer.list_topics`)."""
        return await self._loop.run_in_executor(None, self._core.list_topics, topic, timeout)

    def __len__(self) -> int:
        return len(self._core)

    async def __aenter__(self) -> "AIOProducer":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


def _consume_task_exception(task: "asyncio.Future[Any]") -> None:
    if not task.cancelled():
        task.exception()


class AIOConsumer:
    """An asyncio consumer (``assign`` or ``subscribe``). Configuration as for
    :class:`odradek.Consumer`."""

    #: Longest single fetch on the runtime before the loop looks again.
    FETCH_SLICE = 1.0

    def __init__(
        self,
        conf: Optional[Dict[str, Any]] = None,
        *,
        loop: Optional[asyncio.AbstractEventLoop] = None,
        **kwargs: Any,
    ) -> None:
        self._loop = _running_loop(loop)
        self._consumer = Consumer(conf, **kwargs)
        self._closed = False

    @property
    def consumer(self) -> Consumer:
        """The underlying synchronous consumer (assign, seek, pause, ... are non-blocking)."""
        return self._consumer

    def assign(self, partitions: List[TopicPartition]) -> None:
        self._consumer.assign(partitions)

    def unassign(self) -> None:
        self._consumer.unassign()

    def assignment(self) -> List[TopicPartition]:
        return self._consumer.assignment()

    def seek(self, partition: TopicPartition) -> None:
        self._consumer.seek(partition)

    def pause(self, partitions: List[TopicPartition]) -> None:
        self._consumer.pause(partitions)

    def resume(self, partitions: List[TopicPartition]) -> None:
        self._consumer.resume(partitions)

    def subscribe(
        self,
        topics: List[str],
        on_assign: _Rebalance = None,
        on_revoke: _Rebalance = None,
        on_lost: _Rebalance = None,
    ) -> None:
        """Joins the group for ``topics`` (see :meth:`odradek.Consumer.subscribe`)."""
        self._consumer.subscribe(topics, on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)

    async def unsubscribe(self) -> None:
        """Leaves the group (the revoke callback runs on the executor thread that waits)."""
        await self._loop.run_in_executor(None, self._consumer._unsubscribe_now)

    async def commit(
        self,
        message: Optional[Message] = None,
        offsets: Optional[List[TopicPartition]] = None,
        asynchronous: bool = True,
    ) -> Optional[List[TopicPartition]]:
        """Commits (see :meth:`odradek.Consumer.commit`); a synchronous commit waits without
        blocking the loop."""
        if asynchronous:
            return self._consumer.commit(message=message, offsets=offsets, asynchronous=True)
        call = functools.partial(
            self._consumer.commit, message=message, offsets=offsets, asynchronous=False
        )
        return await self._loop.run_in_executor(None, call)

    async def committed(
        self, partitions: List[TopicPartition], timeout: Optional[float] = None
    ) -> List[TopicPartition]:
        """The group's committed offsets."""
        return await self._loop.run_in_executor(
            None, self._consumer.committed, partitions, timeout
        )

    def store_offsets(
        self, message: Optional[Message] = None, offsets: Optional[List[TopicPartition]] = None
    ) -> None:
        """Stores offsets for the next commit (``enable.auto.offset.store=false``)."""
        self._consumer.store_offsets(message=message, offsets=offsets)

    def consumer_group_metadata(self) -> ConsumerGroupMetadata:
        return self._consumer.consumer_group_metadata()

    def memberid(self) -> Optional[str]:
        return self._consumer.memberid()

    async def position(self, partitions: List[TopicPartition]) -> List[TopicPartition]:
        return await self._loop.run_in_executor(None, self._consumer.position, partitions)

    async def get_watermark_offsets(
        self, partition: TopicPartition, timeout: Optional[float] = None
    ) -> Any:
        return await self._loop.run_in_executor(
            None, self._consumer.get_watermark_offsets, partition, timeout
        )

    async def offsets_for_times(
        self, partitions: List[TopicPartition], timeout: Optional[float] = None
    ) -> List[TopicPartition]:
        return await self._loop.run_in_executor(
            None, self._consumer.offsets_for_times, partitions, timeout
        )

    async def poll(self, timeout: Optional[float] = None) -> Optional[Message]:
        """The next message or event, or None after ``timeout`` seconds (None: wait)."""
        deadline = None if timeout is None or timeout < 0 else self._loop.time() + timeout
        while True:
            msg = self._consumer._take()
            if msg is not None:
                return msg
            if deadline is None:
                wait = self.FETCH_SLICE
            else:
                wait = min(self.FETCH_SLICE, deadline - self._loop.time())
                if wait <= 0:
                    return None
            fut: "asyncio.Future[int]" = self._loop.create_future()
            self._consumer._fetch_async(fut, self._loop, wait)
            await fut

    async def consume(self, num_messages: int = 1, timeout: Optional[float] = None) -> List[Message]:
        """Up to ``num_messages`` messages; waits up to ``timeout`` for the first one."""
        first = await self.poll(timeout)
        if first is None:
            return []
        out = [first]
        while len(out) < num_messages:
            msg = self._consumer._take()
            if msg is None:
                break
            out.append(msg)
        return out

    def __aiter__(self) -> "AIOConsumer":
        return self

    async def __anext__(self) -> Message:
        """The next message or event; iteration ends when the consumer is closed."""
        if self._closed:
            raise StopAsyncIteration
        try:
            msg = await self.poll(None)
        except RuntimeError:
            if self._closed:
                raise StopAsyncIteration from None
            raise
        assert msg is not None
        return msg

    async def close(self) -> None:
        self._closed = True
        await self._loop.run_in_executor(None, self._consumer.close)

    async def __aenter__(self) -> "AIOConsumer":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
