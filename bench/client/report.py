#!/usr/bin/env python3
"""Summarise bench/client/results/producer-<date>.jsonl into the "## Producer: odradek vs
librdkafka" section of BENCHMARKS.md (that section only; the others are left as they are).

Usage: report.py RESULTS.jsonl [--benchmarks BENCHMARKS.md] [--analysis analysis.md] [--print]
"""
import argparse
import json
import re
import statistics
import sys
from pathlib import Path

HEADING = "## Producer: odradek vs librdkafka"
# Issue 21's targets against the tuned peer: throughput, and messages per CPU-second.
TARGET_ABSOLUTE = 1.2
TARGET_PER_CPU = 1.5


def load(path):
    meta, runs, storage, failed = {}, [], {}, []
    for line in Path(path).read_text().splitlines():
        if not line.strip():
            continue
        d = json.loads(line)
        if d.get("meta"):
            meta = d
        elif d.get("end"):
            meta = {**meta, **d}
        elif d.get("storage"):
            storage[(d["scenario"], d["client"])] = d["stored_bytes"] / max(1, d["value_bytes"])
        elif d.get("failed"):
            # A run that failed its checks (run.sh writes it, then stops): shown, never measured.
            failed.append(d)
        elif not d.get("warmup"):
            runs.append(d)
    meta["failed"] = failed
    return meta, runs, storage


def fmt_int(x):
    return f"{x:,.0f}"


