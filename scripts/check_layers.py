#!/usr/bin/env python3
"""Checks the module layering of a Rust crate, and which crates speak raw protocol messages.

Layer mode:

    scripts/check_layers.py CRATE_SRC [LAYER ...]

reads every .rs file under CRATE_SRC (a crate's `src/`), skipping `tests.rs` files, files
declared only under `#[cfg(test)]` (`#[cfg(test)] mod x;`) and inline `#[cfg(test)]` modules,
collects every reference to another module (`use crate::a::..`, `crate::a::..` paths in code,
`super::` paths resolved against the file's own module path, grouped forms such as
`use crate::{a::X, b}`), and builds the graph of top-level modules (`src/a.rs` or `src/a/`).
Names the crate root re-exports (`pub use error::{Error, Result};` in lib.rs) count as their
module. It fails (exit 1) on a cycle, printing it with one file:line per edge, and on an edge that
goes against the LAYER order: a layer may use the layers listed before it, never those after.
Modules not listed (config, error, the assembling `broker`, ...) are only checked for cycles.
It also fails on a cycle between files (see `file_cycles`: a `mod.rs` that defines what its
children use while using them is one; re-exports alone are not).

Protocol mode:

    scripts/check_layers.py --forbid-protocol-messages CRATE_DIR [CRATE_DIR ...]

fails if any .rs file under a CRATE_DIR (target/ and node_modules/ skipped) uses
`kafka_protocol::messages` (or odradek's re-export `odradek::protocol::messages`): outside
client-core, code should go through the client's typed API.
client-core (package `odradek`) and broker-ref (package `odradek-broker`, which builds messages
as a broker must) are exempt and reported as such.

Python 3, standard library only.
"""

import os
import re
import sys

EXEMPT_PACKAGES = {"odradek", "odradek-broker"}


def strip_comments_and_strings(text):
    """Blanks out comments, string and char literals, keeping newlines (so line numbers hold)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        nxt = text[i + 1] if i + 1 < n else ""
        if c == "/" and nxt == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c == "/" and nxt == "*":
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 260]) and not _ident_before(text, i):
            m = re.match(r'r(#*)"', text[i:])
            end = text.find('"' + m.group(1), i + len(m.group(0)))
            j = n if end < 0 else end + 1 + len(m.group(1))
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(re.sub(r"[^\n]", " ", text[i:j + 1]))
            i = j + 1
        elif c == "'":
            # A char literal ('a', '\n', '\u{..}'), not a lifetime ('a).
            m = re.match(r"'(\\.[^']*|[^\\'])'", text[i:])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _ident_before(text, i):
    return i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")


def matching_brace(text, open_at):
    depth = 0
    for j in range(open_at, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(text) - 1


CFG_TEST = re.compile(r"#\[cfg\(\s*test\s*\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*([;{])")
INLINE_MOD = re.compile(r"(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*\{")


def blank_test_modules(code):
    """Blanks inline `#[cfg(test)] mod x { .. }`; returns the code and test-only `mod x;` names."""
    test_files = set()
    while True:
        m = CFG_TEST.search(code)
        if not m:
            return code, test_files
        if m.group(2) == ";":
            test_files.add(m.group(1))
            code = code[:m.start()] + re.sub(r"[^\n]", " ", code[m.start():m.end()]) + code[m.end():]
        else:
            end = matching_brace(code, m.end() - 1)
            code = code[:m.start()] + re.sub(r"[^\n]", " ", code[m.start():end + 1]) + code[end + 1:]


def module_path_of(src, path):
    """The module path of a file: src/a/b.rs -> [a, b]; src/a/mod.rs -> [a]; lib.rs -> []."""
    rel = os.path.relpath(path, src).replace(os.sep, "/")
    parts = rel[:-3].split("/")
    if parts[-1] == "mod" or (len(parts) == 1 and parts[0] in ("lib", "main")):
        parts = parts[:-1]
    return parts


def inline_module_at(code, pos):
    """Names of the inline (non-test) modules enclosing `pos`."""
    stack = []
    for m in INLINE_MOD.finditer(code, 0, pos):
        end = matching_brace(code, m.end() - 1)
        if end > pos:
            stack.append(m.group(1))
    return stack


def split_group(body):
    """Top-level comma-separated items of a `{...}` use group."""
    items, depth, cur = [], 0, []
    for ch in body:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            items.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        items.append("".join(cur).strip())
    return items


PATH_START = re.compile(r"(?<![\w:])(crate|super)\s*::")


def referenced_paths(code):
    """Yields (offset, [segments]) for each `crate::..` / `super::..` path, groups expanded."""
    for m in PATH_START.finditer(code):
        head = m.group(1)
        rest = code[m.end():]
        segments = [head]
        pos = 0
        # Further `super::` segments.
        while True:
            sm = re.match(r"\s*super\s*::", rest[pos:])
            if not sm:
                break
            segments.append("super")
            pos += sm.end()
        gm = re.match(r"\s*\{", rest[pos:])
        if gm:
            open_at = m.end() + pos + gm.end() - 1
            close = matching_brace(code, open_at)
            for item in split_group(code[open_at + 1:close]):
                first = re.match(r"\s*(\w+)", item)
                if first:
                    yield m.start(), segments + [first.group(1)]
            continue
        first = re.match(r"\s*(\w+)", rest[pos:])
        if first:
            yield m.start(), segments + [first.group(1)]


def resolve(module_path, segments):
    """The crate-absolute first segment a path names, or None for the file's own scope."""
    if segments[0] == "crate":
        return segments[1] if len(segments) > 1 else None
    base = list(module_path)
    i = 0
    while i < len(segments) and segments[i] == "super":
        if not base:
            return None
        base.pop()
        i += 1
    if i >= len(segments):
        return None
    if not base:
        return segments[i]
    return base[0]


