"""Decode RecordBatches written by Odradek's encoder with kafka-python's independent reader.

Usage: python check_our_batches.py DIR   (DIR from `cargo run -p odradek --example write_batches`)

Checks, for every codec, that kafka-python validates the CRC and reads back exactly the records
described in DIR/manifest.json. Prints one line per batch and a closing "N passed, N failed".
"""
import json
import sys
from pathlib import Path

from kafka.record.default_records import DefaultRecordBatch


def unhex(v):
    return None if v is None else bytes.fromhex(v)


def check(path, expected):
    data = path.read_bytes()
    batch = DefaultRecordBatch(bytearray(data))
    assert batch.validate_crc(), "CRC rejected"
    assert batch.producer_id == 77 and batch.producer_epoch == 2 and batch.base_sequence == 5
    got = list(batch)
    assert len(got) == len(expected["records"]), (len(got), len(expected["records"]))
    for rec, want in zip(got, expected["records"]):
        assert rec.offset == want["offset"], (rec.offset, want["offset"])
        assert rec.timestamp == want["timestamp"], (rec.timestamp, want["timestamp"])
        assert rec.key == unhex(want["key"]), "key"
        assert rec.value == unhex(want["value"]), "value"
        headers = [(bytes.fromhex(k).decode(), unhex(v)) for k, v in want["headers"]]
        assert list(rec.headers) == headers, (rec.headers, headers)


def main():
    root = Path(sys.argv[1])
    manifest = json.loads((root / "manifest.json").read_text())
    passed = failed = 0
    for entry in manifest:
        try:
            check(root / entry["file"], entry)
            print("ok   kafka-python reads odradek %s batch" % entry["codec"])
            passed += 1
        except Exception as exc:  # report every codec, then fail
            print("FAIL kafka-python reads odradek %s batch: %r" % (entry["codec"], exc))
            failed += 1
    if len(manifest) != 5:
        print("FAIL expected 5 codecs, manifest has %d" % len(manifest))
        failed += 1
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
