#!/usr/bin/env python3
"""Generate third-party RecordBatch v2 (magic 2) test vectors for Odradek.

Every ``*.bin`` file in this directory is written by an encoder that is NOT
Odradek's own code:

* ``<codec>.bin``, ``<codec>_multi.bin``, ``<codec>_truncated.bin``,
  ``gzip_transactional.bin``, ``snappy_multiblock.bin``,
  ``lz4_multiblock.bin``: kafka-python's pure-Python
  ``kafka.record.default_records.DefaultRecordBatchBuilder`` (``build()``).
* ``librdkafka_<codec>.bin``: librdkafka (the copy bundled in the
  confluent-kafka wheel), captured from its built-in mock broker
  (``test.mock.num.brokers``) with a plain Fetch v4 request on loopback.
* ``snappy_raw.bin``: kafka-python's uncompressed records section re-packed
  with *raw* (unframed) snappy from python-snappy, with the batch length and
  CRC-32C recomputed by this script (see ``repack_raw_snappy``).

``manifest.json`` describes every file. Its expectations (offsets, producer
fields, attributes, timestamps, keys, values, headers) are derived from the
INPUTS handed to the encoders, not from decoding the output; only ``crc``,
``size_bytes``, ``file_offset``, ``sha256`` and the ``observed`` blocks are
read back from the bytes. After writing, the script decodes every file with
kafka-python's ``MemoryRecords``/``DefaultRecordBatch`` reader, validates the
CRCs (also with the independent ``crc32c`` package) and asserts the result
equals the manifest.

How to regenerate (from the repository root; nothing is installed into the
repo)::

    python3 -m venv /tmp/odradek-vectors-venv
    /tmp/odradek-vectors-venv/bin/pip install \\
        kafka-python==3.0.12 python-snappy==0.7.3 cramjam==2.14.0 \\
        lz4==4.4.5 zstandard==0.25.0 crc32c==2.9.post0 confluent-kafka==2.16.1
    /tmp/odradek-vectors-venv/bin/python \\
        client-core/tests/data/record_batches/generate.py

Versions used for the checked-in files (Python 3.11.7, Linux x86_64):
kafka-python 3.0.12, python-snappy 0.7.3 (a wrapper over cramjam 2.14.0,
i.e. the Rust ``snap`` implementation), lz4 4.4.5 (liblz4 1.9.4),
zstandard 0.25.0 (libzstd 1.5.7), crc32c 2.9.post0, confluent-kafka 2.16.1
(bundled librdkafka 2.16.0), zlib 1.2.13 (Python's gzip module).
The exact versions found at run time are written to ``manifest.json``.

Determinism: Python's ``gzip.GzipFile`` stamps the current time into the gzip
header (MTIME). To make regeneration reproducible the ``gzip`` module seen by
``kafka.codec`` is swapped for a shim that passes a fixed ``mtime``
(``GZIP_MTIME``); nothing else about kafka-python's output is altered. The
rest is deterministic for fixed library versions; other zlib/liblz4/libzstd
versions may produce different (equally valid) compressed bytes and CRCs.
"""

import contextlib
import gzip
import hashlib
import json
import socket
import struct
import sys
import time
from pathlib import Path

import crc32c as crc32c_pkg
import kafka
import kafka.codec
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

OUT_DIR = Path(__file__).resolve().parent

# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------

T0 = 1_700_000_000_000  # 2023-11-14T22:13:20Z, epoch millis
GZIP_MTIME = T0 // 1000
PRODUCER_ID = 4242
PRODUCER_EPOCH = 3
BASE_SEQUENCE = 17
MULTI_BASE_OFFSET = 100  # base offset of the first batch in *_multi.bin

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
HEADER_SIZE = 61  # fixed RecordBatch v2 header, up to and including RecordCount
CRC_COVERED_FROM = 21  # CRC-32C covers Attributes .. end of batch

