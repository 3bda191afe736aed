#!/usr/bin/env python3
"""Tables (markdown) and a chart (hand-written SVG) from a broker_vs_kafka JSON result.

    broker_vs_kafka_report.py RESULT.json [--md OUT.md] [--svg OUT.svg]

Every figure is the median over the measured repeats, with min-max in parentheses; "ratio" is
odradek / Kafka of the medians (for throughput > 1 means odradek is faster, for time, memory and
CPU < 1 means odradek uses less). Standard library only.
"""

import argparse
import json
import math
import statistics
from xml.sax.saxutils import escape

B = ("odradek", "kafka")
NAMES = {"odradek": "odradek-broker", "kafka": "Apache Kafka 4.4.0"}
COLORS = {"odradek": "#d9822b", "kafka": "#4a6fa5"}


def med(xs):
    return statistics.median(xs) if xs else None


def si(x):
    if x is None:
        return "-"
    if x == 0:
        return "0"
    a = abs(x)
    if a >= 1e6:
        return f"{x / 1e6:.2f}M"
    if a >= 1e4:
        return f"{x / 1e3:.0f}k"
    if a >= 1e3:
        return f"{x / 1e3:.1f}k"
    if a >= 100:
        return f"{x:.0f}"
    if a >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def cell(xs, fmt=si):
    """'median (min–max)' of a list."""
    if not xs:
        return "-"
    if len(xs) == 1:
        return fmt(xs[0])
    return f"{fmt(med(xs))} ({fmt(min(xs))}–{fmt(max(xs))})"


def ratio(a, b):
    if not a or not b:
        return "-"
    r = med(a) / med(b)
    return f"{r:.3f}" if r < 0.1 else f"{r:.2f}"


def mb(kb):
    return kb / 1024


def label(c):
    acks = "acks=1" if c["acks"] == "1" else "acks=all"
    size = "1 KiB" if c["size"] >= 1000 else f"{c['size']} B"
    return f"{acks}, {size}, {c['codec']}, {c['partitions']}p"


def short_label(c, with_acks=True):
    size = "1KiB" if c["size"] >= 1000 else f"{c['size']}B"
    s = f"{size} {c['codec']} {c['partitions']}p"
    return (f"acks={c['acks']} " + s) if with_acks else s


class Data:
    def __init__(self, res):
        self.res = res
        self.runs = [r for r in res["runs"] if r["phase"] == "measure"]

    def cells(self, kind):
        seen = {}
        for r in self.runs:
            if r["kind"] == kind:
                seen.setdefault(r["cell_id"], r["cell"])
        order = lambda c: (c["acks"] != "1", c["size"], c["codec"] != "none", c["partitions"])  # noqa: E731
        return sorted(seen.values(), key=order)

    def vals(self, kind, cid, broker, key):
        return [r[key] for r in self.runs
                if r["kind"] == kind and r["cell_id"] == cid and r["broker"] == broker
                and r.get(key) is not None]

    def startup(self, broker, key):
        return [s[key] for s in self.res["startup"]
                if s["broker"] == broker and not s["warmup"] and s.get(key) is not None]


def geomean_ratio(d, kind, key):
    rs = []
    for c in d.cells(kind):
        cid = "acks{}-{}B-{}-{}p".format(c["acks"], c["size"], c["codec"], c["partitions"])
        a, b = d.vals(kind, cid, "odradek", key), d.vals(kind, cid, "kafka", key)
        if a and b:
            rs.append(med(a) / med(b))
    if not rs:
        return None, None, None
    return math.exp(sum(map(math.log, rs)) / len(rs)), min(rs), max(rs)


def cid_of(c):
    return "acks{}-{}B-{}-{}p".format(c["acks"], c["size"], c["codec"], c["partitions"])


def totals(d, broker, kinds):
    cpu = sum(r["broker_cpu_s"] for r in d.runs if r["broker"] == broker and r["kind"] in kinds)
    n = sum(r["records"] for r in d.runs if r["broker"] == broker and r["kind"] in kinds)
    return cpu, n


