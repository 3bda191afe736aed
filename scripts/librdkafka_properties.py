#!/usr/bin/env python3
"""Regenerates client-core/src/librdkafka_properties.tsv from librdkafka's CONFIGURATION.md.

    scripts/librdkafka_properties.py path/to/CONFIGURATION.md "v2.15.0"

Keeps the facts Odradek's configuration table needs (name, table, C/P/*, range, default, type,
the property it aliases); client-core/src/rdkafka_config.rs says what Odradek does with each.
"""
import re
import sys
from pathlib import Path

source, version = sys.argv[1], sys.argv[2]
out = [
    f"# librdkafka {version} CONFIGURATION.md (the property names, scopes, ranges, defaults and types;",
    "# regenerate with scripts/librdkafka_properties.py). Columns: table, name, C/P/*, range, default, type, alias-of.",
]
section = "global"
for line in Path(source).read_text().splitlines():
    if line.startswith("## "):
        section = "topic" if "Topic" in line else "global"
        continue
    if "|" not in line or line.startswith("Property") or line.startswith("---"):
        continue
    parts = [p.strip() for p in line.split("|")]
    if len(parts) < 6:
        continue
    name, scope, allowed, default = parts[:4]
    description = "|".join(parts[5:])
    kind = re.search(r"\*Type: ([^*]+)\*", description)
    alias = re.match(r"Alias for `([^`]+)`", description)
    out.append("\t".join([
        section, name, scope, allowed, default.replace("\t", " "),
        kind.group(1) if kind else "", alias.group(1) if alias else "",
    ]))
target = Path(__file__).resolve().parent.parent / "client-core/src/librdkafka_properties.tsv"
target.write_text("\n".join(out) + "\n")
print(f"{target}: {len(out) - 2} properties")