_WORDS = (b"kafka odradek record batch offset partition leader epoch producer "
          b"sequence header timestamp compression snappy gzip lz4 zstd fetch "
          b"broker topic consumer varint tombstone").split()


def pseudo_text(n, seed):
    """n bytes of word salad from a fixed 64-bit LCG (compressible, not trivial)."""
    state = seed
    out = bytearray()
    while len(out) < n:
        state = (state * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
        out += _WORDS[(state >> 33) % len(_WORDS)] + b" "
    return bytes(out[:n])


# Values that appear in many batches are stored once in the manifest's
# top-level "blobs" and referenced by name ("value_blob") to keep it small.
BLOBS = {"text5000": pseudo_text(5000, seed=1)}


def rec(delta, ts, key, value, headers=(), value_repeat=None):
    return {"delta": delta, "ts": ts, "key": key, "value": value,
            "headers": list(headers), "value_repeat": value_repeat}


def rec_value_repeat(unit, times):
    return {"unit": unit, "times": times}


# Batch A: the "full" batch, 10 records, offset deltas 0..9.
BATCH_A = [
    rec(0, T0, b"key-0", b"hello, kafka"),
    rec(1, T0 + 1, None, b"value with a null key", [("trace-id", b"abc123")]),
    rec(2, T0 + 2, b"tombstone-key", None),  # null value = tombstone
    rec(3, T0 - 5_000, b"", b""),  # empty key and value; timestamp < first
    rec(4, T0 + 10, b"big", BLOBS["text5000"],
        [("content-type", b"text/plain")]),
    rec(5, T0 + 3_600_000, "ключ-🔑".encode("utf-8"),
        "Grüße, 世界 — ünïcödé ✓".encode("utf-8"),
        [("émoji-🔑", "värde".encode("utf-8"))]),  # max timestamp (+1h)
    rec(6, T0 + 7, bytes([0x00, 0xFF, 0x80, 0x7F, 0x01, 0xFE, 0x00, 0x00]),
        bytes(range(256))),  # binary key/value, all byte values
    rec(7, T0 + 8, b"dup-headers", b"same key repeated",
        [("dup", b"first"), ("x", b"1"), ("dup", b"second"), ("dup", b"")]),
    rec(8, T0 - 1, b"k8", b"v8",
        [("null-header", None), ("", b"empty-key")]),  # null header value, empty header key
    rec(9, T0 + 9, None, None, [("dup", b"a"), ("dup", b"b")]),  # null key + tombstone
]

# Batch B: 3 records with a gap in offset deltas (0, 1, 3) like a compacted
# log, so record_count (3) != last_offset_delta + 1 (4).
T1 = T0 + 7_200_000
BATCH_B = [
    rec(0, T1, b"b-0", pseudo_text(400, seed=2), [("dup", b"1"), ("dup", b"2")]),
    rec(1, T1 + 5, b"b-1", None),
    rec(3, T1 - 100, None, pseudo_text(300, seed=3), [("h", None)]),
]

# Batch C: 4 records, contiguous deltas.
T2 = T0 + 10_800_000
BATCH_C = [
    rec(0, T2, b"c-0", pseudo_text(250, seed=4)),
    rec(1, T2 + 1, b"c-1", pseudo_text(250, seed=5), [("k", b"v")]),
    rec(2, T2 + 2, b"c-2", b""),
    rec(3, T2 + 3, b"c-3", pseudo_text(250, seed=6), [("k", b"v2"), ("k", None)]),
]

# Records for the multi-block files: ~70 KB uncompressed, above both
# xerial-snappy's 32 KiB block size and LZ4's 64 KiB max block size, but very
# repetitive so the files stay small. The manifest describes these values as
# {"unit_hex", "times"} instead of inlining 140 KB of hex.
BATCH_BIG = [
    rec(i, T0 + i, ("mb-%d" % i).encode(), None, [("part", str(i).encode())],
        value_repeat=rec_value_repeat(("odradek multiblock %d | " % i).encode(), 600))
    for i in range(5)
]


def value_of(r):
    if r["value_repeat"] is not None:
        return r["value_repeat"]["unit"] * r["value_repeat"]["times"]
    return r["value"]


# ---------------------------------------------------------------------------
# kafka-python encoding
# ---------------------------------------------------------------------------

class _FixedMtimeGzip:
    """Stands in for the ``gzip`` module inside ``kafka.codec`` (fixed MTIME)."""

    def __getattr__(self, name):
        return getattr(gzip, name)

    @staticmethod
    def GzipFile(*args, **kwargs):
        kwargs.setdefault("mtime", GZIP_MTIME)
        return gzip.GzipFile(*args, **kwargs)


@contextlib.contextmanager
def fixed_gzip_mtime():
    saved = kafka.codec.gzip
    kafka.codec.gzip = _FixedMtimeGzip()
    try:
        yield
    finally:
        kafka.codec.gzip = saved


def kp_build(codec, records, producer_id, producer_epoch, base_sequence,
             transactional=False):
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=CODECS[codec], is_transactional=transactional,
        producer_id=producer_id, producer_epoch=producer_epoch,
        base_sequence=base_sequence, batch_size=1 << 20)
    for r in records:
        meta = builder.append(r["delta"], timestamp=r["ts"], key=r["key"],
                              value=value_of(r), headers=r["headers"])
        assert meta is not None, "builder refused a record"
    with fixed_gzip_mtime():
        out = bytes(builder.build())
    attrs = struct.unpack_from(">h", out, CRC_COVERED_FROM)[0]
    # kafka-python silently falls back to an uncompressed batch if the codec
    # does not shrink the data; make sure every vector really is compressed.
    assert attrs & 0x07 == CODECS[codec], (codec, attrs)
    return out


