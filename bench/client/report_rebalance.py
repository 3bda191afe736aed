"""Summary table of one bench/client/run_rebalance.sh results file: per event and strategy,
the median [min-max] ms of each client until every partition is owned and until every
partition is fetching again, and odradek's ratio to each peer (lower is faster).

Usage: python3 report_rebalance.py RESULTS.jsonl BROKER_NAME"""

import json
import statistics
import sys

CLIENTS = (("odradek", "odradek"), ("rdkafka", "librdkafka"), ("java", "Java"))
STRATEGIES = ("range", "cooperative-sticky", "consumer")


def cell(rows, field):
    values = [r[field] for r in rows if r["covered"]]
    if not values:
        return None, "-"
    missed = len(rows) - len(values)
    text = f"{statistics.median(values):.0f} [{min(values):.0f}-{max(values):.0f}]"
    return statistics.median(values), text + (f" ({missed} missed)" if missed else "")


def main():
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    present = [(c, name) for c, name in CLIENTS if any(r["client"] == c for r in rows)]
    peers = [(c, name) for c, name in present if c != "odradek"]
    print(f"\nbroker: {sys.argv[2]}; ms from the event until every partition is owned / "
          "fetching again (median [min-max])\n")
    head = ["event", "strategy", "until"] + [name for _, name in present]
    head += [f"odradek / {name}" for _, name in peers]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * 3 + "---:|" * (len(head) - 3))
    for event in ("leave", "join"):
        for strategy in STRATEGIES:
            for field, label in (("owned_ms", "owned"), ("fetching_ms", "fetching")):
                medians, texts = {}, []
                for client, _ in present:
                    sel = [r for r in rows if r["client"] == client
                           and r["strategy"] == strategy and r["event"] == event]
                    if not sel:
                        texts.append("-")
                        continue
                    medians[client], text = cell(sel, field)
                    texts.append(text)
                if not medians:
                    continue
                ratios = []
                for client, _ in peers:
                    ours, theirs = medians.get("odradek"), medians.get(client)
                    ratios.append(f"{ours / theirs:.2f}x" if ours and theirs else "-")
                print("| " + " | ".join([event, strategy, label] + texts + ratios) + " |")


if __name__ == "__main__":
    main()
