#!/usr/bin/env python3
"""Broker-side Fetch service time, without a consumer library in the way.

    fetch_service_time.py HOST:PORT TOPIC PARTITIONS [--repeats N] [--partition-max-bytes B]

Reads every partition of TOPIC from offset 0 to its high watermark with hand-encoded Fetch v4
requests on one connection (max_wait 0, min_bytes 1, max_bytes 50 MiB, one request at a time,
all partitions in every request, partition_max_bytes 1 MiB like the Java consumer) and reports,
per pass, the bytes received, the number of requests and the time from sending each request to
having read its whole response. The client does almost nothing per byte (recv_into a reused
buffer, then a walk over batch headers to find the next offsets), so the numbers are the broker's
service time plus loopback transfer. Prints one JSON line per pass. Standard library only.
"""

import argparse
import json
import socket
import struct
import time

FETCH, FETCH_VERSION = 1, 4


def request(corr, topic, offsets, part_max, client=b"bench-fetch"):
    body = struct.pack(">iiiib", -1, 0, 1, 50 * 1024 * 1024, 0)
    name = topic.encode()
    body += struct.pack(">ih", 1, len(name)) + name + struct.pack(">i", len(offsets))
    for p, off in sorted(offsets.items()):
        body += struct.pack(">iqi", p, off, part_max)
    head = struct.pack(">hhih", FETCH, FETCH_VERSION, corr, len(client)) + client
    return struct.pack(">i", len(head) + len(body)) + head + body


class Reader:
    def __init__(self, sock):
        self.sock = sock
        self.buf = bytearray(64 << 20)

    def frame(self):
        view = memoryview(self.buf)
        got = 0
        while got < 4:
            n = self.sock.recv_into(view[got:4])
            if not n:
                raise ConnectionError("closed")
            got += n
        size = struct.unpack(">i", self.buf[:4])[0]
        if size > len(self.buf):
            self.buf = bytearray(size + (1 << 20))
            view = memoryview(self.buf)
        got = 0
        while got < size:
            n = self.sock.recv_into(view[got:size], size - got)
            if not n:
                raise ConnectionError("closed")
            got += n
        return memoryview(self.buf)[:size]


def parse(resp, offsets):
    """Advances offsets past the whole batches in a Fetch v4 response; returns (hw per partition,
    record bytes)."""
    pos = 4 + 4  # correlation id, throttle time
    (ntopics,) = struct.unpack_from(">i", resp, pos)
    pos += 4
    hws, total = {}, 0
    for _ in range(ntopics):
        (tlen,) = struct.unpack_from(">h", resp, pos)
        pos += 2 + tlen
        (nparts,) = struct.unpack_from(">i", resp, pos)
        pos += 4
        for _ in range(nparts):
            p, err, hw, _lso = struct.unpack_from(">ihqq", resp, pos)
            pos += 22
            if err:
                raise RuntimeError(f"partition {p}: error {err}")
            (naborted,) = struct.unpack_from(">i", resp, pos)
            pos += 4 + max(naborted, 0) * 16
            (rlen,) = struct.unpack_from(">i", resp, pos)
            pos += 4
            hws[p] = hw
            if rlen <= 0:
                continue
            total += rlen
            b, end = pos, pos + rlen
            while b + 12 <= end:
                base, blen = struct.unpack_from(">qi", resp, b)
                if b + 12 + blen > end:
                    break  # partial trailing batch (Kafka may send one)
                (delta,) = struct.unpack_from(">i", resp, b + 23)
                offsets[p] = base + delta + 1
                b += 12 + blen
            pos = end
    return hws, total


def one_pass(addr, topic, partitions, part_max):
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port))) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        r = Reader(s)
        offsets = {p: 0 for p in range(partitions)}
        lat, total, corr = [], 0, 0
        t_start = time.perf_counter()
        while True:
            corr += 1
            t0 = time.perf_counter()
            s.sendall(request(corr, topic, offsets, part_max))
            resp = r.frame()
            lat.append(time.perf_counter() - t0)
            hws, n = parse(resp, offsets)
            total += n
            if all(offsets[p] >= hws.get(p, 0) for p in offsets):
                break
            if n == 0:
                raise RuntimeError(f"no progress at {offsets}, high watermarks {hws}")
        wall = time.perf_counter() - t_start
    lat.sort()
    return {"bytes": total, "requests": len(lat), "seconds": round(wall, 4),
            "mb_per_s": round(total / wall / 1e6, 1),
            "latency_ms_median": round(lat[len(lat) // 2] * 1e3, 2),
            "latency_ms_max": round(lat[-1] * 1e3, 2),
            "latency_ms_sum": round(sum(lat) * 1e3, 1)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("addr")
    ap.add_argument("topic")
    ap.add_argument("partitions", type=int)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--partition-max-bytes", type=int, default=1 << 20)
    a = ap.parse_args()
    for _ in range(a.repeats):
        print(json.dumps(one_pass(a.addr, a.topic, a.partitions, a.partition_max_bytes)), flush=True)


if __name__ == "__main__":
    main()