def set_base_offset(batch, base_offset):
    """Patch BaseOffset (not covered by the CRC), as a broker does on append."""
    return struct.pack(">q", base_offset) + batch[8:]


def repack_raw_snappy(uncompressed_batch):
    """Turn an uncompressed kafka-python batch into a raw-snappy one.

    The header is copied, the records section (everything after RecordCount)
    is compressed with python-snappy's raw ``snappy.compress``, then Length,
    the compression bits of Attributes and the CRC-32C are recomputed here.
    """
    import snappy  # python-snappy
    header = bytearray(uncompressed_batch[:HEADER_SIZE])
    attrs = struct.unpack_from(">h", header, CRC_COVERED_FROM)[0]
    assert attrs & 0x07 == 0
    compressed = snappy.compress(bytes(uncompressed_batch[HEADER_SIZE:]))
    body = header + compressed
    struct.pack_into(">i", body, 8, len(body) - 12)
    struct.pack_into(">h", body, CRC_COVERED_FROM, (attrs & ~0x07) | CODECS["snappy"])
    struct.pack_into(">I", body, 17, crc32c_pkg.crc32c(bytes(body[CRC_COVERED_FROM:])))
    return bytes(body)


# ---------------------------------------------------------------------------
# librdkafka capture (mock broker + raw Fetch v4 on loopback)
# ---------------------------------------------------------------------------

