#!/usr/bin/env python3
"""odradek-broker vs Apache Kafka: startup, produce/consume throughput, latency, memory, CPU.

Driven by bench/broker_vs_kafka.sh (which installs the peers, compiles bench/BenchClient.java and
snapshots the broker binary); run that, not this file. Standard library only.

Phases, all in one process so both brokers see the same machine state:

1. startup: one discarded warm-up start of each broker, then --startup-repeats interleaved starts
   (order alternates every round). Each start is on a fresh, empty data directory and is timed from
   just before the process is spawned until the broker has answered ApiVersions v0 and a Metadata
   v1 request that lists a broker, on one TCP connection (bench's own probe, same for both). For
   Kafka the storage is formatted first (`kafka.tools.StorageTool format`, timed separately) and
   the clock starts at the JVM launch. VmRSS/VmHWM are read at that moment.
2. throughput: both brokers are started fresh and stay up; all topics are created up front with
   BenchClient (one CreateTopics each); one warm-up pass per broker (not reported); then
   --repeats passes over every cell. Cell order is shuffled per pass (fixed seed) and the broker
   order alternates per cell. A cell is one ProducerPerformance run into a fresh topic; a run
   whose output has an exception line, or that reports fewer records than asked, fails. For acks=1
   cells the same topic is then read back from offset 0 by BenchClient (assign(), no group),
   measured; acks=all cells are read back the same way, unmeasured, as a check.
   Around each client run the broker's utime+stime (/proc/PID/stat), the client's CPU (rusage of
   the reaped child) and everybody else's CPU (/proc/stat minus those two) are recorded.
   `sync` runs between client runs (untimed) so dirty pages from one run are not written back
   during the next.
3. latency: ProducerPerformance at a fixed rate (not saturated) for both brokers, same repeats.
4. end: peak VmHWM, per-thread CPU, then a timed restart of each broker on its filled data dir.
"""

import argparse
import base64
import json
import os
import platform
import random
import re
import resource
import select
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")
PRODUCER_CLASS = "org.apache.kafka.tools.ProducerPerformance"


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# /proc readers


def proc_mem_kb(pid):
    """VmRSS and VmHWM of PID in kB (None when gone)."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    k, v = line.split(":", 1)
                    out[k] = int(v.split()[0])
    except OSError:
        return None
    return {"rss_kb": out.get("VmRSS"), "hwm_kb": out.get("VmHWM")}


def _stat_fields(path):
    with open(path) as f:
        s = f.read()
    # comm may contain spaces and parentheses: split after the last ')'.
    lp, rp = s.index("("), s.rindex(")")
    return s[lp + 1 : rp], s[rp + 2 :].split()


def proc_cpu_s(pid):
    """utime+stime of the whole process (all threads, live and exited), in seconds."""
    try:
        _, f = _stat_fields(f"/proc/{pid}/stat")
    except OSError:
        return None
    return (int(f[11]) + int(f[12])) / CLK_TCK


def proc_threads_cpu(pid):
    """CPU seconds per live thread, grouped by thread name with digits folded to '#'."""
    groups = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return groups
    for tid in tids:
        try:
            comm, f = _stat_fields(f"/proc/{pid}/task/{tid}/stat")
        except OSError:
            continue
        name = re.sub(r"\d+", "#", comm)
        g = groups.setdefault(name, {"threads": 0, "cpu_s": 0.0})
        g["threads"] += 1
        g["cpu_s"] += (int(f[11]) + int(f[12])) / CLK_TCK
    return dict(sorted(groups.items(), key=lambda kv: -kv[1]["cpu_s"]))


def system_busy_s():
    """Busy CPU seconds of the whole machine (all cores) since boot, from /proc/stat."""
    with open("/proc/stat") as f:
        parts = f.readline().split()
    user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in parts[1:9])
    return (user + nice + system + irq + softirq + steal) / CLK_TCK


def children_cpu_s():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


# ---------------------------------------------------------------------------------------------
# Readiness probe: ApiVersions v0 then Metadata v1 (no topics) on one connection.


def _request(api_key, version, corr, body=b""):
    client = b"bench-probe"
    payload = struct.pack(">hhih", api_key, version, corr, len(client)) + client + body
    return struct.pack(">i", len(payload)) + payload


def _recv_exact(sock, n, deadline):
    buf = b""
    while len(buf) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("probe response timed out")
        sock.settimeout(left)
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed by broker")
        buf += chunk
    return buf


def _response(sock, corr, deadline):
    size = struct.unpack(">i", _recv_exact(sock, 4, deadline))[0]
    body = _recv_exact(sock, size, deadline)
    if struct.unpack(">i", body[:4])[0] != corr:
        raise ConnectionError("correlation id mismatch")
    return body[4:]


def probe_once(port, deadline):
    """True when the broker at 127.0.0.1:PORT answers ApiVersions and lists a broker in Metadata.

    Waits on one connection (a connection queued in the listen backlog before the broker starts
    accepting is answered as soon as it does)."""
    with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.sendall(_request(18, 0, 1))
        body = _response(s, 1, deadline)
        if struct.unpack(">h", body[:2])[0] != 0:
            return False
        s.sendall(_request(3, 1, 2, struct.pack(">i", 0)))  # Metadata v1, empty topic list
        body = _response(s, 2, deadline)
        return struct.unpack(">i", body[:4])[0] >= 1  # broker count


def wait_ready(port, proc, timeout_s):
    """Poll until probe_once succeeds; returns monotonic time of success."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"broker exited with {proc.returncode} during startup")
        try:
            if probe_once(port, deadline):
                return time.monotonic()
        except (OSError, ConnectionError, TimeoutError, struct.error):
            pass
        time.sleep(0.005)
    raise RuntimeError("broker not ready in time")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------------------------