def markdown(res):
    d = Data(res)
    m = res["meta"]
    out = []
    w = out.append

    # ---- summary
    w("| metric | odradek-broker | Apache Kafka 4.4.0 | ratio odradek/Kafka |")
    w("|---|---:|---:|---:|")
    o, k = d.startup("odradek", "ready_ms"), d.startup("kafka", "ready_ms")
    w(f"| startup: launch → ApiVersions+Metadata answered, empty data dir (ms, n={len(o)}) "
      f"| {cell(o)} | {cell(k)} | {ratio(o, k)} |")
    kf = d.startup("kafka", "format_ms")
    w(f"| Kafka storage format before launch (ms, not in the row above) | n/a | {cell(kf)} | |")
    rw = {x["broker"]: x for x in res.get("restart_with_data", [])}
    if rw:
        data = {b: res["memory"].get(b, {}).get("data_bytes") for b in B}
        w("| restart on the filled data dir, clean shutdown before (ms, n=1; data: "
          f"{(data['odradek'] or 0) / 1e9:.1f} / {(data['kafka'] or 0) / 1e9:.1f} GB) "
          f"| {si(rw['odradek']['ready_ms'])} | {si(rw['kafka']['ready_ms'])} "
          f"| {ratio([rw['odradek']['ready_ms']], [rw['kafka']['ready_ms']])} |")
    o = [mb(x) for x in d.startup("odradek", "rss_kb")]
    k = [mb(x) for x in d.startup("kafka", "rss_kb")]
    w(f"| VmRSS when ready (MB) | {cell(o)} | {cell(k)} | {ratio(o, k)} |")
    mem = res["memory"]
    if "after_topics" in mem.get("odradek", {}):
        o, k = [mb(mem["odradek"]["after_start_2s"]["rss_kb"])], [mb(mem["kafka"]["after_start_2s"]["rss_kb"])]
        w(f"| VmRSS 2 s after start, idle (MB) | {cell(o)} | {cell(k)} | {ratio(o, k)} |")
    if "end" in mem.get("odradek", {}):
        o, k = [mb(mem["odradek"]["end"]["hwm_kb"])], [mb(mem["kafka"]["end"]["hwm_kb"])]
        w(f"| peak VmHWM over the throughput phase (MB) | {cell(o)} | {cell(k)} | {ratio(o, k)} |")
        o = [mb(r["broker_rss_kb"]) for r in d.runs if r["broker"] == "odradek"]
        k = [mb(r["broker_rss_kb"]) for r in d.runs if r["broker"] == "kafka"]
        w(f"| VmRSS after each client run (MB, n={len(o)}) | {cell(o)} | {cell(k)} | {ratio(o, k)} |")
    for kind, what in (("produce", "producer msgs/s"), ("consume", "consumer msgs/s")):
        g, lo, hi = geomean_ratio(d, kind, "msgs_per_s")
        if g:
            w(f"| {what}: geometric mean of the per-scenario ratios ({len(d.cells(kind))} scenarios) "
              f"| | | {g:.2f} (per scenario {lo:.2f}–{hi:.2f}) |")
    for kinds, what in ((("produce",), "produce"), (("consume",), "consume")):
        co, no = totals(d, "odradek", kinds)
        ck, nk = totals(d, "kafka", kinds)
        if no and nk:
            w(f"| broker CPU s per million msgs, all {what} runs together "
              f"| {co / no * 1e6:.2f} | {ck / nk * 1e6:.2f} | {ratio([co / no], [ck / nk])} |")
    c = res.get("cpu", {})
    if all("at_phase_end_s" in c.get(b, {}) for b in B):
        o = [c["odradek"]["at_phase_end_s"] - c["odradek"]["at_phase_start_s"]]
        k = [c["kafka"]["at_phase_end_s"] - c["kafka"]["at_phase_start_s"]]
        w(f"| broker CPU s over the whole throughput phase (incl. warm-up and idle time) "
          f"| {cell(o)} | {cell(k)} | {ratio(o, k)} |")
    w("")

    # ---- producer
    w("**Producer** (ProducerPerformance, saturating: `--throughput -1`). msgs/s and MB/s "
      "(10^6 B of record values per second); p50/p99 are ProducerPerformance's send-to-ack "
      "latencies, which at saturation are mostly time queued in the producer; CPU is the broker "
      "process's utime+stime per million messages.")
    w("")
    w("| scenario | odradek msgs/s | Kafka msgs/s | ratio | odradek MB/s | Kafka MB/s "
      "| p50 ms odr / Kafka | p99 ms odr / Kafka | broker CPU s/M msgs odr / Kafka |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for c in d.cells("produce"):
        cid = cid_of(c)
        v = lambda b, key: d.vals("produce", cid, b, key)  # noqa: E731
        w(f"| {label(c)} | {cell(v('odradek', 'msgs_per_s'))} | {cell(v('kafka', 'msgs_per_s'))} "
          f"| {ratio(v('odradek', 'msgs_per_s'), v('kafka', 'msgs_per_s'))} "
          f"| {cell(v('odradek', 'mb_per_s'))} | {cell(v('kafka', 'mb_per_s'))} "
          f"| {cell(v('odradek', 'lat_p50_ms'))} / {cell(v('kafka', 'lat_p50_ms'))} "
          f"| {cell(v('odradek', 'lat_p99_ms'))} / {cell(v('kafka', 'lat_p99_ms'))} "
          f"| {cell(v('odradek', 'broker_cpu_s_per_million'))} / "
          f"{cell(v('kafka', 'broker_cpu_s_per_million'))} |")
    w("")

    # ---- consumer
    w("**Consumer** (bench/BenchClient.java, Java client with `assign()`, reading the topic the "
      "acks=1 producer run just filled, from offset 0 to the end).")
    w("")
    w("| scenario | odradek msgs/s | Kafka msgs/s | ratio | odradek MB/s | Kafka MB/s "
      "| broker CPU s/M msgs odr / Kafka |")
    w("|---|---:|---:|---:|---:|---:|---:|")
    for c in d.cells("consume"):
        cid = cid_of(c)
        v = lambda b, key: d.vals("consume", cid, b, key)  # noqa: E731
        w(f"| {label(c)[len('acks=1, '):]} | {cell(v('odradek', 'msgs_per_s'))} "
          f"| {cell(v('kafka', 'msgs_per_s'))} "
          f"| {ratio(v('odradek', 'msgs_per_s'), v('kafka', 'msgs_per_s'))} "
          f"| {cell(v('odradek', 'mb_per_s'))} | {cell(v('kafka', 'mb_per_s'))} "
          f"| {cell(v('odradek', 'broker_cpu_s_per_million'))} / "
          f"{cell(v('kafka', 'broker_cpu_s_per_million'))} |")
    w("")

    # ---- fixed-rate latency
    lat = d.cells("latency")
    if lat:
        c = lat[0]
        cid = cid_of(c)
        v = lambda b, key: d.vals("latency", cid, b, key)  # noqa: E731
        w(f"**Produce latency at a fixed rate** ({m.get('latency_rate')} msgs/s, "
          f"{m.get('latency_records')} records, {label(c)}; not saturated):")
        w("")
        w("| | odradek-broker | Apache Kafka 4.4.0 | ratio |")
        w("|---|---:|---:|---:|")
        for key, name in (("lat_p50_ms", "p50 ms"), ("lat_p99_ms", "p99 ms"),
                          ("lat_p999_ms", "p99.9 ms"), ("lat_avg_ms", "avg ms"),
                          ("broker_cpu_s_per_million", "broker CPU s/M msgs")):
            w(f"| {name} | {cell(v('odradek', key))} | {cell(v('kafka', key))} "
              f"| {ratio(v('odradek', key), v('kafka', key))} |")
        w("")

    # ---- noise
    other = [r["other_cpu_s"] / max(r["wall_s"], 1e-9) for r in d.runs]
    noisy = [r for r in res["runs"] if r["phase"] == "noisy"]
    waited = sum(r.get("quiet_wait_s", 0) for r in d.runs + noisy)
    q = m.get("quiet", {})
    if other:
        w(f"Noise: other processes used a median of {med(other):.2f} cores "
          f"(max {max(other):.2f}) during the reported client runs; {len(noisy)} runs during "
          f"which they used more than {q.get('noisy_cores', '?')} cores were redone (kept in the "
          f"JSON as phase \"noisy\"); the script waited {waited:.0f} s in "
          "total for the machine to go quiet before runs. Whole run "
          f"{m.get('duration_s', 0) / 60:.1f} min, load average {' '.join(m.get('loadavg_start', []))}"
          f" at the start.")
    return "\n".join(out) + "\n"


def svg(res):
    d = Data(res)
    panels = [("produce", 100, "Producer, 100 B records (ProducerPerformance)"),
              ("produce", 1024, "Producer, 1 KiB records (ProducerPerformance)"),
              ("consume", 100, "Consumer, 100 B records (Java consumer, assign())"),
              ("consume", 1024, "Consumer, 1 KiB records (Java consumer, assign())")]
    left, right, bar, gap, top = 190, 130, 9, 8, 56
    plot_w = 520
    width = left + plot_w + right
    rows = []
    y = top
    for kind, size, title in panels:
        cs = [c for c in d.cells(kind) if (c["size"] >= 1000) == (size >= 1000)]
        if not cs:
            continue
        vmax = 0
        for c in cs:
            for b in B:
                vmax = max([vmax, *d.vals(kind, cid_of(c), b, "msgs_per_s")])
        rows.append(("title", y, title, None))
        y += 22
        scale_y = y
        for c in cs:
            rows.append(("cell", y, c, (kind, vmax)))
            y += 2 * bar + gap
        rows.append(("axis", y, (kind, vmax), scale_y))
        y += 40
    height = y + 10

    def nice_max(v):
        e = 10 ** math.floor(math.log10(v))
        for m in (1, 2, 2.5, 5, 10):
            if m * e >= v:
                return m * e
        return 10 * e

    s = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
         f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Arial, sans-serif" font-size="11">',
         f'<rect width="{width}" height="{height}" fill="white"/>',
         f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="14" font-weight="bold">'
         'odradek-broker vs Apache Kafka 4.4.0: messages per second (median, whiskers min–max)</text>']
    lx = left
    for b in B:
        s.append(f'<rect x="{lx}" y="30" width="12" height="10" fill="{COLORS[b]}"/>')
        s.append(f'<text x="{lx + 16}" y="39">{escape(NAMES[b])}</text>')
        lx += 170
    s.append(f'<text x="{left + plot_w + 8}" y="39" fill="#555">ratio odr/Kafka</text>')
    for kind_, y, payload, extra in rows:
        if kind_ == "title":
            s.append(f'<text x="10" y="{y + 12}" font-weight="bold" font-size="12">{escape(payload)}</text>')
        elif kind_ == "cell":
            c, (kind, vmax) = payload, extra
            top_v = nice_max(vmax)
            xs = lambda v: left + plot_w * v / top_v  # noqa: E731
            s.append(f'<text x="{left - 6}" y="{y + bar + 4}" text-anchor="end">'
                     f'{escape(short_label(c, kind == "produce").replace("1KiB ", "").replace("100B ", ""))}</text>')
            meds = {}
            for i, b in enumerate(B):
                vs = d.vals(kind, cid_of(c), b, "msgs_per_s")
                if not vs:
                    continue
                by = y + i * bar
                meds[b] = med(vs)
                s.append(f'<rect x="{left}" y="{by}" width="{xs(med(vs)) - left:.1f}" height="{bar - 1}" '
                         f'fill="{COLORS[b]}"><title>{escape(NAMES[b])}: {si(med(vs))} msgs/s '
                         f'({si(min(vs))}–{si(max(vs))})</title></rect>')
                cy = by + (bar - 1) / 2
                s.append(f'<line x1="{xs(min(vs)):.1f}" x2="{xs(max(vs)):.1f}" y1="{cy}" y2="{cy}" '
                         'stroke="#222" stroke-width="1"/>')
                for v in (min(vs), max(vs)):
                    s.append(f'<line x1="{xs(v):.1f}" x2="{xs(v):.1f}" y1="{by + 1}" y2="{by + bar - 2}" '
                             'stroke="#222" stroke-width="1"/>')
            if len(meds) == 2:
                r = meds["odradek"] / meds["kafka"]
                col = "#1a7f37" if r >= 1.005 else ("#b42318" if r <= 0.995 else "#555")
                s.append(f'<text x="{left + plot_w + 8}" y="{y + bar + 4}" fill="{col}">{r:.2f}x</text>')
        elif kind_ == "axis":
            (kind, vmax), y0 = payload, extra
            top_v = nice_max(vmax)
            s.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y}" y2="{y}" stroke="#888"/>')
            for i in range(6):
                v = top_v * i / 5
                x = left + plot_w * i / 5
                s.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y0 - 4}" y2="{y}" stroke="#ddd"/>')
                s.append(f'<text x="{x:.1f}" y="{y + 14}" text-anchor="middle" fill="#444">{si(v)}</text>')
            s.append(f'<text x="{left + plot_w / 2}" y="{y + 28}" text-anchor="middle" fill="#444">'
                     'messages / s</text>')
    m = res["meta"]
    s.append(f'<text x="10" y="{height - 6}" fill="#777" font-size="9">{escape(m.get("cpu", ""))}, '
             f'{m.get("cores")} cores; {m.get("started", "")}; bench/broker_vs_kafka.sh</text>')
    s.append("</svg>")
    # Gridlines were appended after bars of the same panel: move them behind by drawing order.
    body = [x for x in s[3:-1] if 'stroke="#ddd"' in x]
    rest = [x for x in s[3:-1] if 'stroke="#ddd"' not in x]
    return "\n".join(s[:3] + body + rest + s[-1:]) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("json")
    ap.add_argument("--md")
    ap.add_argument("--svg")
    a = ap.parse_args()
    with open(a.json) as f:
        res = json.load(f)
    md = markdown(res)
    if a.md:
        with open(a.md, "w") as f:
            f.write(md)
    else:
        print(md)
    if a.svg:
        with open(a.svg, "w") as f:
            f.write(svg(res))


if __name__ == "__main__":
    main()