def _kstr(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def _fetch_v4(host, port, topic, partition, offset):
    body = (struct.pack(">iiiib", -1, 100, 1, 1 << 20, 0)
            + struct.pack(">i", 1) + _kstr(topic)
            + struct.pack(">i", 1) + struct.pack(">iqi", partition, offset, 1 << 20))
    req = struct.pack(">hhi", 1, 4, 1) + _kstr("odradek-vectors") + body
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(struct.pack(">i", len(req)) + req)
        buf = b""

        def read(n):
            nonlocal buf
            while len(buf) < n:
                chunk = sock.recv(65536)
                if not chunk:
                    raise IOError("connection closed")
                buf += chunk
            out, buf = buf[:n], buf[n:]
            return out

        resp = read(struct.unpack(">i", read(4))[0])
    pos = 4 + 4  # correlation id, throttle_time_ms
    assert struct.unpack_from(">i", resp, pos)[0] == 1
    pos += 4
    pos += 2 + struct.unpack_from(">h", resp, pos)[0]
    assert struct.unpack_from(">i", resp, pos)[0] == 1
    pos += 4
    _part, err, _hw, _lso = struct.unpack_from(">ihqq", resp, pos)
    pos += 22
    assert err == 0, "fetch error %d" % err
    n_aborted = struct.unpack_from(">i", resp, pos)[0]
    pos += 4 + 16 * max(n_aborted, 0)
    size = struct.unpack_from(">i", resp, pos)[0]
    pos += 4
    return resp[pos:pos + size]


def librdkafka_capture(codec, records, attempts=3):
    import confluent_kafka
    topic = "vectors-" + codec
    for _ in range(attempts):
        producer = confluent_kafka.Producer({
            "test.mock.num.brokers": 1,
            "compression.codec": codec,
            "linger.ms": 500,
            "enable.idempotence": False,
            "log_level": 3,
        })
        md = producer.list_topics(topic, timeout=10)  # auto-creates the topic
        broker = next(iter(md.brokers.values()))
        for r in records:
            producer.produce(topic, key=r["key"], value=value_of(r), partition=0,
                             timestamp=r["ts"], headers=r["headers"] or None)
        assert producer.flush(10) == 0
        data = _fetch_v4(broker.host, broker.port, topic, 0, 0)
        del producer
        count = struct.unpack_from(">i", data, 57)[0]
        if count == len(records) and len(data) == struct.unpack_from(">i", data, 8)[0] + 12:
            return data
        time.sleep(0.5)  # the batch got split; try again
    raise RuntimeError("librdkafka did not put all records into one batch")


# ---------------------------------------------------------------------------
# Manifest (from inputs)
# ---------------------------------------------------------------------------

def hexornull(b):
    return None if b is None else b.hex()


def expected_batch(records, codec, base_offset, producer_id, producer_epoch,
                   base_sequence, transactional, partition_leader_epoch):
    attributes = CODECS[codec] | (0x10 if transactional else 0)
    recs = []
    for r in records:
        e = {
            "offset": base_offset + r["delta"],
            "offset_delta": r["delta"],
            "timestamp": r["ts"],
            "timestamp_delta": r["ts"] - records[0]["ts"],
            "attributes": 0,
            "key_hex": hexornull(r["key"]),
        }
        if r["value_repeat"] is not None:
            e["value_repeat"] = {"unit_hex": r["value_repeat"]["unit"].hex(),
                                 "times": r["value_repeat"]["times"]}
        elif any(r["value"] is blob for blob in BLOBS.values()):
            e["value_blob"] = next(n for n, b in BLOBS.items() if r["value"] is b)
        else:
            e["value_hex"] = hexornull(r["value"])
        e["headers"] = [[k, hexornull(v)] for k, v in r["headers"]]
        recs.append(e)
    return {
        "base_offset": base_offset,
        "partition_leader_epoch": partition_leader_epoch,
        "magic": 2,
        "attributes": attributes,
        "compression": codec,
        "timestamp_type": 0,
        "is_transactional": transactional,
        "is_control": False,
        "last_offset_delta": records[-1]["delta"],
        "first_timestamp": records[0]["ts"],
        "max_timestamp": max(r["ts"] for r in records),
        "producer_id": producer_id,
        "producer_epoch": producer_epoch,
        "base_sequence": base_sequence,
        "record_count": len(records),
        "records": recs,
    }


# ---------------------------------------------------------------------------
# Observed codec details (read from the output, descriptive only)
# ---------------------------------------------------------------------------

def observe_codec(codec, payload):
    if codec == "gzip":
        flg, mtime, xfl, os_ = payload[3], struct.unpack_from("<I", payload, 4)[0], payload[8], payload[9]
        return {"gzip_flg": flg, "gzip_mtime": mtime, "gzip_xfl": xfl, "gzip_os": os_}
    if codec == "snappy":
        if payload[:8] == b"\x82SNAPPY\x00":
            version, compat = struct.unpack_from(">ii", payload, 8)
            pos, blocks = 16, []
            while pos < len(payload):
                n = struct.unpack_from(">i", payload, pos)[0]
                blocks.append(n)
                pos += 4 + n
            assert pos == len(payload)
            return {"snappy_framing": "xerial", "xerial_version": version,
                    "xerial_compat": compat, "xerial_block_sizes": blocks}
        return {"snappy_framing": "raw"}
    if codec == "lz4":
        assert payload[:4] == b"\x04\x22\x4d\x18"
        flg, bd = payload[4], payload[5]
        pos = 6
        d = {
            "lz4_flg": flg, "lz4_bd": bd,
            "lz4_version": flg >> 6,
            "lz4_block_independence": bool(flg & 0x20),
            "lz4_block_checksum": bool(flg & 0x10),
            "lz4_content_size_flag": bool(flg & 0x08),
            "lz4_content_checksum": bool(flg & 0x04),
            "lz4_dict_id_flag": bool(flg & 0x01),
            "lz4_block_max_size": {4: "64KB", 5: "256KB", 6: "1MB", 7: "4MB"}[(bd >> 4) & 7],
        }
        if flg & 0x08:
            d["lz4_content_size"] = struct.unpack_from("<Q", payload, pos)[0]
            pos += 8
        if flg & 0x01:
            pos += 4
        pos += 1  # header checksum
        blocks = []
        while True:
            n = struct.unpack_from("<I", payload, pos)[0]
            pos += 4
            if n == 0:
                break
            blocks.append({"size": n & 0x7FFFFFFF, "stored_uncompressed": bool(n >> 31)})
            pos += (n & 0x7FFFFFFF) + (4 if flg & 0x10 else 0)
        pos += 4 if flg & 0x04 else 0
        assert pos == len(payload), "trailing bytes after lz4 frame"
        d["lz4_blocks"] = blocks
        return d
    if codec == "zstd":
        assert payload[:4] == b"\x28\xb5\x2f\xfd"
        fhd = payload[4]
        single_segment = bool(fhd & 0x20)
        fcs_size = {0: 1 if single_segment else 0, 1: 2, 2: 4, 3: 8}[fhd >> 6]
        d = {"zstd_fhd": fhd,
             "zstd_content_size_present": fcs_size > 0,
             "zstd_single_segment": single_segment,
             "zstd_checksum": bool(fhd & 0x04),
             "zstd_dict_id_flag": fhd & 0x03}
        if fcs_size:
            pos = 5 + (0 if single_segment else 1) + {0: 0, 1: 1, 2: 2, 3: 4}[fhd & 3]
            fcs = int.from_bytes(payload[pos:pos + fcs_size], "little")
            d["zstd_content_size"] = fcs + (256 if fcs_size == 2 else 0)
        return d
    return {}


# ---------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------

def batch_entry(expected, data, file_offset):
    size = struct.unpack_from(">i", data, file_offset + 8)[0] + 12
    batch = data[file_offset:file_offset + size]
    e = {"file_offset": file_offset, "size_bytes": size,
         "crc": struct.unpack_from(">I", batch, 17)[0]}
    e.update(expected)
    e["observed"] = observe_codec(expected["compression"], batch[HEADER_SIZE:])
    return e


def file_entry(name, encoder, provenance, codec, data, expected_batches,
               truncated_tail_bytes=0, notes=None):
    batches, pos = [], 0
    for exp in expected_batches:
        b = batch_entry(exp, data, pos)
        pos += b["size_bytes"]
        batches.append(b)
    assert len(data) - pos == truncated_tail_bytes
    entry = {"file": name, "encoder": encoder, "provenance": provenance,
             "codec": codec, "size_bytes": len(data),
             "sha256": hashlib.sha256(data).hexdigest(),
             "truncated_tail_bytes": truncated_tail_bytes}
    if notes:
        entry["notes"] = notes
    entry["batches"] = batches
    return entry


def dump_manifest(manifest):
    """Indented JSON, but each record (and each observed block) on one line."""
    inline = {}

    def mark(obj):
        key = "@@inline%d@@" % len(inline)
        inline[key] = json.dumps(obj, ensure_ascii=False)
        return key

    shaped = json.loads(json.dumps(manifest))
    for f in shaped["files"]:
        for b in f["batches"]:
            b["records"] = [mark(r) for r in b["records"]]
            b["observed"] = mark(b["observed"])
    text = json.dumps(shaped, indent=1, ensure_ascii=False)
    for key, value in inline.items():
        text = text.replace('"%s"' % key, value)
    assert json.loads(text) == manifest
    return text + "\n"


def main():
    import confluent_kafka
    import cramjam
    import lz4
    import snappy
    import zlib
    import zstandard
    from importlib.metadata import version

    kp = "kafka-python %s DefaultRecordBatchBuilder" % kafka.__version__
    rdk = "librdkafka %s (confluent-kafka %s)" % (confluent_kafka.libversion()[0],
                                                  confluent_kafka.version()[0])
    files = {}
    manifest_files = []

    def add(name, data, entry):
        files[name] = data
        manifest_files.append(entry)

    pfields = (PRODUCER_ID, PRODUCER_EPOCH, BASE_SEQUENCE)
    seq_b = BASE_SEQUENCE + BATCH_A[-1]["delta"] + 1
    seq_c = seq_b + BATCH_B[-1]["delta"] + 1
    base_b = MULTI_BASE_OFFSET + BATCH_A[-1]["delta"] + 1
    base_c = base_b + BATCH_B[-1]["delta"] + 1

    for codec in CODECS:
        single = kp_build(codec, BATCH_A, *pfields)
        exp_a0 = expected_batch(BATCH_A, codec, 0, *pfields, False, 0)
        add(codec + ".bin", single, file_entry(
            codec + ".bin", kp, "builder.build() output, unmodified", codec, single, [exp_a0]))

        a = set_base_offset(kp_build(codec, BATCH_A, *pfields), MULTI_BASE_OFFSET)
        b = set_base_offset(kp_build(codec, BATCH_B, PRODUCER_ID, PRODUCER_EPOCH, seq_b), base_b)
        c = set_base_offset(kp_build(codec, BATCH_C, PRODUCER_ID, PRODUCER_EPOCH, seq_c), base_c)
        exp = [
            expected_batch(BATCH_A, codec, MULTI_BASE_OFFSET, *pfields, False, 0),
            expected_batch(BATCH_B, codec, base_b, PRODUCER_ID, PRODUCER_EPOCH, seq_b, False, 0),
            expected_batch(BATCH_C, codec, base_c, PRODUCER_ID, PRODUCER_EPOCH, seq_c, False, 0),
        ]
        multi = a + b + c
        prov = ("three builder.build() outputs concatenated; BaseOffset (not CRC-covered) "
                "patched to consecutive offsets as a broker would")
        add(codec + "_multi.bin", multi, file_entry(
            codec + "_multi.bin", kp, prov, codec, multi, exp,
            notes="batch 2 has offset deltas 0,1,3 (gap, as after compaction): "
                  "record_count 3 != last_offset_delta + 1"))

        cut = len(c) // 2
        trunc = a + b + c[:cut]
        add(codec + "_truncated.bin", trunc, file_entry(
            codec + "_truncated.bin", kp,
            "the %s_multi.bin bytes with the last batch cut after %d of its %d bytes"
            % (codec, cut, len(c)), codec, trunc, exp[:2], truncated_tail_bytes=cut))

    # Transactional batch (compression bits + transactional bit: attributes 0x11).
    txn = kp_build("gzip", BATCH_C, PRODUCER_ID, PRODUCER_EPOCH, 40, transactional=True)
    add("gzip_transactional.bin", txn, file_entry(
        "gzip_transactional.bin", kp, "builder.build() output, unmodified, is_transactional=True",
        "gzip", txn, [expected_batch(BATCH_C, "gzip", 0, PRODUCER_ID, PRODUCER_EPOCH, 40, True, 0)]))

    # Raw (unframed) snappy re-pack of kafka-python's records.
    raw = repack_raw_snappy(kp_build("none", BATCH_A, *pfields))
    add("snappy_raw.bin", raw, file_entry(
        "snappy_raw.bin", "kafka-python %s + python-snappy %s (raw snappy)"
        % (kafka.__version__, snappy.__version__),
        "repacked, raw snappy from python-snappy: kafka-python's uncompressed batch "
        "(none.bin inputs), records section compressed with snappy.compress() "
        "(raw/block format, no xerial header), Length/Attributes/CRC-32C recomputed "
        "by generate.py. See librdkafka_snappy.bin for bytes written by librdkafka itself.",
        "snappy", raw, [expected_batch(BATCH_A, "snappy", 0, *pfields, False, 0)]))

    # Multi-block compressed payloads.
    for codec in ("snappy", "lz4"):
        big = kp_build(codec, BATCH_BIG, *pfields)
        add(codec + "_multiblock.bin", big, file_entry(
            codec + "_multiblock.bin", kp, "builder.build() output, unmodified", codec, big,
            [expected_batch(BATCH_BIG, codec, 0, *pfields, False, 0)],
            notes="~70 KB uncompressed records section: several xerial (32 KiB) / "
                  "LZ4 (64 KiB) blocks; values given as value_repeat"))

    # librdkafka, via its mock broker.
    for codec in CODECS:
        data = librdkafka_capture(codec, BATCH_A)
        add("librdkafka_%s.bin" % codec, data, file_entry(
            "librdkafka_%s.bin" % codec, rdk,
            "librdkafka producer (idempotence off, linger.ms=500, compression.codec=%s) -> "
            "librdkafka mock broker -> Fetch v4 response records, verbatim. The mock broker "
            "overwrites BaseOffset and PartitionLeaderEpoch (neither is CRC-covered); "
            "everything else is exactly what the producer sent" % codec,
            codec, data, [expected_batch(BATCH_A, codec, 0, -1, -1, -1, False, 0)]))

    for name, data in files.items():
        (OUT_DIR / name).write_bytes(data)

    manifest = {
        "schema_version": 1,
        "description": "Third-party RecordBatch v2 test vectors; see README.md.",
        "generator": {
            "script": "generate.py",
            "python": sys.version.split()[0],
            "packages": {p: version(p) for p in (
                "kafka-python", "python-snappy", "cramjam", "lz4", "zstandard",
                "crc32c", "confluent-kafka")},
            "native": {"zlib": zlib.ZLIB_RUNTIME_VERSION,
                       "liblz4": lz4.library_version_string(),
                       "libzstd": ".".join(map(str, zstandard.ZSTD_VERSION)),
                       "librdkafka": confluent_kafka.libversion()[0],
                       "cramjam": cramjam.__version__},
            "gzip_mtime_pinned_to": GZIP_MTIME,
        },
        "conventions": {
            "expectations": "everything except crc, size_bytes, file_offset, sha256 and "
                            "observed is derived from the encoder inputs, not by decoding",
            "bytes": "key_hex/value_hex/header values are lowercase hex, null = null "
                     "(distinct from empty string = zero-length)",
            "value_blob": "instead of value_hex: value = bytes of blobs[name].hex",
            "value_repeat": "instead of value_hex: value = bytes(unit_hex) repeated times",
            "headers": "ordered list of [key (UTF-8 string), value_hex or null]; order and "
                       "duplicate keys are significant",
            "crc": "CRC-32C (Castagnoli) as unsigned 32-bit, over Attributes..end of batch",
            "attributes": "batch attributes int16: bits 0-2 codec (0 none,1 gzip,2 snappy,"
                          "3 lz4,4 zstd), bit 3 timestamp type, bit 4 transactional, "
                          "bit 5 control",
            "truncated_tail_bytes": "bytes after the last complete batch (a partial batch)",
            "observed": "codec container details read from the output, informational",
        },
        "blobs": {n: {"len": len(b), "sha256": hashlib.sha256(b).hexdigest(), "hex": b.hex()}
                  for n, b in BLOBS.items()},
        "files": manifest_files,
    }
    (OUT_DIR / "manifest.json").write_text(dump_manifest(manifest), encoding="utf-8")

    verify(manifest)
    print("wrote and verified %d files in %s" % (len(files), OUT_DIR))


# ---------------------------------------------------------------------------
# Sanity check: decode with kafka-python and compare with the manifest
# ---------------------------------------------------------------------------

def verify(manifest):
    for f in manifest["files"]:
        data = (OUT_DIR / f["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == f["sha256"], f["file"]
        records = MemoryRecords(data)
        got = []
        while records.has_next():
            got.append(records.next_batch())
        assert records.valid_bytes() == len(data) - f["truncated_tail_bytes"], f["file"]
        assert len(got) == len(f["batches"]), (f["file"], len(got))
        for batch, exp in zip(got, f["batches"]):
            where = "%s@%d" % (f["file"], exp["file_offset"])
            assert isinstance(batch, DefaultRecordBatch), where
            raw = data[exp["file_offset"]:exp["file_offset"] + exp["size_bytes"]]
            assert batch.validate_crc(), where
            assert crc32c_pkg.crc32c(raw[CRC_COVERED_FROM:]) == exp["crc"] == batch.crc, where
            assert struct.unpack_from(">i", raw, 12)[0] == exp["partition_leader_epoch"], where
            checks = {
                "base_offset": batch.base_offset, "magic": batch.magic,
                "attributes": batch.attributes, "compression": list(CODECS)[batch.compression_type],
                "timestamp_type": batch.timestamp_type,
                "is_transactional": batch.is_transactional, "is_control": batch.is_control_batch,
                "last_offset_delta": batch.last_offset_delta,
                "first_timestamp": batch.first_timestamp, "max_timestamp": batch.max_timestamp,
                "producer_id": batch.producer_id, "producer_epoch": batch.producer_epoch,
                "base_sequence": batch.base_sequence, "record_count": batch.records_count,
                "size_bytes": batch.size_in_bytes,
            }
            for k, v in checks.items():
                assert v == exp[k], (where, k, v, exp[k])
            decoded = list(batch)
            assert len(decoded) == len(exp["records"]), where
            for r, e in zip(decoded, exp["records"]):
                if "value_repeat" in e:
                    value = bytes.fromhex(e["value_repeat"]["unit_hex"]) * e["value_repeat"]["times"]
                elif "value_blob" in e:
                    value = bytes.fromhex(manifest["blobs"][e["value_blob"]]["hex"])
                else:
                    value = None if e["value_hex"] is None else bytes.fromhex(e["value_hex"])
                key = None if e["key_hex"] is None else bytes.fromhex(e["key_hex"])
                headers = [(k, None if v is None else bytes.fromhex(v)) for k, v in e["headers"]]
                assert r.offset == e["offset"], (where, r.offset, e["offset"])
                assert r.timestamp == e["timestamp"], (where, r.offset)
                assert r.key == key, (where, r.offset, r.key, key)
                assert r.value == value, (where, r.offset)
                assert list(r.headers) == headers, (where, r.offset, r.headers, headers)


if __name__ == "__main__":
    main()
