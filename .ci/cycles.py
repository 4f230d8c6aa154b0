#!/usr/bin/env python3
"""No module of the workspace's crates imports another that imports it back.

For every crate (a `src/` directory with a lib.rs or main.rs), each module file is a node; a
path `crate::a::b` or `super::x` (in `use` lines and in code, comments and strings skipped)
is an edge to the deepest module file it names. Edges between a module and its own ancestors
(a child using what its parent declares, a parent declaring its child) are not imports and are
left out. Prints every cycle (strongly connected component) and exits 1 if there is one; the
crates' dependency graph itself cannot have a cycle (cargo refuses it).

Usage: python3 .ci/cycles.py [CRATE_SRC_DIR ...]   (default: every crate of the workspace)

Comments and literals are skipped by a small lexer of Rust's tokens (see `strip`), not by
regular expressions: a `//` in a string, `b'"'` or a string ending in `r` hid 9 imports and
two cycles from the regular expressions that were here before. Every run first lexes
.ci/cycles-fixture.rs, which holds each such case, and fails unless it finds exactly the
fixture's `crate::seen_*` paths.

KNOWN lists cycles not broken yet; a known one is printed, and any other cycle fails. None is
left: the core's `check -> reference -> source -> check` was broken by the leaf
validator/src/mmap.rs, the gate's `remote <-> run` by the leaf gate/src/event.rs.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT = ["validator/src", "gate/src", "print/src", "cli/src", "serve/src", "conformance/src",
           "fuzzing/src", "benches/src", "testkit/src", "js/src", "python/src"]


KNOWN: set = set()


def modules(src):
    """Module path (tuple) -> file, for every .rs file under src."""
    out = {}
    for dirpath, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), src)
            parts = rel[:-3].split(os.sep)
            if parts[-1] in ("mod", "lib", "main"):
                parts = parts[:-1]
            if parts and parts[0] == "bin":
                continue  # binaries are crates of their own
            out[tuple(parts)] = os.path.join(dirpath, f)
    return out


def ident(c):
    return c.isalnum() or c == "_"


def strip(text):
    """The code without comments and literals, lexed as Rust lexes it: line and (nested) block
    comments; string literals with their escapes (`"a \\" b"`, also `b"..."` and `c"..."`); raw
    strings (`r"..."`, `r#"..."#`, `br#"..."#`) only where an `r` starts a token (not the `r`
    that ends `"...r"` or an identifier); char and byte literals (`'"'`, `b'\\''`) told from
    lifetimes and labels (`'a`, `'static`). Each literal becomes `""` and each comment a space
    (newlines kept), so no quote or slash inside one can hide the code after it."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            out.append(" ")
            continue
        if c == "r" and (i == 0 or not ident(text[i - 1]) or (
                text[i - 1] in "bc" and (i < 2 or not ident(text[i - 2])))):
            j = i + 1
            while j < n and text[j] == "#":
                j += 1
            if j < n and text[j] == '"':
                close = '"' + "#" * (j - i - 1)
                k = text.find(close, j + 1)
                i = n if k < 0 else k + len(close)
                out.append('""')
                continue
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append('""')
            continue
        if c == "'":
            if text.startswith("\\", i + 1):
                # An escape: '\\'', '\\n', '\\x7f', '\\u{1F600}'.
                k = text.find("'", i + 3)
                i = n if k < 0 else k + 1
                out.append('""')
                continue
            if i + 2 < n and text[i + 2] == "'":
                i += 3
                out.append('""')
                continue
            # A lifetime or a label: the quote alone.
            out.append(c)
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def paths_in(code):
    """Every path that starts with crate:: or super:: (use trees expanded)."""
    out = []
    for m in re.finditer(r"\b(crate|super(?:::super)*)::((?:[A-Za-z_][A-Za-z0-9_]*::)*)(\{[^;]*?\}|[A-Za-z_][A-Za-z0-9_]*)", code):
        head, mid, tail = m.group(1), m.group(2), m.group(3)
        prefix = [head] + [p for p in mid.split("::") if p]
        if tail.startswith("{"):
            for item in re.findall(r"[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*", tail):
                out.append(prefix + item.split("::"))
        else:
            out.append(prefix + [tail])
    return out


def resolve(path, here, mods):
    """The deepest module a path names, from module `here`."""
    if path[0] == "crate":
        base = ()
        rest = path[1:]
    else:
        n = 0
        while path and path[0] in ("super",):
            n += 1
            path = path[1:]
        base = here[: max(len(here) - n, 0)]
        rest = path
    best = base if base in mods else None
    cur = base
    for p in rest:
        cur = cur + (p,)
        if cur in mods:
            best = cur
        else:
            break
    return best


def sccs(graph):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)

    sys.setrecursionlimit(10000)
    for v in list(graph):
        if v not in index:
            visit(v)
    return out


FIXTURE = os.path.join(ROOT, ".ci", "cycles-fixture.rs")


def self_test():
    """The lexer on its fixture: every `use crate::seen_*;` line found, no `hidden_*` path."""
    text = open(FIXTURE, encoding="utf-8").read()
    want = re.findall(r"^use crate::(seen_\w+);", text, flags=re.M)
    got = [p[1] for p in paths_in(strip(text)) if p[0] == "crate"]
    if not want or got != want:
        print(f"{FIXTURE}: the lexer is wrong")
        print(f"  want {want}")
        print(f"  got  {got}")
        sys.exit(1)
    print(f".ci/cycles-fixture.rs: {len(want)} imports after tricky literals and comments, "
          f"all seen, none hidden")


def main():
    self_test()
    dirs = sys.argv[1:] or [d for d in DEFAULT if os.path.isdir(os.path.join(ROOT, d))]
    bad = 0
    for d in dirs:
        src = os.path.join(ROOT, d)
        mods = modules(src)
        graph = {m: set() for m in mods}
        for m, f in mods.items():
            code = strip(open(f, encoding="utf-8").read())
            for p in paths_in(code):
                t = resolve(p, m, mods)
                if t is None or t == m:
                    continue
                # Ancestors and descendants: declarations, not imports.
                if t == m[: len(t)] or m == t[: len(m)]:
                    continue
                graph[m].add(t)
        cycles = [c for c in sccs(graph) if len(c) > 1]
        found = {(d, tuple(sorted("::".join(x) or "(root)" for x in c))) for c in cycles}
        for d_known, names in sorted(KNOWN):
            if d_known == d and (d, names) not in found:
                print(f"{d}: the known cycle {' <-> '.join(names)} is gone: drop it from KNOWN")
        for c in cycles:
            names = sorted("::".join(x) or "(root)" for x in c)
            known = (d, tuple(names)) in KNOWN
            bad += 0 if known else 1
            print(f"{d}: {'known ' if known else ''}cycle: {' <-> '.join(names)}")
        print(f"{d}: {len(mods)} modules, {sum(len(v) for v in graph.values())} imports, "
              f"{len(cycles)} cycles")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