def root_reexports(src):
    """Names the crate root re-exports, by module: `pub use error::{Error, Result};`."""
    names = {}
    for root in ("lib.rs", "main.rs"):
        path = os.path.join(src, root)
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            code = strip_comments_and_strings(f.read())
        for m in re.finditer(r"pub\s+use\s+(?:self::|crate::)?(\w+)\s*::\s*(\{[^}]*\}|\w+)", code):
            module, items = m.group(1), m.group(2).strip("{}")
            for item in items.split(","):
                item = item.strip()
                alias = re.match(r"\w+\s+as\s+(\w+)", item)
                name = alias.group(1) if alias else item
                if name:
                    names[name] = module
    return names


def collect_graph(src):
    top_modules = set()
    for entry in os.listdir(src):
        full = os.path.join(src, entry)
        if entry.endswith(".rs") and entry not in ("lib.rs", "main.rs"):
            top_modules.add(entry[:-3])
        elif os.path.isdir(full):
            top_modules.add(entry)
    reexports = root_reexports(src)
    edges = {}  # (from, to) -> "file:line"
    files = []
    for dirpath, _, filenames in os.walk(src):
        for name in sorted(filenames):
            if name.endswith(".rs"):
                files.append(os.path.join(dirpath, name))
    # Files declared `#[cfg(test)] mod x;` anywhere are test-only.
    test_only = set()
    parsed = {}
    for path in files:
        with open(path, encoding="utf-8") as f:
            code, test_mods = blank_test_modules(strip_comments_and_strings(f.read()))
        parsed[path] = code
        here = os.path.dirname(path)
        stem = os.path.basename(path)[:-3]
        child_dir = here if stem in ("mod", "lib", "main") else os.path.join(here, stem)
        for t in test_mods:
            test_only.add(os.path.join(child_dir, t + ".rs"))
            test_only.add(os.path.join(child_dir, t))
    for path in files:
        if os.path.basename(path) == "tests.rs":
            continue
        if any(path == t or path.startswith(t + os.sep) for t in test_only):
            continue
        module_path = module_path_of(src, path)
        if not module_path:
            continue  # the crate root only declares and re-exports modules
        owner = module_path[0]
        code = parsed[path]
        for offset, segments in referenced_paths(code):
            full_path = module_path + inline_module_at(code, offset)
            target = resolve(full_path, segments)
            if target is None:
                continue
            if target not in top_modules:
                target = reexports.get(target)
            if target is None or target == owner or target not in top_modules:
                continue
            line = code.count("\n", 0, offset) + 1
            edges.setdefault((owner, target), f"{os.path.relpath(path)}:{line}")
    return top_modules, edges


