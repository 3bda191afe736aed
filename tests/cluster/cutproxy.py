#!/usr/bin/env python3
"""A TCP forwarder in front of one Kafka node that the fault harness can cut off.

    cutproxy.py LISTEN_PORT UPSTREAM_PORT

Listens on 127.0.0.1:LISTEN_PORT and forwards every connection to 127.0.0.1:UPSTREAM_PORT.
SIGUSR1 cuts the node off: nothing is forwarded in either direction any more, new connections
are accepted and then left silent (a black hole, as a dead network path looks to a client:
requests time out, nothing is refused). SIGUSR2 heals it: connections that were open during
the cut are closed (their in-flight bytes are lost, as on a real partition) and new ones are
forwarded again. SIGTERM stops the proxy. Prints `ready` on stdout once it listens.
"""

import asyncio
import signal
import sys


class Proxy:
    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.cut = False
        # Each open connection's two writers, closed on heal when the cut caught it.
        self.links: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter | None]] = set()
        self.caught: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter | None]] = set()
        self.healed = asyncio.Event()

    def set_cut(self) -> None:
        self.cut = True
        self.healed.clear()
        self.caught |= self.links

    def heal(self) -> None:
        self.cut = False
        for client, upstream in self.caught:
            client.close()
            if upstream is not None:
                upstream.close()
        self.caught.clear()
        self.healed.set()

    async def pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                while self.cut:
                    # Hold the bytes until the heal closes this connection.
                    await self.healed.wait()
                    return
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.cut:
            link = (writer, None)
            self.links.add(link)
            self.caught.add(link)
            await self.healed.wait()
            self.links.discard(link)
            writer.close()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            writer.close()
            return
        link = (writer, up_writer)
        self.links.add(link)
        if self.cut:
            self.caught.add(link)
        await asyncio.gather(self.pipe(reader, up_writer), self.pipe(up_reader, writer))
        self.links.discard(link)
        self.caught.discard(link)


async def main() -> None:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    listen_port, upstream_port = int(sys.argv[1]), int(sys.argv[2])
    proxy = Proxy(upstream_port)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGUSR1, proxy.set_cut)
    loop.add_signal_handler(signal.SIGUSR2, proxy.heal)
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    server = await asyncio.start_server(proxy.serve, "127.0.0.1", listen_port)
    print("ready", flush=True)
    async with server:
        await stop.wait()


if __name__ == "__main__":
    asyncio.run(main())