# Brokers


class Broker:
    name = "?"
    proc = None
    port = None

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    @property
    def addr(self):
        return f"127.0.0.1:{self.port}"

    def stop(self, timeout=60):
        """SIGTERM the broker (only the process we started); returns (seconds, exit code)."""
        if not self.proc or self.proc.poll() is not None:
            return None, self.proc.returncode if self.proc else None
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            log(f"{self.name} pid {self.proc.pid} ignored SIGTERM for {timeout}s: SIGKILL")
            self.proc.kill()
            rc = self.proc.wait()
        for f in getattr(self, "_files", []):
            f.close()
        return time.monotonic() - t0, rc


class Odradek(Broker):
    name = "odradek"

    def __init__(self, binary, extra):
        self.binary = binary
        self.extra = extra  # list of "k=v"

    def start(self, workdir, fresh=True, timeout=30):
        if fresh:
            shutil.rmtree(workdir, ignore_errors=True)
        os.makedirs(workdir, exist_ok=True)
        args = [self.binary, "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                "--override", f"log.dirs={workdir}/data"]
        for kv in self.extra:
            args += ["--override", kv]
        err = open(os.path.join(workdir, "broker.stderr.log"), "ab")
        self._files = [err]
        t0 = time.monotonic()
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err,
                                     stdin=subprocess.DEVNULL)
        r, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not r:
            raise RuntimeError("odradek-broker printed nothing in time")
        line = self.proc.stdout.readline().decode()
        t_line = time.monotonic()
        m = re.search(r"listening on [^:]+:(\d+)", line)
        if not m:
            raise RuntimeError(f"unexpected first line {line!r}")
        self.port = int(m.group(1))
        t_ready = wait_ready(self.port, self.proc, timeout)
        return {"listening_line_ms": (t_line - t0) * 1e3, "ready_ms": (t_ready - t0) * 1e3}