def find_cycles(nodes, edges):
    """(members, one cycle) for each strongly connected component of more than one module."""
    graph = {n: sorted(t for (f, t) in edges if f == n) for n in nodes}
    index, low, on_stack, stack, sccs = {}, {}, set(), [], []

    def strongconnect(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                sccs.append(set(scc))

    for n in sorted(nodes):
        if n not in index:
            strongconnect(n)
    cycles = []
    for scc in sccs:
        start = min(scc)
        # Shortest way back to `start` inside the component (breadth-first).
        prev, queue = {start: None}, [start]
        found = None
        while queue and found is None:
            v = queue.pop(0)
            for w in graph[v]:
                if w not in scc:
                    continue
                if w == start:
                    found = v
                    break
                if w not in prev:
                    prev[w] = v
                    queue.append(w)
        path = [start]
        v = found
        while v is not None and v != start:
            path.append(v)
            v = prev[v]
        path.append(start)
        cycles.append((sorted(scc), [path[0]] + list(reversed(path[1:-1])) + [start]))
    return cycles


def check_layers(src, layers):
    if not os.path.isdir(src):
        print(f"check_layers: {src} is not a directory", file=sys.stderr)
        return 2
    nodes, edges = collect_graph(src)
    unknown = [l for l in layers if l not in nodes]
    if unknown:
        print(f"check_layers: no module {', '.join(unknown)} in {src}", file=sys.stderr)
        return 2
    failed = False
    for members, cycle in find_cycles(nodes, edges):
        failed = True
        print(f"import cycle in {src}: {' -> '.join(cycle)}")
        print(f"  every dependency among {', '.join(members)}:")
        for (a, b), where in sorted(edges.items()):
            if a in members and b in members:
                print(f"  {a} -> {b}  ({where})")
    rank = {name: i for i, name in enumerate(layers)}
    for (a, b), where in sorted(edges.items()):
        if a in rank and b in rank and rank[b] > rank[a]:
            failed = True
            print(f"layer violation: {a} uses {b}, which comes after it  ({where})")
    cycles, file_edges = file_cycles(src)
    for members, cycle in cycles:
        failed = True
        print(f"file import cycle in {src}: {' -> '.join(cycle)}")
        for (a, b), where in sorted(file_edges.items()):
            if a in members and b in members:
                print(f"  {a} -> {b}  ({where})")
    if failed:
        return 1
    order = " -> ".join(layers) if layers else "(no layer order given)"
    print(f"{src}: {len(nodes)} modules, {len(edges)} dependencies, no cycles between modules or "
          f"files; layers ok: {order}")
    return 0


# ---- File level: every .rs file is a node ------------------------------------------------------


def _file_module_path(rel):
    parts = rel[:-3].split(os.sep)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return parts


def _strip_test_modules(code):
    out, i = [], 0
    pattern = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([\w:]+\))?\s+)?mod\s+\w+\s*\{")
    while True:
        m = pattern.search(code, i)
        if not m:
            out.append(code[i:])
            return "".join(out)
        out.append(code[i:m.start()])
        close = matching_brace(code, m.end() - 1)
        out.append("\n" * code.count("\n", m.start(), close + 1))
        i = close + 1


def _expand_use(body):
    """`a::b::{c, d::{e, f}}` -> [[a, b, c], [a, b, d, e], [a, b, d, f]] (aliases dropped)."""
    body = body.strip()
    m = re.match(r"^(.*?)::\{(.*)\}$", body, re.S)
    if not m:
        return [[x for x in body.split(" as ")[0].strip().split("::") if x]]
    prefix = [x for x in m.group(1).split("::") if x]
    out = []
    for item in split_group(m.group(2)):
        item = item.strip()
        if item == "self":
            out.append(prefix)
        elif item:
            out.extend(prefix + e for e in _expand_use(item))
    return out


def file_cycles(src):
    """Cycles between the files of a crate. A file depends on every file whose items it names
    (`use`, paths in code, `super::`, paths into its own child modules); a name re-exported by a
    module (`pub use x::Y`) counts as the file that defines it, so a facade `mod.rs` that
    re-exports its children does not make a cycle with them. Test files and `#[cfg(test)]`
    modules are left out."""
    files = {}
    for dirpath, _, filenames in os.walk(src):
        for fname in filenames:
            if fname.endswith(".rs"):
                path = os.path.join(dirpath, fname)
                rel = os.path.relpath(path, src)
                with open(path, encoding="utf-8") as f:
                    files[rel] = _strip_test_modules(strip_comments_and_strings(f.read()))
    mods = {tuple(_file_module_path(r)): r for r in files}

    def absolute(rel, path):
        me = _file_module_path(rel)
        if not path:
            return None
        if path[0] == "crate":
            return path[1:]
        if path[0] == "self":
            return me + path[1:]
        if path[0] == "super":
            base = list(me)
            while path and path[0] == "super":
                base, path = base[:-1], path[1:]
            return base + path
        if tuple(me + [path[0]]) in mods:
            return me + path
        return None

    reexports = {}
    for rel, code in files.items():
        for m in re.finditer(r"\bpub(?:\([\w:]+\))?\s+use\s+([^;]+);", code):
            for path in _expand_use(m.group(1)):
                target = absolute(rel, path)
                if target:
                    reexports[(rel, path[-1])] = target

    def resolve(path, depth=0):
        for k in range(len(path), -1, -1):
            owner = mods.get(tuple(path[:k]))
            if owner is None:
                continue
            if k < len(path) and depth < 16 and (owner, path[k]) in reexports:
                found = resolve(reexports[(owner, path[k])] + path[k + 1:], depth + 1)
                if found:
                    return found
            return owner
        return None

    edges = {}
    for rel, code in files.items():
        base = os.path.basename(rel)
        if base == "tests.rs" or base.endswith("_tests.rs") or base in ("test_util.rs", "test_support.rs"):
            continue
        uses = []
        for m in re.finditer(r"\buse\s+([^;]+);", code):
            uses.extend(_expand_use(m.group(1)))
        # Paths in code, whole (`a::b::{..}` and `a::b::*` prefixes are not paths of their own).
        for m in re.finditer(r"(?<![:\w])((?:crate|super|self|\w+)(?:::\w+)+)(?!\w|\s*::)", code):
            uses.append(m.group(1).split("::"))
        for path in uses:
            target = absolute(rel, path)
            dep = resolve(target) if target is not None else None
            if dep and dep != rel and dep not in ("lib.rs", "main.rs"):
                line = code.count("\n", 0, code.find("::".join(path))) + 1 if "::".join(path) in code else 0
                edges.setdefault((rel, dep), f"{rel}:{line}")
    return find_cycles(set(files), edges), edges


def package_name(crate_dir):
    path = os.path.join(crate_dir, "Cargo.toml")
    if not os.path.exists(path):
        return None
    in_package = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line.startswith("["):
                in_package = line == "[package]"
            elif in_package:
                m = re.match(r'name\s*=\s*"([^"]+)"', line)
                if m:
                    return m.group(1)
    return None


# The message types, by their crate or through odradek's re-export (`odradek::protocol::messages`).
MESSAGES = re.compile(r"(?:kafka_protocol|odradek\s*::\s*protocol)\s*::\s*messages\b")
GROUP = re.compile(r"(?:kafka_protocol|odradek\s*::\s*protocol)\s*::\s*\{")


def forbid_protocol_messages(crate_dirs):
    failed = False
    for crate_dir in crate_dirs:
        if not os.path.isdir(crate_dir):
            print(f"check_layers: {crate_dir} is not a directory", file=sys.stderr)
            return 2
        name = package_name(crate_dir)
        if name in EXEMPT_PACKAGES:
            print(f"{crate_dir}: package {name} is exempt")
            continue
        hits = []
        for dirpath, dirnames, filenames in os.walk(crate_dir):
            dirnames[:] = [d for d in dirnames if d not in ("target", "node_modules") and not d.startswith(".")]
            for fname in sorted(filenames):
                if not fname.endswith(".rs"):
                    continue
                path = os.path.join(dirpath, fname)
                with open(path, encoding="utf-8") as f:
                    code = strip_comments_and_strings(f.read())
                offsets = [m.start() for m in MESSAGES.finditer(code)]
                for g in GROUP.finditer(code):
                    close = matching_brace(code, g.end() - 1)
                    if any(re.match(r"\s*messages\b", item) for item in split_group(code[g.end():close])):
                        offsets.append(g.start())
                for off in sorted(offsets):
                    hits.append(f"{os.path.relpath(path)}:{code.count(chr(10), 0, off) + 1}")
        if hits:
            failed = True
            print(f"{crate_dir}: uses kafka_protocol::messages (go through odradek's API instead):")
            for h in hits:
                print(f"  {h}")
        else:
            print(f"{crate_dir}: no kafka_protocol::messages")
    return 1 if failed else 0


def main(argv):
    if len(argv) >= 2 and argv[0] == "--forbid-protocol-messages":
        return forbid_protocol_messages(argv[1:])
    if not argv or argv[0].startswith("-"):
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        print("usage: check_layers.py CRATE_SRC [LAYER ...] | --forbid-protocol-messages CRATE_DIR ...",
              file=sys.stderr)
        return 2
    return check_layers(argv[0], argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
