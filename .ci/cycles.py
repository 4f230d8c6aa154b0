#!/usr/bin/env python3
"""No module of the workspace's crates imports another that imports it back.

For every crate (a `src/` directory with a lib.rs or main.rs), each module file is a node; a
path `crate::a::b` or `super::x` (in `use` lines and in code, comments and strings skipped)
is an edge to the deepest module file it names. Edges between a module and its own ancestors
(a child using what its parent declares, a parent declaring its child) are not imports and are
left out. Prints every cycle (strongly connected component) and exits 1 if there is one; the
crates' dependency graph itself cannot have a cycle (cargo refuses it).

Usage: python3 .ci/cycles.py [CRATE_SRC_DIR ...]   (default: every crate of the workspace)

KNOWN lists cycles not broken yet (none since the remote source's set state moved into
remote/budget.rs and its deadline into remote/deadline.rs); a known one is printed, and any
other cycle fails.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT = ["validator/src", "gate/src", "print/src", "cli/src", "conformance/src",
           "fuzzing/src", "benches/src", "js/src", "python/src"]


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


def strip(text):
    """The code without comments and string literals."""
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'r#*"(?:.|\n)*?"#*', '""', text)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    return text


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


def main():
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