class Kafka(Broker):
    """Single-node combined KRaft broker/controller, configured exactly as tests/compat/kafka.sh
    (server.properties, log4j2.properties and JVM flags are mirrored from its write_config and
    launch), but launched here so the JVM launch can be timed apart from storage formatting."""

    name = "kafka"

    def __init__(self, java, libs, tools_log4j, heap, extra_props):
        self.java, self.libs, self.tools_log4j = java, libs, tools_log4j
        self.heap = heap.split()
        self.extra_props = extra_props

    def _write_config(self, d, port, cport):
        with open(f"{d}/server.properties", "w") as f:
            f.write(f"""# Written by bench/broker_vs_kafka.py, as tests/compat/kafka.sh writes it.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:{cport}
listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{cport}
advertised.listeners=PLAINTEXT://127.0.0.1:{port}
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs={d}/data

num.partitions=4
default.replication.factor=1
auto.create.topics.enable=true
delete.topic.enable=true
group.initial.rebalance.delay.ms=0

offsets.topic.replication.factor=1
offsets.topic.num.partitions=3
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=3
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
share.coordinator.state.topic.num.partitions=3

# Small and quiet for tests; Kafka's default flush policy (no fsync per message) is kept.
num.network.threads=2
num.io.threads=4
log.segment.bytes=104857600
""")
            for kv in self.extra_props:
                f.write(kv + "\n")
        with open(f"{d}/log4j2.properties", "w") as f:
            f.write(f"""status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = {d}/kafka.log
appender.file.append = true
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.statechange.name = state.change.logger
logger.statechange.level = WARN
logger.authorizer.name = kafka.authorizer.logger
logger.authorizer.level = WARN
logger.clients.name = org.apache.kafka.clients
logger.clients.level = WARN
""")

    def start(self, workdir, fresh=True, timeout=180):
        out = {}
        if fresh:
            shutil.rmtree(workdir, ignore_errors=True)
            os.makedirs(workdir)
            self.port, cport = free_port(), free_port()
            while cport == self.port:
                cport = free_port()
            self._write_config(workdir, self.port, cport)
            cluster = "-"
            while cluster.startswith("-"):  # Kafka's format: 16 bytes, URL-safe base64
                cluster = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
            t0 = time.monotonic()
            subprocess.run([self.java, "-Xmx256m", f"-Dlog4j2.configurationFile={self.tools_log4j}",
                            "-cp", self.libs, "kafka.tools.StorageTool", "format", "-t", cluster,
                            "-c", f"{workdir}/server.properties"],
                           check=True, stdin=subprocess.DEVNULL,
                           stdout=open(f"{workdir}/format.log", "ab"), stderr=subprocess.STDOUT)
            out["format_ms"] = (time.monotonic() - t0) * 1e3
        args = [self.java, *self.heap, "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
                "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true",
                f"-Dlog4j2.configurationFile={workdir}/log4j2.properties",
                "-cp", self.libs, "kafka.Kafka", f"{workdir}/server.properties"]
        kout = open(f"{workdir}/kafka.out", "ab")
        self._files = [kout]
        t0 = time.monotonic()
        self.proc = subprocess.Popen(args, stdout=kout, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        t_ready = wait_ready(self.port, self.proc, timeout)
        out["ready_ms"] = (t_ready - t0) * 1e3
        return out


# ---------------------------------------------------------------------------------------------
# Client runs

# The first line of a Java stack trace: an exception's class name, then ':' or the line end.
SEND_ERROR = re.compile(r"^(?:[\w$]+\.)+[\w$]*(?:Exception|Error)(?::.*)?$", re.MULTILINE)
SUMMARY = re.compile(
    r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
    r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th")


class Runner:
    def __init__(self, args, brokers):
        self.a = args
        self.brokers = brokers
        self.java = args.java
        self.client_cp = f"{args.libs}:{args.classes}"
        self.quiet_budget = args.quiet_budget

    def wait_quiet(self):
        """Wait (bounded) until other processes use < --quiet-cores of CPU over 0.5 s, so a burst
        of someone else's work (the machine is shared) does not land in a measurement."""
        t0 = time.monotonic()
        while True:
            b0 = sum(proc_cpu_s(b.pid) or 0 for b in self.brokers)
            s0 = system_busy_s()
            time.sleep(0.5)
            b1 = sum(proc_cpu_s(b.pid) or 0 for b in self.brokers)
            other = (system_busy_s() - s0 - (b1 - b0)) / 0.5
            waited = time.monotonic() - t0
            if (other < self.a.quiet_cores or waited >= self.a.quiet_max_wait
                    or self.quiet_budget <= 0):
                self.quiet_budget -= max(0.0, waited - 0.5)
                return round(waited, 1), round(other, 2)
            time.sleep(1.0)

    def _measured(self, broker, cmd, timeout):
        """Run a client to completion; returns (stdout, stats) with broker/client/other CPU."""
        os.sync()
        waited, other_before = self.wait_quiet()
        c0, s0, k0 = proc_cpu_s(broker.pid), system_busy_s(), children_cpu_s()
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL)
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            raise RuntimeError(f"client timed out: {' '.join(cmd[-12:])}\n{err.decode()[-2000:]}")
        except BaseException:  # interrupted: do not leave the client behind
            p.kill()
            p.wait()
            raise
        wall = time.monotonic() - t0
        c1, s1, k1 = proc_cpu_s(broker.pid), system_busy_s(), children_cpu_s()
        if p.returncode != 0:
            raise RuntimeError(f"client failed ({p.returncode}): {err.decode()[-3000:]}")
        bcpu, ccpu = c1 - c0, k1 - k0
        mem = proc_mem_kb(broker.pid)
        self.last_stderr = err.decode(errors="replace")
        return out.decode(), {
            "wall_s": round(wall, 3),
            "broker_cpu_s": round(bcpu, 3),
            "client_cpu_s": round(ccpu, 3),
            "other_cpu_s": round(max(0.0, (s1 - s0) - bcpu - ccpu), 3),
            "quiet_wait_s": waited,
            "other_cores_before": other_before,
            "broker_rss_kb": mem["rss_kb"],
            "broker_hwm_kb": mem["hwm_kb"],
        }

    def produce(self, broker, topic, cell, records, rate=-1):
        props = [f"bootstrap.servers={broker.addr}", f"acks={cell['acks']}",
                 "enable.idempotence=false", f"compression.type={cell['codec']}",
                 "client.id=bench-producer"]
        cmd = [self.a.kafka_sh, "run", PRODUCER_CLASS, "--topic", topic,
               "--num-records", str(records), "--record-size", str(cell["size"]),
               "--throughput", str(rate), "--reporting-interval", "60000",
               "--command-property", *props]
        out, st = self._measured(broker, cmd, timeout=300)
        m = None
        for line in out.splitlines():
            m = SUMMARY.search(line) or m
        if not m:
            raise RuntimeError(f"no ProducerPerformance summary in: {out[-1000:]}")
        n, rps = int(m.group(1)), float(m.group(2))
        # ProducerPerformance counts a failed send in its summary and prints the exception's
        # stack trace: any such line, or fewer records than asked, fails the cell.
        failed = SEND_ERROR.findall(out + "\n" + self.last_stderr)
        if failed or n != records:
            raise RuntimeError(f"ProducerPerformance into {topic}: {n} of {records} records "
                               f"reported, errors: {failed[:3]}")
        st.update({
            "records": n,
            "msgs_per_s": round(rps, 1),
            "mb_per_s": round(rps * cell["size"] / 1e6, 3),
            "lat_avg_ms": float(m.group(4)), "lat_max_ms": float(m.group(5)),
            "lat_p50_ms": int(m.group(6)), "lat_p95_ms": int(m.group(7)),
            "lat_p99_ms": int(m.group(8)), "lat_p999_ms": int(m.group(9)),
            "broker_cpu_s_per_million": round(st["broker_cpu_s"] / n * 1e6, 3),
        })
        return st

    def consume(self, broker, topic, expected):
        cmd = [self.java, "-Xmx512m", f"-Dlog4j2.configurationFile={self.a.tools_log4j}",
               "-cp", self.client_cp, "BenchClient", "consume", broker.addr, topic, str(expected)]
        out, st = self._measured(broker, cmd, timeout=300)
        r = json.loads(out.strip().splitlines()[-1])
        st.update({
            "records": r["records"],
            "bytes": r["bytes"],
            "seconds": r["seconds"],
            "first_record_s": r["first_record_seconds"],
            "fetch_total": r.get("fetch_total"),
            "fetch_latency_avg_ms": r.get("fetch_latency_avg_ms"),
            "fetch_latency_max_ms": r.get("fetch_latency_max_ms"),
            "fetch_size_avg": r.get("fetch_size_avg"),
            "msgs_per_s": round(r["records"] / r["seconds"], 1),
            "mb_per_s": round(r["bytes"] / r["seconds"] / 1e6, 3),
            "broker_cpu_s_per_million": round(st["broker_cpu_s"] / r["records"] * 1e6, 3),
        })
        return st

    def read_back(self, broker, topic, expected):
        """Unmeasured check that `expected` records can be read from `topic` (for the cells
        the measured consumer does not read)."""
        cmd = [self.java, "-Xmx512m", f"-Dlog4j2.configurationFile={self.a.tools_log4j}",
               "-cp", self.client_cp, "BenchClient", "consume", broker.addr, topic, str(expected)]
        out = subprocess.run(cmd, check=True, capture_output=True, stdin=subprocess.DEVNULL,
                             timeout=300).stdout.decode()
        got = json.loads(out.strip().splitlines()[-1])["records"]
        if got < expected:
            raise RuntimeError(f"read back {got} records from {topic}, expected {expected}")
        return got

    def create_topics(self, broker, specs):
        cmd = [self.java, "-Xmx256m", f"-Dlog4j2.configurationFile={self.a.tools_log4j}",
               "-cp", self.client_cp, "BenchClient", "create", broker.addr,
               *[f"{t}:{p}" for t, p in specs]]
        subprocess.run(cmd, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       timeout=300)


def cells(args):
    out = []
    for acks in ("1", "all"):
        for size in (100, 1024):
            for codec in ("none", "lz4"):
                for parts in (1, 8):
                    out.append({"acks": acks, "size": size, "codec": codec, "partitions": parts})
    return out


def cell_id(c):
    return f"acks{c['acks']}-{c['size']}B-{c['codec']}-{c['partitions']}p"


def records_for(args, c):
    return args.records_small if c["size"] < 1000 else args.records_large


def machine():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    with open("/proc/meminfo") as f:
        mem_kb = int(f.readline().split()[1])
    return {"cpu": cpu, "cores": os.cpu_count(), "mem_gib": round(mem_kb / 2**20, 1),
            "kernel": platform.release(), "python": platform.python_version()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--broker-bin", required=True)
    ap.add_argument("--kafka-sh", required=True)
    ap.add_argument("--java", default="java")
    ap.add_argument("--libs", required=True, help="Kafka classpath (…/kafka-libs/*)")
    ap.add_argument("--classes", required=True, help="compiled BenchClient")
    ap.add_argument("--tools-log4j", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--meta", default="{}", help="extra JSON merged into meta")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--startup-repeats", type=int, default=5)
    ap.add_argument("--records-small", type=int, default=300_000)
    ap.add_argument("--records-large", type=int, default=100_000)
    ap.add_argument("--latency-rate", type=int, default=10_000)
    ap.add_argument("--latency-records", type=int, default=50_000)
    ap.add_argument("--kafka-heap", default="-Xmx512m -Xms128m")
    ap.add_argument("--only-cells", default="", help="comma-separated cell ids (debugging)")
    ap.add_argument("--seed", type=int, default=20251129)
    ap.add_argument("--quiet-cores", type=float, default=0.3,
                    help="before each client run, wait while other processes use more CPU")
    ap.add_argument("--quiet-max-wait", type=float, default=10.0, help="seconds per run")
    ap.add_argument("--quiet-budget", type=float, default=180.0, help="seconds per bench run")
    ap.add_argument("--noisy-cores", type=float, default=0.35,
                    help="a client run during which other processes used more CPU is redone")
    ap.add_argument("--noisy-retries", type=int, default=2)
    a = ap.parse_args()

    seg = "log.segment.bytes=104857600"  # kafka.sh's value, given to both brokers
    odr = Odradek(a.broker_bin, [seg])
    kaf = Kafka(a.java, a.libs, a.tools_log4j, a.kafka_heap, [])
    started = []
    res = {
        "meta": {**machine(), **json.loads(a.meta),
                 "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                 "kafka_heap": a.kafka_heap,
                 "odradek_overrides": ["listeners=PLAINTEXT://127.0.0.1:0", "log.dirs=<fresh>", seg],
                 "kafka_config": "tests/compat/kafka.sh server.properties (mirrored)",
                 "records_small": a.records_small, "records_large": a.records_large,
                 "repeats": a.repeats, "startup_repeats": a.startup_repeats,
                 "latency_rate": a.latency_rate, "latency_records": a.latency_records,
                 "quiet": {"cores": a.quiet_cores, "max_wait_s": a.quiet_max_wait,
                           "budget_s": a.quiet_budget, "noisy_cores": a.noisy_cores,
                           "noisy_retries": a.noisy_retries},
                 "loadavg_start": open("/proc/loadavg").read().split()[:3]},
        "startup": [], "runs": [], "memory": {}, "cpu": {}, "restart_with_data": [],
    }

    def save():
        tmp = a.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(res, f, indent=1)
        os.replace(tmp, a.out)

    def handle_term(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, handle_term)
    t_begin = time.monotonic()
    try:
        # ---- 1. startup
        order = [odr, kaf]
        for rnd in range(a.startup_repeats + 1):
            for b in (order if rnd % 2 == 0 else order[::-1]):
                d = os.path.join(a.workdir, f"startup-{b.name}")
                started.append(b)
                st = b.start(d)
                mem = proc_mem_kb(b.pid)
                cpu = proc_cpu_s(b.pid)
                stop_s, rc = b.stop()
                started.remove(b)
                rec = {"broker": b.name, "round": rnd, "warmup": rnd == 0, **st, **mem,
                       "cpu_s_to_ready": cpu, "stop_s": round(stop_s, 3), "exit_code": rc}
                res["startup"].append(rec)
                log(f"startup {b.name} round {rnd}: {st} rss={mem['rss_kb']}kB stop={stop_s:.2f}s rc={rc}")
        save()

        # ---- 2. throughput
        dirs = {b.name: os.path.join(a.workdir, f"run-{b.name}") for b in order}
        for b in order:
            started.append(b)
            st = b.start(dirs[b.name])
            res["memory"][b.name] = {"start": st, "after_start": proc_mem_kb(b.pid)}
            log(f"throughput broker {b.name} up: {st}")
        time.sleep(2)
        for b in order:
            res["memory"][b.name]["after_start_2s"] = proc_mem_kb(b.pid)
            res["cpu"][b.name] = {"at_phase_start_s": proc_cpu_s(b.pid)}

        all_cells = cells(a)
        if a.only_cells:
            keep = set(a.only_cells.split(","))
            all_cells = [c for c in all_cells if cell_id(c) in keep]
        warm = [{"acks": "1", "size": 100, "codec": "none", "partitions": 8},
                {"acks": "all", "size": 1024, "codec": "lz4", "partitions": 1}]
        lat_cell = {"acks": "all", "size": 100, "codec": "none", "partitions": 1}
        topics = [(f"warm-{i}", c["partitions"]) for i, c in enumerate(warm)]
        for r in range(a.repeats):
            topics += [(f"r{r}-{cell_id(c)}", c["partitions"]) for c in all_cells]
            topics.append((f"lat-r{r}", lat_cell["partitions"]))
        runner = Runner(a, order)
        for b in order:
            t0 = time.monotonic()
            runner.create_topics(b, topics)
            res["memory"][b.name]["after_topics"] = proc_mem_kb(b.pid)
            res["memory"][b.name]["create_topics_s"] = round(time.monotonic() - t0, 3)
            log(f"{b.name}: {len(topics)} topics created")

        def record(kind, phase, rep, b, c, topic, st):
            rec = {"phase": phase, "rep": rep, "kind": kind, "broker": b.name, "cell": c,
                   "cell_id": cell_id(c), "topic": topic, **st}
            res["runs"].append(rec)
            log(f"{phase} r{rep} {kind:7s} {b.name:7s} {cell_id(c):24s} "
                f"{st['msgs_per_s']:>10.0f} msg/s {st['mb_per_s']:7.1f} MB/s "
                f"p99={st.get('lat_p99_ms', '-')} bcpu={st['broker_cpu_s']:.2f}s "
                f"other={st['other_cpu_s']:.2f}s rss={st['broker_rss_kb']}kB")

        def measure(kind, phase, rep, b, c, topic, fn):
            """Run fn; if other processes used more than --noisy-cores during it, keep the
            sample as phase "noisy" (not reported) and run again, at most --noisy-retries times.
            A retried producer run appends to the same topic (the consumer still reads the
            first N records from offset 0)."""
            for attempt in range(a.noisy_retries + 1):
                st = fn()
                st["attempt"] = attempt
                st["other_cores"] = round(st["other_cpu_s"] / max(st["wall_s"], 1e-9), 3)
                if st["other_cores"] > a.noisy_cores and attempt < a.noisy_retries:
                    record(kind, "noisy", rep, b, c, topic, st)
                    continue
                record(kind, phase, rep, b, c, topic, st)
                return st

        for i, c in enumerate(warm):  # warm-up, both brokers, not reported
            for b in order:
                st = runner.produce(b, f"warm-{i}", c, records_for(a, c))
                record("produce", "warmup", -1, b, c, f"warm-{i}", st)
                st = runner.consume(b, f"warm-{i}", st["records"])
                record("consume", "warmup", -1, b, c, f"warm-{i}", st)
        save()

        rng = random.Random(a.seed)
        flip = 0
        for r in range(a.repeats):
            seq = all_cells[:]
            rng.shuffle(seq)
            for c in seq:
                topic = f"r{r}-{cell_id(c)}"
                for b in (order if flip % 2 == 0 else order[::-1]):
                    st = measure("produce", "measure", r, b, c, topic,
                                 lambda: runner.produce(b, topic, c, records_for(a, c)))
                    n = st["records"]
                    if c["acks"] == "1":
                        measure("consume", "measure", r, b, c, topic,
                                lambda: runner.consume(b, topic, n))
                    else:  # not measured: every acknowledged record is there
                        runner.read_back(b, topic, n)
                flip += 1
            for b in (order if r % 2 == 0 else order[::-1]):
                measure("latency", "measure", r, b, lat_cell, f"lat-r{r}",
                        lambda: runner.produce(b, f"lat-r{r}", lat_cell, a.latency_records,
                                               a.latency_rate))
            save()

        # ---- 4. end of run: memory peak, CPU, per-thread CPU, restart on filled data
        for b in order:
            res["memory"][b.name]["end"] = proc_mem_kb(b.pid)
            res["cpu"][b.name]["at_phase_end_s"] = proc_cpu_s(b.pid)
            res["cpu"][b.name]["threads"] = proc_threads_cpu(b.pid)
        for b in order:
            stop_s, rc = b.stop()
            started.remove(b)
            res["memory"][b.name]["stop_s"] = round(stop_s, 3)
            res["memory"][b.name]["exit_code"] = rc
            du = subprocess.run(["du", "-sb", os.path.join(dirs[b.name], "data")],
                                capture_output=True, text=True).stdout.split()
            res["memory"][b.name]["data_bytes"] = int(du[0]) if du else None
        for b in order:
            os.sync()
            started.append(b)
            st = b.start(dirs[b.name], fresh=False)
            mem = proc_mem_kb(b.pid)
            stop_s, rc = b.stop()
            started.remove(b)
            res["restart_with_data"].append({"broker": b.name, **st, **mem,
                                             "stop_s": round(stop_s, 3), "exit_code": rc})
            log(f"restart {b.name} on filled data: {st} rss={mem['rss_kb']}kB")
    finally:
        for b in list(started):
            try:
                b.stop()
            except Exception as e:  # noqa: BLE001
                log(f"stopping {b.name}: {e}")
        res["meta"]["duration_s"] = round(time.monotonic() - t_begin, 1)
        res["meta"]["loadavg_end"] = open("/proc/loadavg").read().split()[:3]
        save()
        log(f"results in {a.out} ({res['meta']['duration_s']} s)")


if __name__ == "__main__":
    main()