def section(meta, runs, storage, results_name, analysis):
    scenarios = []
    for r in runs:
        if r["scenario"] not in scenarios:
            scenarios.append(r["scenario"])

    def med(scenario, client, key):
        vals = [r[key] for r in runs if r["scenario"] == scenario and r["client"] == client]
        return statistics.median(vals) if vals else float("nan"), len(vals)

    # The headline peer is librdkafka tuned for throughput, where the run measured it.
    peer = "rdkafka-tuned" if any(r["client"] == "rdkafka-tuned" for r in runs) else "rdkafka"
    # The Java client (bench/client/JavaBench.java), where the run measured it: extra columns.
    java = any(r["client"] == "java" for r in runs)
    rows, met_all = [], True
    for s in scenarios:
        first = next(r for r in runs if r["scenario"] == s)
        o_tp, n_o = med(s, "odradek", "msgs_per_s")
        r_tp, n_r = med(s, peer, "msgs_per_s")
        d_tp, _ = med(s, "rdkafka", "msgs_per_s")
        o_cpu, _ = med(s, "odradek", "cpu_us_per_msg")
        r_cpu, _ = med(s, peer, "cpu_us_per_msg")
        o_rss, _ = med(s, "odradek", "peak_rss_kb")
        r_rss, _ = med(s, peer, "peak_rss_kb")
        tp_ratio, per_cpu = o_tp / r_tp, r_cpu / o_cpu
        so, sr = storage.get((s, "odradek")), storage.get((s, peer))
        stored = f"{so:.2f} / {sr:.2f}" if so is not None and sr is not None else "?"
        met = tp_ratio >= TARGET_ABSOLUTE and per_cpu >= TARGET_PER_CPU
        met_all &= met
        rows.append(
            f"| {s} | {fmt_int(first['msgs'])} | {fmt_int(o_tp)} | {fmt_int(r_tp)} | **{tp_ratio:.2f}x** "
            f"| {o_cpu:.2f} | {r_cpu:.2f} | **{per_cpu:.2f}x** | {fmt_int(d_tp)} | {o_tp / d_tp:.2f}x "
            f"| {o_rss / 1024:.0f} / {r_rss / 1024:.0f} | {stored} | {'met' if met else 'not met'} |"
        )
        if java:
            j_tp, n_j = med(s, "java", "msgs_per_s")
            j_cpu, _ = med(s, "java", "cpu_us_per_msg")
            j_rss, _ = med(s, "java", "peak_rss_kb")
            rows[-1] += (
                f" {fmt_int(j_tp)} | {o_tp / j_tp:.2f}x | {j_cpu:.2f} | {j_cpu / o_cpu:.2f}x "
                f"| {j_rss / 1024:.0f} |" if n_j else " - | - | - | - | - |"
            )
    # How much single runs scattered around their medians (relative deviations, all groups).
    dev = {"msgs_per_s": [], "cpu_us_per_msg": []}
    for s in scenarios:
        for c in ("odradek", peer):
            for key in dev:
                vals = [r[key] for r in runs if r["scenario"] == s and r["client"] == c]
                if vals:
                    m = statistics.median(vals)
                    dev[key] += [abs(v / m - 1) for v in vals]

    def spread(key):
        d = dev[key] or [0.0]
        return f"typically {100 * statistics.median(d):.0f} %, at most {100 * max(d):.0f} %"

    repeats = min(
        (sum(1 for r in runs if r["scenario"] == s and r["client"] == c) for s in scenarios for c in ("odradek", peer)),
        default=0,
    )
    out = [
        HEADING,
        "",
        "Reproduce: `bench/client/run.sh` (unattended; builds "
        "`bench/client` — its own Cargo workspace, so the root workspace never builds librdkafka — "
        "and `odradek-broker` in release, starts one broker on an ephemeral port, writes "
        f"`bench/client/results/{results_name}` and regenerates this section with "
        f"`bench/client/report.py`; {meta.get('elapsed_s', '?')} s of measuring here after the builds).",
        "",
        "One `odradek-bench produce` process per run sends N keyless records of deterministic, "
        "text-like values (lz4 compresses them about 2x) as fast as the client accepts them and "
        "waits for every acknowledgement; a delivery failure aborts the run. odradek: "
        "`Producer::send(..).await` in a loop on a tokio runtime "
        f"({meta.get('odradek_runtime', 'multi')}-thread), delivery futures awaited by a second task "
        "(handed over in chunks of 1,024 through a bounded channel). librdkafka: `BaseProducer::send` "
        "+ `poll` (retry on QueueFull), counting delivery reports in the callback, then `flush`. "
        "Both clients: `linger.ms=5`, `batch.size=1000000`, `enable.idempotence=false`, the acks "
        "and compression of the scenario; otherwise their own defaults (librdkafka: "
        "`queue.buffering.max.messages=1000000`, `message.max.bytes=1048576` to match odradek's "
        "`max.request.size`). librdkafka runs twice per repeat: with its defaults and tuned for "
        "throughput (`batch.num.messages=1000000`, so `batch.size` alone bounds its batches as it "
        "does odradek's, and `socket.nagle.disable=true`); the ratios are against the tuned peer, "
        "the defaults' throughput is beside them. One record is produced and acknowledged before the clock starts (connection "
        "and metadata are not measured). CPU is `getrusage(RUSAGE_SELF)` of the client process "
        "(all its threads) over the measured interval; the broker's CPU is not counted. The broker "
        f"keeps its log on {meta.get('broker_data_fs', '?')}"
        + (
            " (in memory, so the kernel's writeback of the ~20 GB written per run adds no noise)"
            if meta.get("broker_data_fs") == "tmpfs"
            else ""
        )
        + ". Runs are "
        f"interleaved odradek, librdkafka, librdkafka tuned{', Java' if java else ''}, odradek, … with one warm-up round and {repeats} measured "
        "runs per client and scenario; the table shows medians (on this shared machine single runs "
        f"deviated from their median by {spread('msgs_per_s')} in throughput and by "
        f"{spread('cpu_us_per_msg')} in CPU per message, so CPU per message is the steadier "
        "measure). MB/s count value "
        "bytes (10^6 B). The broker runs on the same 2 cores as the client; the ratios are the "
        "point. Target (issue 21): odradek ≥ 1.2x the tuned librdkafka's throughput and ≥ 1.5x its "
        "messages per CPU-second.",
        "",
        f"Machine: {meta.get('nproc', '?')} vCPU {meta.get('cpu_model', '?')}, "
        f"{meta.get('mem_gib', '?')} GiB, {meta.get('kernel', 'Linux')}; {meta.get('rustc', '?')}; "
        f"librdkafka {meta.get('librdkafka', '?')} (rdkafka crate {meta.get('rdkafka_crate', '?')}, "
        f"vendored source); odradek at {meta.get('git_rev', '?')}"
        + (
            f" with {meta['git_modified_files_in_client_core_and_broker']} modified files in "
            "client-core/broker-ref"
            if meta.get("git_modified_files_in_client_core_and_broker")
            else ""
        )
        + (f"; Java client: kafka-clients {meta.get('kafka_clients', '?')} on {meta.get('java', '?')}"
           if java else "")
        + f"; run {meta.get('date', '?')}, {meta.get('elapsed_s', '?')} s of measuring; load average "
        f"{meta.get('loadavg_start', '?')} at the start, {meta.get('loadavg_end', '?')} (1/5/15 min) at "
        "the end (other jobs shared the machine; interleaving spreads their effect over both clients).",
        "",
        "| scenario | records/run | odradek msgs/s | librdkafka tuned msgs/s | throughput ratio "
        "| odradek CPU µs/msg | librdkafka tuned CPU µs/msg | msgs per CPU-s ratio "
        "| librdkafka defaults msgs/s | ratio (defaults) "
        "| peak RSS MiB (o / tuned) | stored / value bytes (o / tuned) | target |"
        + (" Java msgs/s | ratio (Java) | Java CPU µs/msg | msgs per CPU-s ratio (Java) "
           "| Java peak RSS MiB |" if java else ""),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
        + ("---:|" * 5 if java else ""),
        *rows,
        "",
        "Ratios above 1.0x favour odradek: throughput is odradek / librdkafka, messages per "
        "CPU-second is librdkafka's CPU per message / odradek's. "
        "\"stored / value bytes\" is what the broker wrote to its log for one run of each client "
        "(batch framing included) per byte of record values: about 1.1 (100 B) or 1.0 (1 KiB) "
        "uncompressed, about 0.5 when lz4 was really applied. "
        f"**Target {'met in every scenario' if met_all else 'not met in every scenario'}.**",
        "",
    ]
    if java:
        out += [
            "Java peer (the last columns; the target and headline stay against the tuned "
            "librdkafka): Apache Kafka's Java client, kafka-clients "
            f"{meta.get('kafka_clients', '?')}, driven by `bench/client/JavaBench.java` (a "
            "`KafkaProducer.send(record, callback)` loop, as Kafka's ProducerPerformance runs it, "
            "but counting every delivery report — a failed or missing one fails the run — and "
            "sending the same text-like values as odradek-bench), one JVM per run with "
            f"`{meta.get('java_opts', '?')}` (kafka-producer-perf-test.sh's heap and "
            "kafka-run-class.sh's G1 options). Settings: the ones every client gets "
            "(`linger.ms=5`, `batch.size=1000000`, `enable.idempotence=false`, the scenario's acks "
            "and compression) plus `send.buffer.bytes=-1` (the kernel's socket buffer, as the other "
            "clients use, instead of the Java client's fixed 128 KiB; PRODUCER_TUNED in "
            "JavaBench.java); `buffer.memory` (32 MiB, odradek's default too) and "
            "`max.request.size` (1 MiB, the bound the others get) keep their defaults. Each JVM "
            f"first sends min({meta.get('java_jit_warmup', '?')}, records/run) records before its "
            "clock starts (its JIT would otherwise compile the send path inside the measured "
            "interval; the measured count is the scenario's, as for every client). CPU is the "
            "JVM's utime+stime over the measured interval (/proc/self/stat: every thread, JIT "
            "compiler and GC included), peak RSS its VmHWM. Ratios above 1.0x favour odradek.",
            "",
        ]
    if meta.get("failed"):
        out += ["**Failed runs** (the run stopped at the first): "
                + "; ".join(f"{f['scenario']} {f['client']} run {f['repeat']}: "
                            f"{' '.join(str(f.get('error', '?')).split())[:300]}"
                            for f in meta["failed"]), ""]
    if analysis and Path(analysis).exists():
        out.append(Path(analysis).read_text().rstrip() + "\n")
    return "\n".join(out).rstrip() + "\n"


def splice(doc, new):
    """Replaces our section (heading to the next `## ` heading or end) or appends it."""
    lines = doc.splitlines(keepends=True)
    start = next((i for i, l in enumerate(lines) if l.rstrip() == HEADING), None)
    if start is None:
        return doc.rstrip("\n") + "\n\n" + new
    end = next((i for i in range(start + 1, len(lines)) if re.match(r"^## ", lines[i])), len(lines))
    tail = "".join(lines[end:])
    return "".join(lines[:start]) + new + ("\n" + tail if tail else "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--benchmarks")
    ap.add_argument("--analysis")
    ap.add_argument("--print", action="store_true")
    a = ap.parse_args()
    meta, runs, storage = load(a.results)
    if not runs:
        sys.exit("no measured runs in " + a.results)
    new = section(meta, runs, storage, Path(a.results).name, a.analysis)
    if a.print or not a.benchmarks:
        sys.stdout.write(new)
    if a.benchmarks:
        p = Path(a.benchmarks)
        p.write_text(splice(p.read_text(), new))


if __name__ == "__main__":
    main()
