#!/usr/bin/env python3
"""The broker where the broker is the bottleneck: odradek-broker vs Apache Kafka, driven by
odradek's Rust producer over several connections (issue 21, section 3).

Driven by bench/broker_vs_kafka.sh after its main run (it installs Kafka, snapshots the broker
binary and builds bench/client); standard library only. The broker family's main run drives both
brokers with Kafka's ProducerPerformance, one connection at a time, and on 2 cores that client
is the bottleneck. Here:

- load: --producers concurrent `odradek-bench produce --client odradek` processes (one
  connection each, each to its own single-partition topic, acks=all, no compression), each
  sending --records-small 100 B or --records-large 1 KiB records as fast as the broker takes
  them. Every process exits non-zero if any delivery failed; each topic is then read back with
  `consume --client odradek` (outside the measured interval) and must hold exactly the records
  produced (the priming record included).
- measured per run: wall time from the first process's start to the last one's exit, the
  broker's utime+stime (/proc/PID/stat) and the bytes its log directory grew by. Reported:
  broker CPU-seconds per million records and per GB of record values (10^9 bytes), records/s,
  and the log bytes appended per second as a fraction of the disk's sequential write bandwidth.
- flush: each broker runs once with its default flush policy (no fsync per append; the kernel
  writes back) and once with `log.flush.interval.messages=1` (an fsync after every append), the
  same setting for both.
- disk: `dd if=/dev/zero bs=1M count=--dd-mib conv=fdatasync` into the brokers' work directory,
  before and after the phase; the faster of the two is the bandwidth the fractions use.
- order: per flush mode and size, the brokers alternate which goes first per repeat; one
  warm-up run per broker, flush mode and size is not reported. `sync` runs before each run.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from broker_vs_kafka import Kafka, Odradek, log, machine, proc_cpu_s  # noqa: E402

SIZES = (100, 1024)
FLUSH = {"default": [], "flush-every-append": ["log.flush.interval.messages=1"]}


def dir_bytes(path):
    """Bytes in the files under `path` (0 when it does not exist)."""
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return total


def dd_bandwidth(workdir, mib):
    """Sequential write bandwidth in MB/s (10^6 B): `mib` MiB of zeros written with dd and
    fdatasync'd, timed from dd's start to its exit."""
    path = os.path.join(workdir, "dd.bin")
    os.sync()
    t0 = time.monotonic()
    subprocess.run(["dd", "if=/dev/zero", f"of={path}", "bs=1M", f"count={mib}",
                    "conv=fdatasync"], check=True, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    os.remove(path)
    return round(mib * 1048576 / wall / 1e6, 1)


class Load:
    def __init__(self, args):
        self.a = args

    def _bench(self, *argv):
        return [self.a.odradek_bench, *argv]

    def create(self, broker, topic):
        subprocess.run(self._bench("create-topic", "--bootstrap", broker.addr, "--topic", topic,
                                   "--partitions", "1"),
                       check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       timeout=120)

    def run(self, broker, data_dir, tag, size, records):
        """One measured run: --producers processes in parallel, one topic each."""
        topics = [f"{tag}-c{i}" for i in range(self.a.producers)]
        for t in topics:
            self.create(broker, t)
        os.sync()
        time.sleep(0.5)
        cpu0, bytes0 = proc_cpu_s(broker.pid), dir_bytes(data_dir)
        t0 = time.monotonic()
        procs = [subprocess.Popen(self._bench(
            "produce", "--client", "odradek", "--bootstrap", broker.addr, "--topic", t,
            "--count", str(records), "--size", str(size), "--acks", "all",
            "--compression", "none", "--partitions", "1"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
            for t in topics]
        outs = []
        try:
            for p in procs:
                out, err = p.communicate(timeout=600)
                if p.returncode != 0:
                    raise RuntimeError(f"producer failed ({p.returncode}): {err.decode()[-2000:]}")
                outs.append(json.loads(out.decode().strip().splitlines()[-1]))
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        wall = time.monotonic() - t0
        cpu = proc_cpu_s(broker.pid) - cpu0
        grown = dir_bytes(data_dir) - bytes0
        total = sum(o["msgs"] for o in outs)
        if total != records * len(topics):
            raise RuntimeError(f"producers report {total} records, {records * len(topics)} asked")
        for t in topics:
            self.read_back(broker, t, records + 1)  # + the priming record
        value_bytes = total * size
        return {
            "records": total, "value_bytes": value_bytes, "wall_s": round(wall, 3),
            "broker_cpu_s": round(cpu, 3), "log_bytes": grown,
            "msgs_per_s": round(total / wall, 1),
            "broker_cpu_s_per_million": round(cpu / total * 1e6, 3),
            "broker_cpu_s_per_gb": round(cpu / value_bytes * 1e9, 3),
            "log_mb_per_s": round(grown / wall / 1e6, 2),
            "producer_cpu_us_per_msg": [o["cpu_us_per_msg"] for o in outs],
        }

    def read_back(self, broker, topic, expected):
        """Every produced record is in the log: the topic read from the start holds exactly
        `expected` records."""
        out = subprocess.run([self.a.consume, "--client", "odradek", "--bootstrap", broker.addr,
                              "--topic", topic], check=True, capture_output=True,
                             stdin=subprocess.DEVNULL, timeout=600).stdout.decode()
        got = json.loads(out.strip().splitlines()[-1])["msgs"]
        if got != expected:
            raise RuntimeError(f"read back {got} records from {topic}, expected {expected}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--broker-bin", required=True)
    ap.add_argument("--odradek-bench", required=True, help="bench/client's odradek-bench")
    ap.add_argument("--consume", required=True, help="bench/client's consume")
    ap.add_argument("--java", default="java")
    ap.add_argument("--libs", required=True, help="Kafka classpath")
    ap.add_argument("--tools-log4j", required=True)
    ap.add_argument("--workdir", required=True, help="on the disk being measured (not tmpfs)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--meta", default="{}")
    ap.add_argument("--kafka-heap", default="-Xmx512m -Xms128m")
    ap.add_argument("--producers", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--records-small", type=int, default=500_000, help="per producer, 100 B")
    ap.add_argument("--records-large", type=int, default=150_000, help="per producer, 1 KiB")
    ap.add_argument("--dd-mib", type=int, default=1024)
    a = ap.parse_args()

    fs = subprocess.run(["df", "-PT", a.workdir], capture_output=True, text=True).stdout
    fstype = fs.splitlines()[-1].split()[1] if fs.strip() else "?"
    res = {"meta": {**machine(), **json.loads(a.meta), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                    "producers": a.producers, "repeats": a.repeats,
                    "records_small": a.records_small, "records_large": a.records_large,
                    "workdir_fs": fstype, "flush_modes": FLUSH, "kafka_heap": a.kafka_heap},
           "dd_mb_per_s": [], "runs": []}

    def save():
        with open(a.out + ".tmp", "w") as f:
            json.dump(res, f, indent=1)
        os.replace(a.out + ".tmp", a.out)

    seg = "log.segment.bytes=104857600"
    load = Load(a)
    res["dd_mb_per_s"].append(dd_bandwidth(a.workdir, a.dd_mib))
    log(f"dd: {res['dd_mb_per_s'][-1]} MB/s")
    started = []
    try:
        for mode, props in FLUSH.items():
            brokers = [Odradek(a.broker_bin, [seg, *props]),
                       Kafka(a.java, a.libs, a.tools_log4j, a.kafka_heap, props)]
            dirs = {}
            for b in brokers:
                dirs[b.name] = os.path.join(a.workdir, f"bound-{mode}-{b.name}")
                started.append(b)
                b.start(dirs[b.name])
            for size in SIZES:
                records = a.records_small if size < 1000 else a.records_large
                for rep in range(-1, a.repeats):
                    order = brokers if rep % 2 == 0 else brokers[::-1]
                    for b in order:
                        tag = f"{size}B-r{rep + 1}"
                        st = load.run(b, os.path.join(dirs[b.name], "data"), tag, size, records)
                        rec = {"broker": b.name, "flush": mode, "size": size, "rep": rep,
                               "warmup": rep < 0, **st}
                        res["runs"].append(rec)
                        log(f"{mode:18s} {size:5d}B r{rep:<2d} {b.name:7s} "
                            f"{st['msgs_per_s']:>10.0f} msg/s cpu/M={st['broker_cpu_s_per_million']:.2f}s "
                            f"log={st['log_mb_per_s']:.1f} MB/s")
                    save()
            for b in brokers:
                b.stop()
                started.remove(b)
            for d in dirs.values():
                subprocess.run(["rm", "-rf", d], check=False)
        res["dd_mb_per_s"].append(dd_bandwidth(a.workdir, a.dd_mib))
        log(f"dd: {res['dd_mb_per_s'][-1]} MB/s")
    finally:
        for b in started:
            try:
                b.stop()
            except Exception as e:  # noqa: BLE001
                log(f"stopping {b.name}: {e}")
        save()
    log(f"results in {a.out}")


if __name__ == "__main__":
    main()
